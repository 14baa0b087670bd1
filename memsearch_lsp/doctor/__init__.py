"""`memsearch-lsp doctor`: checks the platform, install, settings (doctor/settings.py: every source, the endpoints),
model and index, in that order.

Each check returns a `Check` (doctor/report.py); the first failed one is the problem the CLI exits with, with
its fix. Doctor creates nothing in the workspace nor on a server: no index where there is none, and a stale owner
record is reported, not removed.
"""

from __future__ import annotations

import dataclasses
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
from memsearch_lsp.doctor.index import check_index
from memsearch_lsp.doctor.report import NOT_LOADED, Check, Context, Report
from memsearch_lsp.doctor.settings import ConfigSource, check_config, check_endpoints, config_sources
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
