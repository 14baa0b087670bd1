"""Storage: Milvus by URI, the local Milvus Lite engine, the in-memory search mirror."""
