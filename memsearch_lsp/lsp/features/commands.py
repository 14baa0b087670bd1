"""workspace/executeCommand: memsearch.search, .expand, .reindex, .today and .status."""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from memsearch_lsp.core.files import NotWritable
from memsearch_lsp.core.index import IndexStats
from memsearch_lsp.core.onboard import NO_MEMORY
from memsearch_lsp.lsp import convert
from memsearch_lsp.lsp.features.hover import find_chunk
from memsearch_lsp.lsp.features.symbols import located, param, search_all, search_filters, top_k_of
from memsearch_lsp.lsp.server import MemsearchServer  # pygls reads command handlers' type hints
from memsearch_lsp.trust import hide_credentials
from memsearch_lsp.version import __version__

FILTERS = ("since", "until", "source", "archived", "scope")  # memsearch.search's third argument (as memsearch/search)


class CommandError(ValueError):
    """Bad command arguments; returned to the client as a JSON-RPC error."""


def root_argument(options: dict[str, Any]) -> str:
    """A command's `{"root": path or URI}`: a folder of the workspace or a file in one ("": none)."""
    where = param(options, "root", default="")
    if not isinstance(where, str):
        raise ValueError("root must be a path or a file: URI")
    return where


def register(server: MemsearchServer) -> None:
    @server.command("memsearch.search")
    async def search(ls: MemsearchServer, *args: Any) -> list[dict[str, Any]]:
        if not args or not isinstance(args[0], str):
            raise CommandError("memsearch.search needs a query string")
        convert.command_arguments("memsearch.search", args, "[query, topK?, filters?]", 3)
        top_k = top_k_of(args[1]) if len(args) > 1 else None
        limit = top_k or max((r.config.search.top_k for r in ls.roots.values()), default=3)
        # a third argument: {"since", "until", "source", "archived", "scope"} (as memsearch/search takes them)
        if len(args) > 2 and not isinstance(args[2], dict):
            raise CommandError(
                "memsearch.search: the third argument is the filters, {since, until, source, archived, scope}"
            )
        convert.command_arguments(
            "memsearch.search", args[2:], "filters {since, until, source, archived, scope}", 1, FILTERS
        )
        filters = search_filters(args[2]) if len(args) > 2 else {}
        scope = param(args[2], "scope", default="all") if len(args) > 2 else "all"
        pairs = await search_all(ls, args[0], limit, str(scope), **filters)
        return [convert.hit_json(root.path, hit, rng) for root, hit, rng in located(ls, pairs)]

    @server.command("memsearch.expand")
    async def expand(ls: MemsearchServer, *args: Any) -> dict[str, Any]:
        if not args or not isinstance(args[0], str):
            raise CommandError("memsearch.expand needs a chunk id")
        convert.command_arguments("memsearch.expand", args, '[chunkId] or [chunkId, {"root": path or URI}]', 2)
        if len(args) > 1:  # the folder it was read in (its id may be another folder's too: two worktrees)
            convert.command_arguments("memsearch.expand", args[1:], '{"root": path or URI}', 1, ("root",))
        where = root_argument(args[1]) if len(args) > 1 else ""
        found = await find_chunk(ls, args[0].strip().lower(), ls.root_holding(where) if where else None)
        if found is None:
            raise CommandError(
                f"memsearch.expand: no chunk with id {args[0]!r:.80} (ids come from memsearch.search; the files may "
                "have changed since)"
            )
        root, chunk = found
        data: dict[str, Any] = dict(chunk.to_dict())
        data["uri"] = convert.uri_of(root.path, chunk.source)
        rng = convert.expanded_range(ls.workspace.position_codec, chunk)
        data["range"] = {
            "start": {"line": rng.start.line, "character": rng.start.character},
            "end": {"line": rng.end.line, "character": rng.end.character},
        }
        return data

    @server.command("memsearch.reindex")
    async def reindex(ls: MemsearchServer, *args: Any) -> dict[str, Any]:
        usage = '[] or [{"force": true}]'
        options = convert.command_arguments("memsearch.reindex", args, usage, 1, ("force", "planId"))
        force = param(options, "force", default=False)
        if not isinstance(force, bool):
            raise CommandError(f"memsearch.reindex: force must be true or false (got {force!r:.40})")
        total = IndexStats()
        for root in list(ls.roots.values()):
            stats = await ls.reconcile(root, force=force, title="Re-indexing memory")
            for name in (
                "files_added",
                "files_modified",
                "files_removed",
                "files_total",
                "chunks_total",
                "chunks_embedded",
                "chunks_reused",
                "seconds",
            ):
                setattr(total, name, getattr(total, name) + getattr(stats, name))
            total.skipped += stats.skipped
            total.warnings += stats.warnings
        if isinstance(plan_id := param(options, "planId", default=None), str):  # (run after a compaction's edit)
            from memsearch_lsp.lsp.features.actions import check_applied

            check_applied(ls, plan_id)
        return total.to_dict()

    @server.command("memsearch.today")
    async def today(ls: MemsearchServer, *args: Any) -> dict[str, Any]:
        """Today's log of the first root, or of the one holding `{"root": path or URI}` (or that path or URI alone:
        the editor's folder)."""
        first = convert.command_arguments("memsearch.today", args, '[], [{"root": path or URI}] or [path or URI]', 1)
        if isinstance(first, dict):  # (a path or URI alone too)
            convert.command_arguments("memsearch.today", [first], '{"root": path or URI}', 1, ("root",))
        where = root_argument(first if isinstance(first, dict) else {"root": first})
        root = ls.root_holding(where) if where else next(iter(ls.roots.values()), None)
        if root is None:
            raise CommandError(f"{NO_MEMORY} in {where or 'a workspace folder'}")
        try:
            path = await ls.read(root.memory.today)
        except OSError as exc:  # (a read-only memory folder, a folder in the log's place: said in one line)
            said = str(exc) if isinstance(exc, NotWritable) else f"{exc.filename}: {exc.strerror or exc}"
            raise JsonRpcException(f"cannot create today's log: {said}", types.LSPErrorCodes.RequestFailed) from exc
        return {"uri": convert.uri_of(root.path, root.memory.source_of(path)), "path": str(path)}

    @server.command("memsearch.status")
    async def status(ls: MemsearchServer, *args: Any) -> dict[str, Any]:
        convert.command_arguments("memsearch.status", args, "no arguments", 0)
        roots = []
        for root in list(ls.roots.values()):
            try:
                data: dict[str, Any] = (
                    await ls.read(root.memory.status) if root.ready.is_set() else {"root": str(root.path)}
                )
            except Exception as exc:
                if not any(r is root for r in ls.roots.values()):
                    continue  # its folder was removed (and its index closed) while we asked
                data = {"root": str(root.path), "error": hide_credentials(str(exc))}  # (what a user asks status for)
            data["indexing"] = not root.ready.is_set()
            data["root_uri"] = convert.uri_of(root.path, "")
            roots.append(data)
        return {"version": __version__, "roots": roots, "index_passes": ls.passes}
