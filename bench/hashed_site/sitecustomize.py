"""Bench only: every Python process started with this folder on PYTHONPATH and BENCH_HASHED=1 (a server and the
child processes it starts to index) embeds documents with sha256-seeded vectors (bench.hashed.patch_embedder)."""

import os

if os.environ.get("BENCH_HASHED"):
    from bench.hashed import patch_embedder

    patch_embedder()
