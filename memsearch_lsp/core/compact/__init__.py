"""Compaction: the plan, the summarisers, applying a plan to the files."""
