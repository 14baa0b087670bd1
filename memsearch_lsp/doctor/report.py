"""The doctor's report: one `Check` per line, and the `Report` the CLI prints (text, or JSON whose failure is
the `{"error": {"message", "hint"}}` object every command answers with, beside the checks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsearch_lsp.trust import hide_credentials
from memsearch_lsp.version import __version__

NOT_LOADED = "the settings do not load (see the config check)"  # why a check that needs them is skipped


@dataclass(frozen=True)
class Check:
    """One line of the report: status is "ok", "fail" or "skip"."""

    name: str
    status: str
    detail: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:  # (a URL's password, in an endpoint's or a server's error, is never said)
        for name in ("detail", "fix", "data"):
            object.__setattr__(self, name, _hidden(getattr(self, name)))

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix, "data": self.data}


def _hidden(value: Any) -> Any:
    if isinstance(value, str):
        return hide_credentials(value)
    if isinstance(value, dict):
        return {k: _hidden(v) for k, v in value.items()}
    return [_hidden(v) for v in value] if isinstance(value, (list, tuple)) else value


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
        """`{ok, root, version, checks}`, and with a problem the first one as `error: {message, hint}`."""
        data: dict[str, Any] = {
            "ok": self.ok,
            "root": str(self.root),
            "version": __version__,
            "checks": [c.to_dict() for c in self.checks],
        }
        problem = self.problem
        if problem is not None:
            data["error"] = {"message": f"{problem.name}: {problem.detail}", "hint": problem.fix}
        return data

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
class Context:
    """What the checks learn, in order, for the ones after them."""

    root: Path
    embedder: Any = None  # an Embedder, given by tests or loaded by the model check
    config: Any = None  # the Config in effect; None when the settings do not load
    memory_workspace: bool = False
    unreachable: set[str] = field(default_factory=set)  # settings sections whose endpoint did not answer
