"""Search: the dense and BM25 legs, their fusion, BM25 statistics."""
