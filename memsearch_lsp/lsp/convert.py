"""Pure mappings from core data to lsprotocol types: lines, ranges, symbols, hover Markdown."""

from __future__ import annotations

import bisect
import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from memsearch_lsp.config import CLIENT_ONLY_SETTINGS, SECTIONS, settings_keys
from memsearch_lsp.core.chunks import CHUNK_ID_RE, Chunk, opens_section, valid_unicode
from memsearch_lsp.core.search.headings import display_heading
from memsearch_lsp.core.search.hybrid import Expanded, Hit


def normalize_uri(uri: str) -> str:
    """One spelling per file (`%25`, `%2F`, `..` and case of escapes decoded once, then re-encoded)."""
    if not uri.startswith("file:"):
        return uri
    if uri[:17].lower() == "file://localhost/":  # RFC 8089: the local host named (pygls reads a UNC path)
        uri = "file:///" + uri[17:]
    path = to_fs_path(uri)
    return (from_fs_path(os.path.normpath(path)) or uri) if path else uri


def uri_places(params: Any) -> list[Any]:
    """The objects of `params` holding a file URI that locates something: a text document, a workspace folder (the
    root's too), a watched file's event; each is normalised once (`file://localhost/`, `%2F`, `..`)."""
    places = [getattr(params, "text_document", None), *(getattr(params, "workspace_folders", None) or [])]
    places += getattr(params, "changes", None) or []  # didChangeWatchedFiles
    event = getattr(params, "event", None)  # didChangeWorkspaceFolders
    places += [*(getattr(event, "added", None) or []), *(getattr(event, "removed", None) or [])]
    if isinstance(getattr(params, "root_uri", None), str):
        places.append(_RootUri(params))
    return [p for p in places if isinstance(getattr(p, "uri", None), str)]


class _RootUri:
    """initialize's rootUri as a place with a `uri`."""

    def __init__(self, params: Any):
        self.params = params

    @property
    def uri(self) -> str:
        return str(self.params.root_uri)

    @uri.setter
    def uri(self, value: str) -> None:
        self.params.root_uri = value


@functools.lru_cache(maxsize=4096)
def uri_of(root: Path, source: str) -> str:
    """The URI of a memory file (cached: a workspace/symbol answer asks for each hit's, twice)."""
    return from_fs_path(str(root / source)) or f"file://{root / source}"


class LineCodec(PositionCodec):
    """pygls' position codec (its public class, as `TextDocument` takes it), counting a line in C: pygls walked the
    line character by character in Python to place each edit, 2 s a keystroke on a 5 MB line, the whole server
    waiting. The same answers in UTF-8, UTF-16 and UTF-32 (tests/unit/test_line_codec.py holds them to pygls')."""

    def __init__(self, encoding: types.PositionEncodingKind | str | None = types.PositionEncodingKind.Utf16):
        super().__init__(encoding)
        wide: dict[Any, str] = {types.PositionEncodingKind.Utf8: "utf-8", types.PositionEncodingKind.Utf32: ""}
        self.wide = wide.get(encoding, "utf-16-le")  # ("": one unit a character; any other encoding UTF-16, as pygls)
        self.size = 2 if self.wide == "utf-16-le" else 1  # bytes a unit

    def client_num_units(self, string: str) -> int:
        if not self.wide or string.isascii():
            return len(string)
        return len(string.encode(self.wide, "surrogatepass")) // self.size

    def position_from_client_units(self, lines: Sequence[str], position: types.Position) -> ServerTextPosition:
        """pygls' answer, its quirks kept (a line past the end: the last line's length in units; a character past a
        line's end: one unit before it); a position inside a character (half a surrogate pair) counts it."""
        if not lines:
            return ServerTextPosition(0, 0)
        if position.line >= len(lines):
            return ServerTextPosition(len(lines) - 1, self.client_num_units(lines[-1]))
        line = lines[position.line].replace("\r\n", "\n")
        length = self.client_num_units(line)
        wanted = length - 1 if position.character > length else position.character
        if wanted <= 0 or not self.wide or line.isascii():
            return ServerTextPosition(position.line, max(wanted, 0))
        return ServerTextPosition(position.line, self._column(line, wanted))

    def _column(self, line: str, wanted: int) -> int:
        """The characters of `line` that its first `wanted` units (0 < wanted <= its units) reach into."""
        data = line.encode(self.wide, "surrogatepass")
        end = cut = wanted * self.size
        while 0 < cut < len(data) and self._inside(data, cut):
            cut -= self.size  # (to the start of the character the cut is in)
        head = data[:cut].decode(self.wide, "surrogatepass")
        if line.startswith(head):
            return len(head) + (cut < end)
        # two lone surrogates side by side read back as one character: counted in C, a prefix at a time
        return bisect.bisect_left(range(len(line) + 1), wanted, key=lambda n: self.client_num_units(line[:n]))

    def _inside(self, data: bytes, cut: int) -> bool:
        if self.size == 1:
            return 0x80 <= data[cut] < 0xC0  # a UTF-8 continuation byte
        return 0xDC <= data[cut + 1] <= 0xDF and 0xD8 <= data[cut - 1] <= 0xDB  # a low surrogate after a high one


