"""`memsearch-lsp doctor`'s index check: the local index (opened as every command does, or asked of the process
that owns it) or a server's collections (asked, never made)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from memsearch_lsp.config import ConfigError
from memsearch_lsp.doctor.report import NOT_LOADED, Check, Context
from memsearch_lsp.trust import hide_credentials


def check_index(ctx: Context) -> Check:
    if ctx.config is None:
        return Check("index", "skip", f"not opened: {NOT_LOADED}")
    if not ctx.memory_workspace:
        return Check("index", "skip", "no memory workspace")
    if ctx.embedder is None:  # the index's model cannot embed: opening it would only say that again
        return Check("index", "skip", "not opened: the model does not load (see the model check)")
    from memsearch_lsp.core.files import NotWritable, not_writable
    from memsearch_lsp.core.memory import INDEX_DIR, Memory
    from memsearch_lsp.core.process.owner import (
        OwnerGone,
        UntrustedOwner,
        call,
        holds_index,
        other_protocol,
        read_record,
        record_pid,
        socket_path_for,
    )
    from memsearch_lsp.core.process.protocol import speaks
    from memsearch_lsp.core.store.folder import locked_by_other

    if ctx.config.milvus.uri:
        return _remote_index(ctx)
    db = ctx.root / INDEX_DIR / "milvus.db"
    for path in (ctx.root / INDEX_DIR, db):  # what every command refuses to open, said here too
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            return Check(
                "index",
                "fail",
                f"{path} is not a folder (a file or a link): no command can open the index",
                f"remove {path} (the index is only a cache; the Markdown stays), then memsearch-lsp index",
                data={"uri": str(db)},
            )
    if not db.is_dir():
        builds_in = next(p for p in (db.parent, ctx.root) if p.exists())  # (.memsearch, or where it is made)
        if not os.access(builds_in, os.W_OK):  # (no index can be built: every command would fail to)
            shut = NotWritable(
                builds_in, OSError(errno.EROFS if os.statvfs(builds_in).f_flag & os.ST_RDONLY else errno.EACCES, "")
            )
            return Check("index", "fail", f"{shut.problem}: no index can be built", shut.fix, {"uri": str(db)})
        return Check(
            "index", "ok", "no index yet: the editor or `memsearch-lsp index` builds it", data={"uri": str(db)}
        )
    data: dict[str, Any] = {"uri": str(db)}
    try:
        record = read_record(ctx.root)
    except UntrustedOwner as exc:
        return Check("index", "fail", str(exc), f"remove {ctx.root / INDEX_DIR} (it is only a cache)", data)
    if record is not None:
        pid = record_pid(record)
        data.update(owner_pid=pid, socket=str(record["socket"]))
        try:
            if str(record["socket"]) != str(socket_path_for(ctx.root)):  # (only ever the socket this program names)
                raise UntrustedOwner(f"{record['socket']} is not the socket of this workspace's index owner")
            if not speaks(about := call(str(record["socket"]), "ping", {}, timeout=10)):  # (asked nothing more)
                if (other := other_protocol(pid, str(db), about)) is not None:
                    return Check("index", "fail", other.problem, other.fix, data)
                raise ValueError(f"pid {pid} does not answer as an owner of the index")  # (a stale record)
            status = call(str(record["socket"]), "status", {}, timeout=10)
            data.update(files=status.get("files"), chunks=status.get("chunks"))
            if damaged := _damaged(status, data):
                return damaged
            return Check(
                "index",
                "ok",
                f"{data['chunks']} chunks in {data['files']} files, served by pid {pid} on {record['socket']}",
                data=data,
            )
        except (OSError, OwnerGone, ValueError, RuntimeError) as exc:
            if isinstance(exc, OwnerGone) and (other := other_protocol(pid, str(db))) is not None:
                return Check("index", "fail", other.problem, other.fix, data)  # (one before the index lock)
            if holds_index(pid, str(db)):  # (never what the record says: its pid may be any, 1 included)
                return Check(
                    "index",
                    "fail",
                    f"pid {pid} owns the index but does not answer on {record['socket']} ({exc})",
                    f"stop process {pid} (or wait for it)",
                    data,
                )
            data["stale_record"] = True
    if locked_by_other(db):
        return Check(
            "index",
            "fail",
            f"another process holds {db} and serves no socket",
            "close the other memsearch-lsp (editor window or CLI), then try again",
            data,
        )
    try:
        with Memory(ctx.root, config=ctx.config, embedder=ctx.embedder) as memory:
            status = memory.status()
            moved, recorded = memory.store.moved_aside, memory.store.files(memory.embedder.model_name)
    except ConfigError as exc:  # a setting the index needs (not the index itself)
        return Check("index", "fail", f"cannot open {db}: {exc}", "correct or remove that setting", data)
    except Exception as exc:
        if (refused := not_writable(exc)) is not None:  # a permissions problem, not damage: nothing to reset
            fix = f"make {refused.folder} writable: {refused.fix}; no reset needed"
            return Check(
                "index", "fail", f"{refused.problem}: the index cannot be opened (it is not damaged)", fix, data
            )
        return Check(
            "index",
            "fail",
            f"cannot read {db}: {type(exc).__name__}: {exc}",
            "memsearch-lsp reset --yes (the Markdown stays), then memsearch-lsp index",
            data,
        )
    data.update(files=status["files"], chunks=status["chunks"])
    if moved is not None:
        return _moved_aside(db, moved, data)
    if damaged := _damaged(status, data):
        return damaged
    stale = " (a stale owner record will be cleaned up)" if data.get("stale_record") else ""
    if not recorded and _has_notes(ctx):
        return Check(
            "index", "ok", f"empty, not indexed yet: the editor or `memsearch-lsp index` builds it{stale}", data=data
        )
    return Check("index", "ok", f"{status['chunks']} chunks in {status['files']} files, not in use{stale}", data=data)


def _has_notes(ctx: Context) -> bool:
    """The memory holds a file with text in it (one an index records once it has read it)."""
    from memsearch_lsp.core.files import find_memory_files

    assert ctx.config is not None
    return any(f.path.stat().st_size for f in find_memory_files(ctx.root, ctx.config)[0])


def _damaged(status: dict[str, Any], data: dict[str, Any]) -> Check | None:
    """The index check's failure when the index holds damaged vectors (values changed in place in its files)."""
    count = int(status.get("damaged_vectors") or 0)
    if not count:
        return None
    said = f"{count} stored vector(s) damaged (not of unit length): searches leave them out"
    return Check("index", "fail", said, "memsearch-lsp index --force (embeds their text again)", data)


