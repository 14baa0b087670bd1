"""Keys and tokens of the known providers, found by their prefixes and shapes (core/redact's rules begin with these:
the most specific kind wins)."""

from __future__ import annotations

import re

from memsearch_lsp.core.redact.rule import Rule, token
from memsearch_lsp.core.redact.values import mixed

_B64_40 = r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"


def _slug(value: str) -> bool:
    """A branch's or a page's slug (`sk-fix-login-bug`, `sk-2024-q3-plan`), not a key: words, none of them a long run
    of letters and digits (`sk-<32 hex>`, `sk-or-v1-<64 hex>`, a lower-case `sk-proj-` key)."""
    words = value.split("-")
    return bool(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)+", value)) and not any(
        len(word) >= 16 and mixed(word) for word in words
    )


def _plain(match: re.Match[str]) -> bool:
    """A token's body without both letters and digits: a name (`r8_...` of a register), not a generated key."""
    return not mixed(match["body"])


PROVIDER_RULES: tuple[Rule, ...] = (
    Rule("anthropic-key", token("sk-ant-", r"[A-Za-z0-9_-]", 20)),
    Rule("openrouter-key", token(r"sk-or-v1-", r"[a-f0-9]", 64)),
    Rule(  # (DeepSeek's `sk-<32 hex>` too)
        "openai-key",
        token(r"sk-(?:proj-|svcacct-|admin-)?", r"[A-Za-z0-9_-]", 20),
        keep=lambda m: not mixed(m[0]) or _slug(m[0]),
    ),
    Rule(
        "aws-key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ),
    Rule(  # 40 characters of base64 a little after "aws", "iam" or "secret", in mixed case with digits (a git sha is
        # hex); not without them: a 40-character id of anything else looks the same
        "aws-secret",
        re.compile(rf"(?i:\baws|\biam\b|secret)[\s\S]{{0,80}}?({_B64_40})"),
        group=1,
        keep=lambda m: not (mixed(m[1]) and m[1] != m[1].lower() and m[1] != m[1].upper()),
    ),
    Rule(  # the secret beside its access key id: "the key pair is AKIA... / <40 characters>"
        "aws-secret",
        re.compile(rf"(?<![A-Z0-9])A[KS]IA[A-Z0-9]{{16}}[^\n]{{0,40}}?({_B64_40})"),
        group=1,
        keep=lambda m: not mixed(m[1]),
    ),
    Rule(
        "github-token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    ),
    Rule("gitlab-token", token(r"gl(?:pat|dt|ptt|rt|cbt|oas|soat|ft|imt|agent)-", r"[A-Za-z0-9_-]", 20)),
    Rule("slack-token", token(r"xox[abposre]-", r"[A-Za-z0-9-]", 10)),
    Rule("slack-webhook", re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}")),
    Rule("stripe-key", token(r"(?:sk|rk)_live_", r"[A-Za-z0-9]", 16)),
    Rule("stripe-key", token(r"whsec_", r"[A-Za-z0-9]", 24)),
    Rule("google-key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
    Rule("google-key", token(r"GOCSPX-", r"[A-Za-z0-9_-]", 20)),
    Rule("google-key", token(r"ya29\.", r"[A-Za-z0-9_-]", 20)),
    Rule("slack-token", token(r"xapp-", r"[A-Za-z0-9-]", 10)),
    Rule("npm-token", token(r"npm_", r"[A-Za-z0-9]", 36)),
    Rule("pypi-token", token(r"pypi-AgE", r"[A-Za-z0-9_-]", 40)),
    Rule("huggingface-token", token(r"hf_", r"[A-Za-z0-9]", 30)),
    Rule("sendgrid-key", re.compile(r"(?<![A-Za-z0-9_-])SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}")),
    Rule("vault-token", token(r"hvs\.", r"[A-Za-z0-9_-]", 24)),
    Rule("digitalocean-token", token(r"do[opr]_v1_", r"[a-f0-9]", 64)),
    Rule("shopify-token", token(r"shp(?:at|ss|ca|pa)_", r"[a-fA-F0-9]", 32)),
    Rule("databricks-token", token(r"dapi", r"[a-f0-9]", 32)),
    Rule("age-key", token(r"AGE-SECRET-KEY-1", r"[0-9A-Z]", 50)),
    Rule("mailgun-key", token(r"key-", r"[0-9a-f]", 32)),
    Rule("mailgun-key", re.compile(r"(?<![0-9a-f-])[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}(?![0-9a-f-])")),
    Rule("telegram-token", re.compile(r"(?:(?<=/bot)|(?<![\w:]))\d{8,10}:AA[A-Za-z0-9_-]{33}(?![\w-])")),
    Rule("discord-token", re.compile(r"(?<![\w.-])[MNO][A-Za-z\d_-]{23,27}\.[\w-]{6}\.[\w-]{27,40}(?![\w.-])")),
    # LLM and developer platforms (each key's body is generated: letters and digits both)
    Rule("groq-key", token(r"gsk_", r"[A-Za-z0-9]", 40), keep=_plain),
    Rule("xai-key", token(r"xai-", r"[A-Za-z0-9]", 40), keep=_plain),
    Rule("perplexity-key", token(r"pplx-", r"[A-Za-z0-9]", 32), keep=_plain),
    Rule("replicate-token", token(r"r8_", r"[A-Za-z0-9]", 30), keep=_plain),
    Rule("tavily-key", token(r"tvly-(?:dev-|prod-)?", r"[A-Za-z0-9]", 24), keep=_plain),
    Rule("pinecone-key", token(r"pcsk_", r"[A-Za-z0-9_]", 40), keep=_plain),
    Rule("langsmith-key", token(r"lsv2_(?:pt|sk)_", r"[A-Za-z0-9_]", 32), keep=_plain),
    Rule("notion-token", token(r"ntn_", r"[A-Za-z0-9]", 40), keep=_plain),
    Rule("notion-token", token(r"secret_", r"[A-Za-z0-9]", 43, end=True), keep=_plain),
    Rule("twilio-key", re.compile(r"(?<![A-Za-z0-9_-])SK(?P<body>[0-9a-f]{32})(?![A-Za-z0-9_-])"), keep=_plain),
    Rule("atlassian-token", token(r"ATATT3", r"[A-Za-z0-9_=-]", 40), keep=_plain),
    Rule("postman-key", re.compile(r"(?<![A-Za-z0-9_-])PMAK-[A-Za-z0-9]{24}-[A-Za-z0-9]{34}(?![A-Za-z0-9_-])")),
    Rule("square-token", re.compile(r"(?<![A-Za-z0-9_+/=-])EAAA(?P<body>[A-Za-z0-9_-]{40,})"), keep=_plain),
    Rule("square-token", token(r"sq0(?:atp|csp)-", r"[A-Za-z0-9_-]", 22)),
    Rule("braintree-token", re.compile(r"access_token\$(?:production|sandbox)\$[a-z0-9]{8,32}\$[a-f0-9]{32}")),
    Rule("linear-key", token(r"lin_api_", r"[A-Za-z0-9]", 32), keep=_plain),
    Rule("grafana-token", token(r"glsa_", r"[A-Za-z0-9_]", 32), keep=_plain),
    Rule("grafana-token", token(r"glc_eyJ", r"[A-Za-z0-9+/=_-]", 30)),
    Rule("newrelic-key", token(r"NRAK-", r"[A-Z0-9]", 27)),
    Rule("doppler-token", token(r"dp\.(?:st|ct|sa|scim|audit|pt)\.", r"[A-Za-z0-9_.-]", 40), keep=_plain),
    Rule("firecrawl-key", token(r"fc-", r"[a-f0-9]", 32, end=True), keep=_plain),
)