def num_units(codec: PositionCodec, text: str) -> int:
    """`text`'s length in the client's position encoding (pygls counts character by character in Python;
    ASCII is one unit a character in UTF-8, UTF-16 and UTF-32 alike)."""
    return len(text) if text.isascii() else codec.client_num_units(text)


def chunk_range(codec: PositionCodec, start_line: int, end_line: int, last_line: str) -> types.Range:
    """1-based inclusive lines -> an LSP range from the start of the first to the end of the last."""
    return types.Range(
        start=types.Position(line=start_line - 1, character=0),
        end=types.Position(line=end_line - 1, character=num_units(codec, last_line)),
    )


def last_line(content: str) -> str:
    return content.rsplit("\n", 1)[-1]


def expanded_range(codec: PositionCodec, chunk: Expanded | Chunk) -> types.Range:
    return chunk_range(codec, chunk.start_line, chunk.end_line, last_line(chunk.content))


def hit_range(codec: PositionCodec, hit: Hit, lines: Sequence[str] | None) -> types.Range:
    """The range ends after the chunk's last line: from `lines` (the current text) when given, else as
    indexed (`hit.last_line`); without either, at the start of the line after the chunk."""
    if lines is not None and 0 < hit.end_line <= len(lines):
        return chunk_range(codec, hit.start_line, hit.end_line, lines[hit.end_line - 1].rstrip("\r\n"))
    if lines is not None and hit.end_line > len(lines):  # the buffer is shorter than the index knows (being typed)
        last = max(len(lines), 1)
        return chunk_range(codec, min(hit.start_line, last), last, lines[-1].rstrip("\r\n") if lines else "")
    if lines is None and hit.last_line is not None:
        return chunk_range(codec, hit.start_line, hit.end_line, hit.last_line.rstrip("\r\n"))
    return types.Range(
        start=types.Position(line=hit.start_line - 1, character=0), end=types.Position(line=hit.end_line, character=0)
    )


def hit_json(root: Path, hit: Hit, rng: types.Range) -> dict[str, Any]:
    """A `memsearch/search` hit: the CLI's fields plus a uri and an LSP range."""
    data: dict[str, Any] = dict(hit.to_dict())
    data["uri"] = uri_of(root, hit.source)
    data["range"] = {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }
    return data


def symbol_name(heading: str, snippet: str) -> str:
    return heading or (snippet[:60] + ("…" if len(snippet) > 60 else "")) or "(untitled)"


def hit_symbol(root: Path, hit: Hit, rng: types.Range) -> types.WorkspaceSymbol:
    container = hit.source + (f" · {hit.date}" if hit.date else "") + (" · archived" if hit.archived else "")
    return types.WorkspaceSymbol(
        name=symbol_name(hit.heading, hit.snippet),
        kind=types.SymbolKind.String,
        location=types.Location(uri=uri_of(root, hit.source), range=rng),
        container_name=container,
    )


def flat_symbols(
    uri: str, outline: Sequence[types.DocumentSymbol], container: str | None = None
) -> list[types.SymbolInformation]:
    """The outline as SymbolInformation, parents first: for a client without hierarchical document symbols."""
    out: list[types.SymbolInformation] = []
    for symbol in outline:
        where = types.Location(uri=uri, range=symbol.range)
        out.append(
            types.SymbolInformation(name=symbol.name, kind=symbol.kind, location=where, container_name=container)
        )
        out.extend(flat_symbols(uri, symbol.children or [], symbol.name))
    return out


