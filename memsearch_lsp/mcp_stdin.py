"""What the MCP server reads from its client: each stdin line made one the `mcp` SDK answers (a lone surrogate, params
that are no object, a batch), put between the client and the SDK's reader (no `mcp` import here)."""

from __future__ import annotations

import json
import os
import re
import threading
from typing import Any

from memsearch_lsp.core.chunks import valid_unicode

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_ODD_START = re.compile(rb"^\s*\[")  # a batch


def valid_message(line: bytes) -> bytes:
    """One client line as lines the SDK answers. The SDK's parser drops, without a reply (the client would wait
    forever), a message with a lone surrogate in a string ("\\ud800": replaced), a request whose params are no
    object (`[1, 2]`: sent as an object the SDK answers with -32602, for that id) and a batch (MCP has none since
    2025-06-18: its messages are sent one by one, each answered)."""
    if not (_SURROGATE_ESCAPE.search(line) or _ODD_START.match(line) or b'"params"' in line):
        return line
    try:
        message = json.loads(line)
    except ValueError:
        return line  # not JSON: nothing to answer (no id can be read)
    if isinstance(message, dict) and isinstance(message.get("params", {}), dict) and not _SURROGATE_ESCAPE.search(line):
        return line  # (as it came: the usual case)

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return valid_unicode(value)
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        return value

    def request(value: Any) -> Any:
        if isinstance(value, dict) and "params" in value and not isinstance(value["params"], dict):
            return dict(value, params={"invalid": value["params"]})  # (no parameter of any method is so named)
        return value

    messages = message if isinstance(message, list) else [message]
    return b"".join(json.dumps(request(clean(m))).encode() + b"\n" for m in messages)


def filter_stdin() -> None:
    """Put `valid_message` between the client and the SDK's reader: fd 0 becomes a pipe that a thread fills with the
    client's lines, cleaned; the pipe ends when the client closes its end."""
    client = os.dup(0)
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)

    def pump() -> None:
        with os.fdopen(client, "rb") as source, os.fdopen(write_end, "wb") as sink:
            for line in source:
                sink.write(valid_message(line))
                sink.flush()

    threading.Thread(target=pump, name="memsearch-mcp-stdin", daemon=True).start()
