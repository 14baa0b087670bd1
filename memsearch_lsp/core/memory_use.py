"""What a local index costs the process: freed memory handed back (Arrow's pool, the C heap), a steady
mmap threshold, pyarrow loaded without pandas. No Milvus Lite internal is touched here."""

from __future__ import annotations

import contextlib
import functools
from typing import Any


def release_unused_memory() -> None:
    """Hand freed memory back to the OS after a bulk write: Milvus Lite's Arrow pool (mimalloc) and the C
    heap keep what a large write used (~130 MB after indexing 10k chunks) although nothing holds it."""
    import sys

    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        with contextlib.suppress(Exception):
            arrow.default_memory_pool().release_unused()
    libc = _glibc()
    if libc is not None:
        with contextlib.suppress(Exception):
            libc.malloc_trim(0)


M_MMAP_THRESHOLD = -3  # glibc mallopt parameters
M_ARENA_MAX = -8


def arrow_system_pool() -> None:
    """Milvus Lite's Arrow buffers from the C heap instead of mimalloc, which kept ~35 MB of pages after a full
    index of 10k chunks although nothing held them (and peaked ~60 MB higher); the C heap is handed back by
    release_unused_memory. Arrow's C++ side reads its pool from `ARROW_DEFAULT_MEMORY_POOL` once, so it is set
    before pyarrow loads (a user's own setting wins); loaded already, pyarrow's `set_memory_pool` is the rest."""
    import os
    import sys

    if "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
        return
    import pyarrow

    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL") and pyarrow.default_memory_pool().backend_name != "system":
        pyarrow.set_memory_pool(pyarrow.system_memory_pool())


def few_heap_arenas(count: int = 2) -> None:
    """At most `count` glibc malloc arenas: each thread that allocates under contention (the writer, ONNX
    Runtime's workers) otherwise gets an arena of its own, whose freed pages fragment apart from the others'.
    Python's lock serialises most allocation anyway."""
    libc = _glibc()
    if libc is not None:
        with contextlib.suppress(Exception):
            libc.mallopt(M_ARENA_MAX, count)


def steady_mmap_threshold(size: int = 1024 * 1024) -> None:
    """Keep glibc's mmap threshold at `size`: blocks above it are mapped and unmapped on their own instead
    of left in the heap. glibc raises the threshold each time a large mapped block is freed (up to 32 MB),
    so the model load's transient tensors would later stay in the heap beside the store's buffers; fixed,
    a full index of 1k chunks peaks ~30 MB lower (bench/README.md, "Issue 17, fourth round"). At 128 KiB
    (glibc's default) the peak is ~5 MB lower still, but every medium block is mapped anew: CPU risk."""
    libc = _glibc()
    if libc is not None:
        with contextlib.suppress(Exception):
            libc.mallopt(M_MMAP_THRESHOLD, size)


@functools.cache
def _glibc() -> Any:
    """The C library on Linux (malloc_trim, mallopt), else None; looked up once (find_library runs
    `ldconfig -p`, ~1.5 ms, and release_unused_memory runs after every page of a full read)."""
    import sys

    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


class _NoPandas:
    """A meta-path finder that reports pandas missing (see arrow_without_pandas)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (not needed by the local index)", name=name)


def arrow_without_pandas() -> None:
    """Load pyarrow's dataset module with pandas reported missing. Importing it makes pyarrow probe for pandas,
    and pandas (installed with pymilvus) then costs every process with a local index ~0.5 s CPU and ~40 MB,
    though Milvus Lite never converts to pandas. pyarrow remembers the probe's answer for its implicit checks
    only: an explicit `to_pandas()` still imports pandas. No-op when pandas is already imported. Touches no
    Milvus Lite internal (pyarrow's own import-time probe; no upstream issue)."""
    import sys

    if "pandas" in sys.modules or "pyarrow.dataset" in sys.modules:
        return
    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        import pyarrow.dataset  # noqa: F401
    finally:
        sys.meta_path.remove(blocker)
