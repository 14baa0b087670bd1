"""What a workspace file may not set: the trust rules for `.memsearch.toml`, which comes with a cloned repository.

Settings that send data or secrets somewhere, or read files outside the workspace, are the user's: the
user config file, MEMSEARCH_* environment variables, editor settings and API arguments set them; a
workspace file that does gets one warning naming them (config.py), and they are ignored.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

#: Settings only the user sets (where data, secrets or the index go: a collection name picks which collection of the
#: user's Milvus server the index takes).
USER_ONLY_KEYS = frozenset(
    {
        "milvus.uri",
        "milvus.token",
        "milvus.collection",
        "compact.base_url",
        "compact.api_key_env",
        "compact.model",  # (for the `openai` summariser only, the user's: the model their key pays for)
        "embedding.base_url",
        "embedding.api_key_env",
    }
)
#: Values a workspace file may not choose: sending the memory to an endpoint (to embed it or to summarise it), or
#: downloading a model (fastembed's catalog), is the user's call.
USER_ONLY_VALUES = frozenset(
    {("embedding.provider", "openai"), ("embedding.provider", "fastembed"), ("compact.summarizer", "openai")}
)
#: A workspace file's choice of embedding model applies to a local provider only (the bundled models, a model folder
#: inside the workspace): with the user's `openai` or `fastembed` provider the model is what their endpoint charges
#: for or what fastembed downloads, so the user's own choice stays (config/layers.py, one warning).
PROVIDER_BOUND_KEYS = frozenset({"embedding.model", "embedding.query_model", "embedding.dimensions"})
LOCAL_PROVIDERS = ("bundled", "onnx")
#: Paths a workspace file may set only to a place inside the workspace (absolute or escaping: ignored).
WORKSPACE_PATH_KEYS = frozenset({"compact.prompt_file", "embedding.model"})


def editor_key(key: str) -> str:
    """A setting's name as editors spell it, snake_case -> camelCase ('embedding.batch_size' -> 'embedding.batchSize');
    a camelCase name stays as it is."""
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), key)


_KEYS = frozenset(editor_key(k) for k in USER_ONLY_KEYS)
_VALUES = frozenset((editor_key(k), v) for k, v in USER_ONLY_VALUES)
_PATHS = frozenset(editor_key(k) for k in WORKSPACE_PATH_KEYS)
PROVIDER_BOUND = frozenset(editor_key(k) for k in PROVIDER_BOUND_KEYS)
#: Those keys and the keys of those values, as editors spell them (VS Code's `machine` scope): the user's alone, so a
#: workspace folder's own editor settings never change them (lsp/features/settings.py: the window's apply).
USER_ONLY_SETTINGS = _KEYS | frozenset(key for key, _ in _VALUES)


def untrusted(key: str, value: Any, root: Path) -> bool:
    """True for a setting a workspace file at `root` may not make; `key` dotted, as editors spell it
    (`embedding.baseUrl`)."""
    if key in _KEYS or (isinstance(value, str) and (key, value.strip().lower()) in _VALUES):
        return True
    if key in _PATHS and isinstance(value, str) and value:
        target = Path(value).expanduser()
        target = target if target.is_absolute() else root / target
        try:
            target.resolve().relative_to(root.resolve())
        except (ValueError, OSError, RuntimeError):
            return True
    return False


# a URL's password (`http://user:secret@host`, `postgres://app:p@ss/w@db`): all to the last @ of the word (at most
# 1 KB on: linear), more hidden rather than a secret shown; a port (`host:443/@types`, `:8080/@alice`) is none
_URL_PASSWORD = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]{1,30}://[^\s:/?#@]{0,256}:)(?!\d{1,5}(?:[/?#\s]|$))\S{0,1024}@")


# a URL's query value whose name says a credential (`?api_key=...`, `&access_token=`, `&sig=`, `X-Amz-Signature=`)
_QUERY_CREDENTIAL = re.compile(
    r"(?i)([?&;#][\w.-]{0,64}?(?:api_?key|key|token|secret|passw(?:or)?d|pwd|pass|sig|signature|auth|"
    r"authorization|credentials?|session)=)"  # (any prefix: access_token, accessToken, X-Amz-Signature; a fragment's)
    r"(?!\*\*\*)(?:[^\s&#;,)\"'<>`]|,(?=[^\s&#;,)\"'<>`]))+"  # (a comma inside the value; one a sentence puts after it)
)


def hide_credentials(text: str) -> str:
    """`text` with the password of every URL in it hidden (`http://root:***@host`), and each value of its query whose
    name says a credential (`?api_key=***`): what the user set in `milvus.uri` or a `base_url` is said in errors and
    logs, never its secret."""
    if "://" not in text:
        return text
    return _QUERY_CREDENTIAL.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", text))


class HidingFormatter(logging.Formatter):
    """A log line, its traceback too, with the password of every URL in it hidden (hide_credentials)."""

    def format(self, record: logging.LogRecord) -> str:
        return hide_credentials(super().format(record))