def document_symbols(codec: PositionCodec, chunks: Sequence[Chunk]) -> list[types.DocumentSymbol]:
    """The heading outline; the next pieces of one long section (chunks that do not open with its heading) merge back
    into its symbol, while a repeated heading (`## Monday` twice) is a symbol of its own. Names are valid Unicode (a
    buffer's lone surrogate, which strict JSON decoders refuse, is replaced; flat_symbols takes these names). Linear
    in headings: a child is appended to its parent's own list (copying the list for each one took 13 s for 32,000)."""
    roots: list[types.DocumentSymbol] = []
    stack: list[tuple[int, types.DocumentSymbol, list[types.DocumentSymbol]]] = []  # (level, symbol, its children)
    previous: Chunk | None = None
    for chunk in chunks:
        if chunk.level == 0:
            continue
        rng = expanded_range(codec, chunk)
        if (
            previous is not None
            and stack
            and previous.heading_path == chunk.heading_path
            and previous.level == chunk.level
            and stack[-1][0] == chunk.level
            and not opens_section(chunk.content, chunk.heading, chunk.level)
        ):
            symbol = stack[-1][1]
            symbol.range = types.Range(start=symbol.range.start, end=rng.end)
            _grow(stack, rng.end)
            previous = chunk
            continue
        while stack and stack[-1][0] >= chunk.level:
            stack.pop()
        heading_line = chunk.content.split("\n", 1)[0]
        children: list[types.DocumentSymbol] = []
        symbol = types.DocumentSymbol(
            name=valid_unicode(display_heading(chunk.heading, chunk.content)) or "(untitled)",
            kind=types.SymbolKind.Namespace if chunk.level == 1 else types.SymbolKind.String,
            range=rng,
            selection_range=types.Range(
                start=rng.start, end=types.Position(line=rng.start.line, character=num_units(codec, heading_line))
            ),
            detail=f"h{chunk.level}",
            children=children,
        )
        (stack[-1][2] if stack else roots).append(symbol)
        _grow(stack, rng.end)
        stack.append((chunk.level, symbol, children))
        previous = chunk
    return roots


def _grow(stack: list[tuple[int, types.DocumentSymbol, list[types.DocumentSymbol]]], end: types.Position) -> None:
    """Parents span their children."""
    for _, parent, _ in stack:
        if (end.line, end.character) > (parent.range.end.line, parent.range.end.character):
            parent.range = types.Range(start=parent.range.start, end=end)


def id_at(line: str, column: int) -> str | None:
    """The chunk id (16 hex characters) under a UTF-32 column, if any."""
    for match in CHUNK_ID_RE.finditer(line):
        if match.start() <= column <= match.end():
            return match.group(0)
    return None


def chunk_markdown_hover(root: Path, chunk: Expanded) -> str:
    link = f"{uri_of(root, chunk.source)}#L{chunk.start_line}"
    head = f"**{chunk.heading or '(preamble)'}** · [{chunk.source}:{chunk.start_line}-{chunk.end_line}]({link})"
    if chunk.date:
        head += f" · {chunk.date}"
    return f"{head}  \n`{chunk.id}`\n\n---\n\n{chunk.content}\n"


def heading_markdown_hover(root: Path, chunk: Chunk, related: Sequence[Hit]) -> str:
    lines = [
        f"**{display_heading(chunk.heading, chunk.content) or '(preamble)'}** · `{chunk.id}`",  # (as its symbol)
        "",
        f"- source: `{chunk.source}` lines {chunk.start_line}-{chunk.end_line}",
        f"- section: {' › '.join(chunk.heading_path) or '(preamble)'}",
        f"- {len(chunk.content)} characters" + (f" · logged {chunk.date}" if chunk.date else ""),
        "",
    ]
    if related:
        lines.append("**Related memories**")
        lines.append("")
        for hit in related:
            link = f"{uri_of(root, hit.source)}#L{hit.start_line}"
            lines.append(
                f"- [{hit.heading or hit.source}]({link}) · `{hit.source}:{hit.start_line}` "
                f"({hit.score:.2f}{', archived' if hit.archived else ''}): {hit.snippet[:120]}"
            )
    else:
        lines.append("_No related memories in other files._")
    return "\n".join(lines) + "\n"


def options_from(params: Any) -> dict[str, Any]:
    """initializationOptions or settings: `{memsearch: {...}}`, or the section itself when a key is one of ours (a
    misspelt one beside it is then said); a client's whole configuration (eglot's `{"pylsp": {...}}`) holds none: {}."""
    if not isinstance(params, dict):
        return {}
    inner = params.get("memsearch")
    if isinstance(inner, dict):
        return dict(inner)
    return dict(params) if any(str(key).split(".")[0] in _OURS for key in params) else {}


_OURS = {key.split(".")[0] for key in [*settings_keys(), *CLIENT_ONLY_SETTINGS]} | {*SECTIONS, "show_notifications"}


def command_arguments(command: str, args: Sequence[Any], usage: str, most: int, keys: Sequence[str] = ()) -> Any:
    """The first argument of `command` (None without one). A client's slip is never ignored (a misspelt `dryRun`
    applied the plan): more than `most` arguments, or, with `keys`, a first argument that is not an object of those
    keys, is a ValueError (InvalidParams) saying `usage`."""
    if len(args) > most:
        raise ValueError(f"{command} takes {usage} (got {len(args)} arguments)")
    first = args[0] if args else None
    if keys and args:
        if not isinstance(first, dict):  # (null too: never "no options")
            raise ValueError(f"{command} takes {usage}")
        unknown = [key for key in first if key not in keys]
        if unknown:
            raise ValueError(f"{command}: no option {unknown[0]!r:.40}; it takes {', '.join(keys)}")
    return first