def _moved_aside(db: Path, moved: tuple[str, str], data: dict[str, Any]) -> Check:
    """Opening the local index at `db`, as every command does, moved it aside: said, never "ok 0 chunks"."""
    data["moved_to"] = str(db.with_name(moved[0])) if moved[0] else ""
    where = f"was moved aside to {data['moved_to']}" if moved[0] else "is gone"
    said = f"the index at {db} {where} because {moved[1]}; an empty one is in its place"
    if moved[0].startswith(f"{db.name}.previous-"):  # a model switch, not damage: rebuilt as any command runs
        return Check("index", "ok", f"{said}: the editor or `memsearch-lsp index` builds it", data=data)
    return Check("index", "fail", said, "memsearch-lsp index (rebuilds it from the Markdown)", data)


def _remote_index(ctx: Context) -> Check:
    """The index at milvus.uri (a Milvus server, or a local folder): opened as every command would, and what it
    holds."""
    from memsearch_lsp.core.memory import Memory
    from memsearch_lsp.core.store import is_local_uri
    from memsearch_lsp.core.store.server import ServerStore

    assert ctx.config is not None
    uri = hide_credentials(ctx.config.milvus.uri)  # (its password is never said)
    try:
        with Memory(ctx.root, config=ctx.config, embedder=ctx.embedder) as memory:
            if (
                not is_local_uri(memory.uri)
                and not ServerStore(memory.uri, memory.collection, 0, ctx.config.milvus.token).exists()
            ):
                return Check(
                    "index",
                    "ok",
                    f"no index yet on the server: the editor or `memsearch-lsp index` builds it (collection "
                    f"{memory.collection} on remote Milvus at {uri})",
                    data={"uri": uri, "collection": memory.collection},
                )  # (opening it would make its collections: doctor only reads)
            status, moved, local, db = memory.status(), memory.store.moved_aside, memory.store.is_local, memory.uri
    except Exception as exc:
        return Check(
            "index",
            "fail",
            f"cannot reach the index on remote Milvus at {uri}: {exc}",
            "check milvus.uri and milvus.token in your user settings, and that the server is up",
            data={"uri": uri},
        )
    data = {"uri": uri, "files": status["files"], "chunks": status["chunks"]}
    if moved is not None:
        return _moved_aside(Path(db), moved, data)
    where = f"in the local index at {uri}" if local else f"on remote Milvus at {uri}"
    return Check("index", "ok", f"{status['chunks']} chunks in {status['files']} files {where}", data=data)
