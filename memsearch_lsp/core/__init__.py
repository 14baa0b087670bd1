"""The engine: the memory facade, its interface and result types; the concerns in sub-packages."""
