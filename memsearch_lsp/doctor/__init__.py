"""`memsearch-lsp doctor`: checks the platform, install, settings, model and index, in that order.

Each check returns a `Check`; the first failed one is the problem the CLI exits with, with its fix.
Doctor creates nothing in the workspace: no index where there is none, and a stale owner record is
reported, not removed. To report another settings file, add it to `config_sources`.
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsearch_lsp.config import (
    CONFIG_FILE,
    DEFAULT_MODEL,
    E5_MODEL,
    ENV_PREFIX,
    Config,
    ConfigError,
    ignored_workspace_keys,
    load_config,
)
from memsearch_lsp.core.onboard import NO_MEMORY, is_memory_workspace, memory_markers, platform_problem
from memsearch_lsp.version import __version__

DIST = "memsearch-lsp"
REINSTALL = "reinstall from the checkout: pipx install --force . (or python3 -m pip install --force-reinstall .)"


@dataclass(frozen=True)
class Check:
    """One line of the report: status is "ok", "fail" or "skip"."""

    name: str
    status: str
    detail: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix, "data": self.data}


@dataclass(frozen=True)
class ConfigSource:
    """One place settings come from, in order of precedence (later wins)."""

    origin: str  # "workspace file", "environment", ...
    path: str  # a file, or "" for the environment
    keys: tuple[str, ...]
    ignored: tuple[str, ...] = ()  # keys present but not applied (e.g. untrusted in a workspace file)

    def to_dict(self) -> dict[str, Any]:
        return {"origin": self.origin, "path": self.path, "keys": list(self.keys), "ignored": list(self.ignored)}


@dataclass(frozen=True)
class Report:
    root: Path
    checks: tuple[Check, ...]

    @property
    def problem(self) -> Check | None:
        return next((c for c in self.checks if c.failed), None)

    @property
    def ok(self) -> bool:
        return self.problem is None

    def to_dict(self) -> dict[str, Any]:
        problem = self.problem
        return {
            "ok": self.ok,
            "root": str(self.root),
            "version": __version__,
            "problem": None
            if problem is None
            else {"check": problem.name, "detail": problem.detail, "fix": problem.fix},
            "checks": [c.to_dict() for c in self.checks],
        }

    def describe(self) -> str:
        lines = [f"memsearch-lsp {__version__} doctor: {self.root}"]
        for c in self.checks:
            lines.append(f"  {c.status:<4}  {c.name:<9}  {c.detail}")
            if c.failed and c.fix:
                lines.append(f"{'':17}fix: {c.fix}")
        problem = self.problem
        lines.append(
            "no problems found" if problem is None else f"problem: {problem.name}: {problem.detail}\nfix: {problem.fix}"
        )
        return "\n".join(lines)


@dataclass
class _Context:
    root: Path
    embedder: Any = None  # an Embedder, given by tests or loaded by the model check
    config: Config | None = None  # None when the settings do not load
    memory_workspace: bool = False


# -- the checks, in order ---------------------------------------------------------------------------
def check_platform(ctx: _Context) -> Check:
    problem = platform_problem()
    name = f"{platform.system() or sys.platform} {platform.machine()}".strip()
    if problem:
        return Check("platform", "fail", f"{name}: not supported", "use Linux, macOS or WSL")
    return Check("platform", "ok", f"{name} (supported: Linux, macOS)")


def check_python(ctx: _Context) -> Check:
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


def check_packages(ctx: _Context) -> Check:
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


def config_sources(root: Path, env: dict[str, str] | None = None) -> list[ConfigSource]:
    """Where settings come from for `root`, lowest precedence first (defaults are not listed)."""
    sources = []
    path = root / CONFIG_FILE
    if path.is_file():
        try:
            ignored = ignored_workspace_keys(path)
        except ConfigError:  # reported by check_config when the settings load
            ignored = ()
        sources.append(ConfigSource("workspace file", str(path), _toml_keys(path), ignored))
    environ = os.environ if env is None else env
    names = tuple(sorted(k for k in environ if k.startswith(ENV_PREFIX)))
    if names:
        sources.append(ConfigSource("environment", "", names))
    return sources


def _toml_keys(path: Path) -> tuple[str, ...]:
    from memsearch_lsp.config import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    keys: list[str] = []
    for key, value in data.items():
        keys.extend(f"{key}.{k}" for k in value) if isinstance(value, dict) else keys.append(key)
    return tuple(keys)


def check_config(ctx: _Context) -> Check:
    sources = config_sources(ctx.root)
    data: dict[str, Any] = {"sources": [s.to_dict() for s in sources]}
    try:
        ctx.config = load_config(ctx.root)
    except ConfigError as exc:
        return Check("config", "fail", str(exc), "correct or remove that setting", data)
    parts = [
        f"{s.path or s.origin}: {', '.join(k for k in s.keys if k not in s.ignored) or 'no settings'}" for s in sources
    ]
    ignored = [f"{k} ({s.path or s.origin})" for s in sources for k in s.ignored]
    if ignored:
        parts.append(
            "ignored (a workspace file may not set where data, secrets or files go; set them in the user "
            "config file, MEMSEARCH_* variables or editor settings): " + ", ".join(ignored)
        )
    data["ignored"] = [k for s in sources for k in s.ignored]
    return Check(
        "config", "ok", "; ".join(parts) or "defaults (no .memsearch.toml, no MEMSEARCH_* variables)", data=data
    )


def check_workspace(ctx: _Context) -> Check:
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
    from memsearch_lsp.core.files import find_memory_files

    try:
        files = len(find_memory_files(ctx.root, config)[0])
    except Exception as exc:  # unreadable folders are reported, not fatal
        return Check("workspace", "fail", f"cannot list the memory files: {exc}", "check the folder permissions")
    return Check(
        "workspace", "ok", f"memory workspace, {files} memory files", data={"files": files, "markers": markers}
    )


def check_model(ctx: _Context) -> Check:
    config = ctx.config or Config()
    name = config.embedding.model
    data: dict[str, Any] = {"model": name}
    try:
        if name == DEFAULT_MODEL:
            from memsearch_lsp.core.embedding.onnx import ONNX_SHA256, bundled_model_dir

            data["folder"] = str(bundled_model_dir())  # checks the pinned sha256
            data["sha256"] = ONNX_SHA256
        if ctx.embedder is None:
            from memsearch_lsp.core.embedding import create_embedder

            ctx.embedder = create_embedder(
                name, batch_size=config.embedding.batch_size, threads=config.embedding.threads
            )
        started = time.perf_counter()
        vector = ctx.embedder.embed(["memsearch doctor probe"])[0]
        data["dim"], data["load_s"] = len(vector), round(time.perf_counter() - started, 2)
    except Exception as exc:
        ctx.embedder = None
        return Check(
            "model",
            "fail",
            f"{name}: {exc}",
            REINSTALL
            if name == DEFAULT_MODEL
            else f"set embedding.model to {DEFAULT_MODEL!r} or to a local model folder",
            data,
        )
    checksum = ", sha256 ok" if "sha256" in data else ""
    return Check("model", "ok", f"{name} loads ({data['dim']}-d, {data['load_s']} s{checksum})", data=data)


def check_index(ctx: _Context) -> Check:
    if not ctx.memory_workspace or ctx.config is None:
        return Check("index", "skip", "no memory workspace")
    from memsearch_lsp.core.memory import INDEX_DIR, Memory
    from memsearch_lsp.core.process.owner import OwnerGone, UntrustedOwner, call, pid_alive, read_record
    from memsearch_lsp.core.store.folder import locked_by_other

    if ctx.config.milvus.uri:
        return Check(
            "index",
            "ok",
            f"remote Milvus at {ctx.config.milvus.uri} (not contacted)",
            data={"uri": ctx.config.milvus.uri},
        )
    db = ctx.root / INDEX_DIR / "milvus.db"
    if not db.is_dir():
        return Check(
            "index", "ok", "no index yet: the editor or `memsearch-lsp index` builds it", data={"uri": str(db)}
        )
    data: dict[str, Any] = {"uri": str(db)}
    try:
        record = read_record(ctx.root)
    except UntrustedOwner as exc:
        return Check("index", "fail", str(exc), f"remove {ctx.root / INDEX_DIR} (it is only a cache)", data)
    if record is not None:
        pid = int(record.get("pid", 0) or 0)
        data.update(owner_pid=pid, socket=str(record["socket"]))
        try:
            status = call(str(record["socket"]), "status", {}, timeout=10)
            data.update(files=status.get("files"), chunks=status.get("chunks"))
            return Check(
                "index",
                "ok",
                f"{data['chunks']} chunks in {data['files']} files, served by pid {pid} on {record['socket']}",
                data=data,
            )
        except (OSError, OwnerGone, ValueError, RuntimeError) as exc:
            if isinstance(exc, UntrustedOwner) or pid_alive(pid):
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
    except Exception as exc:
        return Check(
            "index",
            "fail",
            f"cannot read {db}: {type(exc).__name__}: {exc}",
            "memsearch-lsp reset --yes (the Markdown stays), then memsearch-lsp index",
            data,
        )
    data.update(files=status["files"], chunks=status["chunks"])
    stale = " (a stale owner record will be cleaned up)" if data.get("stale_record") else ""
    return Check("index", "ok", f"{status['chunks']} chunks in {status['files']} files, not in use{stale}", data=data)


def check_mcp(ctx: _Context) -> Check:
    """The optional `mcp` extra (the MCP server for agents): reported, never a failure when absent."""
    try:
        version = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return Check(
            "mcp",
            "skip",
            "the optional mcp extra is not installed: `memsearch-lsp mcp` needs it (pip install 'memsearch-lsp[mcp]')",
            "pip install 'memsearch-lsp[mcp]'",
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


def check_language(ctx: _Context) -> Check:
    """A memory mostly not in English, embedded by the English model: say how to switch (not a failure)."""
    if not ctx.memory_workspace or ctx.config is None:
        return Check("language", "skip", "no memory workspace")
    from memsearch_lsp.core.search.language import advice, memory_shares

    shares, words = memory_shares(ctx.root, ctx.config)
    data = {"shares": {lang: round(share, 3) for lang, share in shares.items()}, "words": words}
    note = advice(ctx.root, ctx.config)
    if note:
        return Check("language", "ok", note, f'set embedding.model = "{E5_MODEL}"', data)
    top = ", ".join(f"{lang} {share:.0%}" for lang, share in list(shares.items())[:3]) or "no text yet"
    return Check("language", "ok", f"written in {top}", data=data)


CHECKS: list[Callable[[_Context], Check]] = [
    check_platform,
    check_python,
    check_packages,
    check_mcp,
    check_config,
    check_workspace,
    check_model,
    check_language,
    check_index,
]


def run_doctor(workspace: Path, embedder: Any = None) -> Report:
    """Every check, in order; a check that raises is reported as failed rather than stopping the rest."""
    root = workspace.expanduser().resolve()
    ctx = _Context(root, embedder=embedder)
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
