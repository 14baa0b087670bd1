"""The dimension an index is opened with: the embedder's own when it knows it; else the one recorded for its model in
a file of the private index folder (`dimension-<collection>.txt`: the model's stored name, then the dimension),
written at an endpoint's first answer. A recorded one is taken at once, so no command and no search of a complete
index waits on an endpoint that hangs (search then ranks by BM25 alone and says so); the endpoint's first answer
checks it (openai.py `OpenAIEmbedder.dim_record`): vectors of another dimension are refused and the record follows
the endpoint, so the next open moves the index built for the old dimension aside and builds it again."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memsearch_lsp.core.files import folder_fd, read_file, write_file

if TYPE_CHECKING:
    from memsearch_lsp.core.embedding import Embedder


@runtime_checkable
class ChecksRecord(Protocol):
    """An embedder that checks a recorded dimension against its first answer (openai.py)."""

    dim_record: Path | None  # the record `dim` was read from, until an answer confirms it


def probed_dim(embedder: Embedder, record: Path, stored: int = 0) -> int:
    """The embedder's dimension: known; recorded in `record` for this model (then checked by the endpoint's first
    answer, where the embedder can: `dim_record`), unless the index on disk holds vectors of another (`stored`: a
    wrong record would have a sound index moved aside); else probed (an endpoint's first answer, its EmbeddingError
    when it fails) and recorded."""
    if embedder.dim:
        return embedder.dim
    known = recorded_dim(record, embedder.model_name)
    if known and stored in (0, known):
        embedder.dim = known
        if isinstance(embedder, ChecksRecord):
            embedder.dim_record = record
        return known
    embedder.embed(["dimension probe"])
    record_dim(record, embedder.model_name, embedder.dim)
    return embedder.dim


def recorded_dim(record: Path, model_name: str) -> int:
    """The dimension `record` holds for `model_name`; 0 when it holds none (no file, another model, unreadable)."""
    try:
        with folder_fd(record.parent) as fd:
            model, _, dim = read_file(fd, record.name, 4096).decode("utf-8").strip().partition("\n")
        return max(int(dim), 0) if model == model_name else 0
    except (OSError, ValueError):
        return 0


def record_dim(record: Path, model_name: str, dim: int) -> None:
    """Keep `dim` as `model_name`'s dimension in `record` (nothing when the folder cannot take it)."""
    with contextlib.suppress(OSError), folder_fd(record.parent) as fd:
        write_file(fd, record.name, f"{model_name}\n{dim}\n".encode())
