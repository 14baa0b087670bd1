"""Processes: one owner per index, its socket and its client, long-lived memories."""
