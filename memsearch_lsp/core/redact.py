"""What never reaches a memory file: secrets (API keys and tokens of the common providers, private key blocks,
JWTs, passwords in URLs, `NAME=value` lines whose name says secret, token or password), each replaced by a
marker naming its kind (`[redacted: aws-key]`), and `<private>...</private>` spans, removed whole.

A rule table, not a detector library: `detect-secrets` 1.5 (the best kept one on PyPI) was measured for this
(bench/README.md): it brings `requests` and `pyyaml`, scans a line at a time (a PEM block is one line to it),
reports GitHub and GitLab tokens by their prefix alone (no span to replace), misses Anthropic, Google and
today's OpenAI keys, and its keyword and URL detectors redact placeholders (`username:password@host`,
`postgres:postgres@localhost`) that the development sets hold. Each rule here names a kind, matches a span
and may leave a match alone (a placeholder, a variable, a value its own name or user name already says).
Like detect-secrets, Stripe's test-mode keys (`sk_test_`, published in Stripe's own documentation) are kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MARKER = "[redacted: {kind}]"
PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_MARKED = re.compile(r"\[redacted: [a-z0-9-]+\]")
_B64_40 = r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
# Values that stand for a secret rather than being one: a variable, a template, a placeholder word.
_PLACEHOLDER = re.compile(
    r"""^(?:[$%{<(\[].*|\*+|x+|\.+|…|
    password|passwd|pass|pwd|secret|token|changeme|change-me|example|redacted|none|null|empty|
    your[-_]?\w*|my[-_]?\w*|dummy|test|foo|bar)$""",
    re.IGNORECASE | re.VERBOSE,
)
_REFERENCE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")  # process.env.TOKEN, settings.SECRET_KEY
_RUNS = ("0123456789" * 4, "abcdefghijklmnopqrstuvwxyz")
_SECRET_WORDS = {"secret", "token", "password", "passwd", "passphrase", "pwd", "credential", "credentials"}
_KEY_OWNERS = {"api", "secret", "access", "private", "auth", "signing", "encryption", "master", "client"}


@dataclass(frozen=True)
class Rule:
    """A kind of secret: `pattern`'s group `group` is replaced; `keep(match)` True leaves a match alone."""

    kind: str
    pattern: re.Pattern[str]
    group: int = 0
    keep: Callable[[re.Match[str]], bool] | None = None


def _words(name: str) -> list[str]:
    """`OPENAI_API_KEY`, `apiKey`, `db.password` as lower-case words."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])", name)]


def _stands_in(value: str, *names: str) -> bool:
    """A value that is no secret: a placeholder, a variable, an expression, a trivial run (123456), or a word
    the setting's name (POSTGRES_PASSWORD=postgres) or the URL's user name already says."""
    low = value.lower()
    return (
        len(value) < 4
        or (value.isdigit() and len(value) < 8)
        or low in ("true", "false", "yes", "no", "on", "off")
        or bool(_PLACEHOLDER.match(value) or _MARKED.fullmatch(value) or _REFERENCE.match(value))
        or any(c in value for c in "([")
        or all(any(part in run for run in _RUNS) for part in re.findall(r"[a-z]+|[0-9]+", low) or [low])
        or any(low == n.lower() or low in _words(n) or n.lower() in low for n in names if n)
    )


def _secret_name(name: str) -> bool:
    """A setting's name that says it holds a secret: its last word is secret, token, password, ... or it
    ends in a key of that sort (API_KEY, SECRET_ACCESS_KEY, apiKey)."""
    words = _words(name)
    if not words:
        return False
    if words[-1] in _SECRET_WORDS or words[-1] in ("apikey", "secretkey", "accesskey"):
        return True
    return words[-1] == "key" and len(words) > 1 and words[-2] in _KEY_OWNERS | _SECRET_WORDS


def _mixed(value: str) -> bool:
    """A token with letters and digits (a real key), not a word or a slug."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _token(prefix: str, body: str, minimum: int) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_-]){prefix}{body}{{{minimum},}}")


RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?=\n[ \t]*\n)|\Z)",
            re.DOTALL,
        ),
    ),
    Rule("anthropic-key", _token("sk-ant-", r"[A-Za-z0-9_-]", 20)),
    Rule("openai-key", _token(r"sk-(?:proj-|svcacct-|admin-)?", r"[A-Za-z0-9_-]", 20), keep=lambda m: not _mixed(m[0])),
    Rule(
        "aws-key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ),
    Rule(  # 40 characters of base64 a little after "aws" or "secret", in mixed case with digits (a git sha is hex)
        "aws-secret",
        re.compile(rf"(?i:aws|secret)[^\n]{{0,40}}?({_B64_40})"),
        group=1,
        keep=lambda m: not (_mixed(m[1]) and m[1] != m[1].lower() and m[1] != m[1].upper()),
    ),
    Rule(
        "github-token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    ),
    Rule("gitlab-token", _token(r"gl(?:pat|dt|ptt|rt|cbt|oas|soat|ft|imt|agent)-", r"[A-Za-z0-9_-]", 20)),
    Rule("slack-token", _token(r"xox[abposre]-", r"[A-Za-z0-9-]", 10)),
    Rule("slack-webhook", re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}")),
    Rule("stripe-key", _token(r"(?:sk|rk)_live_", r"[A-Za-z0-9]", 16)),
    Rule("stripe-key", _token(r"whsec_", r"[A-Za-z0-9]", 24)),
    Rule("google-key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
    Rule("google-key", _token(r"GOCSPX-", r"[A-Za-z0-9_-]", 20)),
    Rule("google-key", _token(r"ya29\.", r"[A-Za-z0-9_-]", 20)),
    Rule("jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}")),
    Rule(
        "url-password",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}://(?P<user>[^\s:/@\"'<>]+):(?P<password>[^\s@/\"'<>]+)@"),
        group=2,
        keep=lambda m: _stands_in(m["password"], m["user"]),
    ),
    Rule(
        "secret",
        re.compile(r"(?<![\w.-])(?P<name>[A-Za-z_][\w.-]*)[ \t]*=[ \t]*(?P<q>[\"']?)(?P<value>[^\s\"'`]+)(?P=q)"),
        group=3,
        keep=lambda m: not _secret_name(m["name"]) or _stands_in(m["value"], m["name"]),
    ),
)


@dataclass(frozen=True)
class Redaction:
    """A span of the text that was (or would be) replaced, and its kind."""

    kind: str
    start: int
    end: int


def find_secrets(text: str) -> list[Redaction]:
    """The secrets in `text`, in order, none overlapping (the first rule that claims a span wins)."""
    found: list[Redaction] = []
    for rule in RULES:
        for match in rule.pattern.finditer(text):
            if rule.keep is not None and rule.keep(match):
                continue
            start, end = match.span(rule.group)
            if start < end and not any(r.start < end and start < r.end for r in found):
                found.append(Redaction(rule.kind, start, end))
    return sorted(found, key=lambda r: r.start)


def redact(text: str) -> str:
    """`text` with every secret replaced by `[redacted: <kind>]`."""
    out, last = [], 0
    for found in find_secrets(text):
        out += [text[last : found.start], MARKER.format(kind=found.kind)]
        last = found.end
    return "".join(out) + text[last:] if out else text


def without_private(text: str) -> str:
    """`text` without its `<private>...</private>` spans (one left open runs to the end)."""
    return PRIVATE.sub("", text) if "<" in text else text


def safe_text(text: str) -> str:
    """What may be written: `text` without private spans, its secrets redacted."""
    return redact(without_private(text))
