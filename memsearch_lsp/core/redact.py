"""What never reaches a memory file: secrets (API keys and tokens of the common providers, private key blocks,
JWTs, passwords in URLs, authorization headers and command lines, settings whose name says secret, token or
password: `NAME=value`, `--name=value`, `name: value` in YAML and JSON, "the password is ..." in five
languages), each replaced by a marker naming its kind (`[redacted: aws-key]`), and `<private>...</private>`
spans, removed whole.

A rule table, not a detector library: `detect-secrets` 1.5 (the best kept one on PyPI) was measured for this
(bench/README.md): it brings `requests` and `pyyaml`, scans a line at a time (a PEM block is one line to it),
reports GitHub and GitLab tokens by their prefix alone (no span to replace), misses Anthropic, Google and
today's OpenAI keys, and its keyword and URL detectors redact placeholders (`username:password@host`,
`postgres:postgres@localhost`) that the development sets hold. Each rule here names a kind, matches a span
and may leave a match alone (a placeholder, a variable, a value its own name or user name already says).
Like detect-secrets, Stripe's test-mode keys (`sk_test_`, published in Stripe's own documentation) are kept.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass

MARKER = "[redacted: {kind}]"
PRIVATE_TAG = re.compile(r"<\s*(/?)\s*private\b[^<>]*>", re.IGNORECASE)  # <private>, </private >, <private a=b>
_FIRST_CLOSE = re.compile(r"<\s*private\b[^<>/]*>.*?(?:<\s*/\s*private\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_MARKED = re.compile(r"\[redacted: [a-z0-9-]+\]")
_B64_40 = r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
# Values that stand for a secret rather than being one: a variable, a template, a placeholder word.
_PLACEHOLDER = re.compile(
    r"""^(?:\$\{?[A-Za-z_]\w*\}?|%\(?\w+\)?s?%?|[{<\[].*|\*+|x+|\.+|…|
    password|passwd|pass|pwd|secret|token|changeme|change-me|example|redacted|none|null|empty|
    (?:your|my)[-_]?(?:own[-_]?)?(?:api[-_]?)?(?:password|passwd|pass|secret|token|key|pat)\w*|dummy|test|foo|bar|
    disabled|enabled|required|optional|unset|expired|prompt|ask|interactive|default|auto|env|development|
    production|staging|local|none|inherit|hidden|masked|rotated|revoked)$""",
    re.IGNORECASE | re.VERBOSE,
)
_REFERENCE = re.compile(r"^[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+$")  # process.env.TOKEN (no digits: a key)
_CALL = re.compile(r"^[\w.:]+(?:\(.*\)|\[.*\])$")  # os.getenv("TOKEN"), get_secret('db'), params[:password]
_RUNS = ("0123456789" * 4, "abcdefghijklmnopqrstuvwxyz")
# a file or a key's alias named, not a secret: /etc/ssl/private/api.key, ~/.ssh/id_ed25519, alias/prod-data
_PATH = re.compile(
    r"^(?:~?/|\.\.?/|alias/)[\w.@~/-]*$|^[\w.-]+(?:/[\w.-]+)*\.(?:pem|key|crt|p12|pfx|jks|json|ya?ml|env|txt)$"
)
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # OPENAI_API_KEY_V2: a variable's name
_IDENTIFIER = re.compile(r"(?:[A-Z][a-z0-9]+){2,}")  # TokenRefresherV2Client: a class
_SECRET_WORDS = {
    "secret", "token", "password", "passwd", "passphrase", "pwd", "credential", "credentials", "pass", "pat", "sig",
    "passwort", "kennwort", "senha", "contraseña", "contrasena", "motdepasse", "密码",
}  # fmt: skip
_KEY_OWNERS = {"api", "secret", "access", "private", "auth", "signing", "encryption", "master", "client", "account"}


@dataclass(frozen=True)
class Rule:
    """A kind of secret: `pattern`'s group `group` (or the first of several named groups that matched) is replaced;
    `keep(match)` True leaves a match alone."""

    kind: str
    pattern: re.Pattern[str]
    group: int | tuple[str, ...] = 0
    keep: Callable[[re.Match[str]], bool] | None = None
    nested: tuple[str, ...] = ()  # groups that may hold settings of their own when the match is left alone

    def span(self, match: re.Match[str]) -> tuple[int, int]:
        if isinstance(self.group, int):
            return match.span(self.group)
        groups = [g for g in self.group if g in match.re.groupindex]
        return match.span(next((g for g in groups if match[g] is not None), groups[-1]))


_VALUE = ("dq", "sq", "bq", "value")  # a setting's value: "double-quoted", 'single-quoted' (spaces and all), or bare


def _named(match: re.Match[str]) -> str:
    return match["name"]


def _valued(match: re.Match[str]) -> str:
    return next((match[g] for g in _VALUE if g in match.re.groupindex and match[g]), "")


def _basic_stands_in(header: str, value: str) -> bool:
    """`Basic <base64>` of a placeholder pair (`username:password`, as documentation shows one)."""
    if not header.lower().startswith("basic"):
        return False
    try:
        user, _, password = base64.b64decode(value + "=" * (-len(value) % 4)).decode().strip().partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    return bool(password) and _stands_in(password, user)


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DESCRIBED = re.compile(r"^\w+-(?:[a-z]+ed|based|free|only|safe)[.,;:!?)]*$")  # argon2id-hashed, 2FA-protected


def _said(value: str) -> bool:
    """A value that describes how a secret is kept, not one: "argon2id-hashed", "v2-encoded"."""
    return bool(_DESCRIBED.match(value))


def _random(value: str) -> bool:
    """A value that looks made to be secret rather than named: mixed case, or letters and digits beyond a slug
    (`k8s-prod-db`, `gpt-4o-mini`, `kid-2024-03` name things) or a short word (`sha256`), or other marks."""
    if re.fullmatch(r"[a-z0-9]+(?:[-_.][a-z0-9]+)+", value) or (value.islower() and len(value) < 8):
        return False
    if re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)+", value):  # apiKey, authToken: a variable
        return False
    return (value != value.lower() and value != value.upper()) or _mixed(value) or bool(re.search(r"[^\w.-]", value))


def _code(match: re.Match[str]) -> bool:
    """An unquoted value that is code, not a secret: `JWT.encode(payload,`, `ENV["API_SECRET"]`."""
    return match["value"] is not None and any(c in match["value"] for c in "([")


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
        or bool(_CALL.match(value))
        or bool(_PATH.match(value) or _ENV_NAME.fullmatch(value))
        or all(
            len(part) > 2 and any(part in run for run in _RUNS) for part in re.findall(r"[a-z]+|[0-9]+", low) or [low]
        )
        or any(low == n.lower() or low in _words(n) or (n.lower() in low and not _mixed(value)) for n in names if n)
    )


def _secret_name(name: str) -> bool:
    """A setting's name that says it holds a secret: its last word is secret, token, password, ... or it
    ends in a key of that sort (API_KEY, SECRET_ACCESS_KEY, apiKey)."""
    words = _words(name)
    if not words:
        return False
    if words[-1] in _SECRET_WORDS or words[-1] in ("apikey", "secretkey", "accesskey", "accountkey"):
        return True
    if words[-1].endswith(("password", "passwd", "secret", "token")):  # PGPASSWORD, DBSECRET
        return True
    return words[-1] == "key" and len(words) > 1 and words[-2] in _KEY_OWNERS | _SECRET_WORDS


def _password_name(name: str) -> bool:
    """A setting for a password (its values are passwords whatever they look like), not a key's or a token's name
    (whose values may be the names of keys: `signing_key: kid-2024-03`)."""
    words = _words(name)
    return bool(words) and words[-1] in {"password", "passwd", "passwort", "kennwort", "senha", "pass", "pwd", "密码"}


def _mixed(value: str) -> bool:
    """A token with letters and digits (a real key), not a word or a slug."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


_JOINED_WORDS = re.compile(r"(?:[A-Z]?[a-z]{2,}){3,}|[a-z]{3,}(?:[-_][a-z]{3,}){2,}")  # CorrectHorseBattery, a-b-c


def _passphrase(value: str) -> bool:
    """A value said to be a password that looks like one: a key (letters and digits), or words run together
    (CorrectHorseBatteryStaple, sunflower-meadow-lantern); not a word that says where or how it is kept."""
    joined = _JOINED_WORDS.fullmatch(value) is not None and (not value.islower() or "-" in value or "_" in value)
    return _mixed(value) or joined


_PASSWORD_WORDS = {"password", "passphrase", "passcode", "passwd", "passwort", "kennwort", "senha", "pw", "pwd"}
_DESCRIBES = re.compile(r"(?:ed|ing|ly|able|ible|ful|less|ive|ous|ent|ant|al|ure)$")
_NOT_A_PASSWORD = {
    "wrong", "right", "weak", "strong", "same", "long", "short", "empty", "valid", "fine", "okay", "secure", "old",
    "new", "temporary", "default", "known", "unknown", "there", "here", "shared", "random", "still", "also", "now",
    "not", "the", "this", "that", "only", "just", "too", "very", "case", "part", "mine", "yours", "ours", "gone",
    "over", "under", "from", "with", "into", "within", "without", "what", "which", "where", "unique", "public",
    "private", "simple", "complex", "hard", "easy", "safe", "unsafe", "good", "fresh", "stale", "none", "set",
    "reset", "blank", "free", "open", "closed", "broken", "lost", "back", "ready", "taken", "needed", "correct",
    "secret", "stored", "kept", "saved", "their", "your", "our", "his", "her", "its", "bitwarden", "vault", "sso",
}  # fmt: skip


def _kept_said(match: re.Match[str]) -> bool:
    """A value said to be a secret that is none: a word that says where or how it is kept ("rotated weekly", "in
    Vault"), a placeholder; a password's or PIN's value is one even as a plain word or digits, a passphrase in quotes
    even with spaces."""
    value = (match["sq"] or match["dq"] or match["value"] or "").rstrip(".,;:!?)*_")
    kind = match["kw"].lower() if match["kw"] else "password"
    if kind in ("pin", "door code", "passcode") and value.isdigit() and 4 <= len(value) <= 12:
        return False
    if _stands_in(value) or _said(value):
        return True
    if (match["sq"] or match["dq"]) and kind in _PASSWORD_WORDS and len(value.split()) >= 2:
        return False  # 'correct horse battery staple'
    plain = value.isalpha() and value.islower() and len(value) >= 5
    if plain and kind in _PASSWORD_WORDS and not _DESCRIBES.search(value) and value not in _NOT_A_PASSWORD:
        return False  # "the password is sunflower"
    return not _passphrase(value)


def _user_password(value: str) -> bool:
    """Base64 of `user:password` (a registry's auth)."""
    try:
        user, colon, password = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    return bool(colon and user and password) and user.isprintable() and not _stands_in(password, user)


def _luhn(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    if not 13 <= len(digits) <= 19 or len(set(digits)) < 3:
        return False
    total = sum(d if n % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for n, d in enumerate(reversed(digits)))
    return total % 10 == 0


def _token(prefix: str, body: str, minimum: int) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_-]){prefix}{body}{{{minimum},}}")


RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"  # to its END line (past blank lines: PGP armour,
            r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*?(?=\n[ \t]*\n)|.*\Z)",  # encrypted PEM)
            re.DOTALL,
        ),
    ),
    Rule("private-key", re.compile(r"(?<![A-Za-z0-9+/])LS0tLS1CRUdJTi[A-Za-z0-9+/=]{40,}")),  # base64 of a PEM
    Rule("private-key", re.compile(r"Private-Lines: *\d+\n(?:[A-Za-z0-9+/=]+\n?)+")),  # PuTTY .ppk
    Rule("anthropic-key", _token("sk-ant-", r"[A-Za-z0-9_-]", 20)),
    Rule(
        "openai-key",
        _token(r"sk-(?:proj-|svcacct-|admin-)?", r"[A-Za-z0-9_-]", 20),
        keep=lambda m: not _mixed(m[0]) or bool(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)+", m[0])),  # a branch's slug
    ),
    Rule(
        "aws-key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ),
    Rule(  # 40 characters of base64 a little after "aws" or "secret", in mixed case with digits (a git sha is hex)
        "aws-secret",
        re.compile(rf"(?i:\baws|secret)[\s\S]{{0,80}}?({_B64_40})"),
        group=1,
        keep=lambda m: not (_mixed(m[1]) and m[1] != m[1].lower() and m[1] != m[1].upper()),
    ),
    Rule(  # the secret beside its access key id: "the key pair is AKIA... / <40 characters>"
        "aws-secret",
        re.compile(rf"(?<![A-Z0-9])A[KS]IA[A-Z0-9]{{16}}[^\n]{{0,40}}?({_B64_40})"),
        group=1,
        keep=lambda m: not _mixed(m[1]),
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
    Rule("slack-token", _token(r"xapp-", r"[A-Za-z0-9-]", 10)),
    Rule("npm-token", _token(r"npm_", r"[A-Za-z0-9]", 36)),
    Rule("pypi-token", _token(r"pypi-AgE", r"[A-Za-z0-9_-]", 40)),
    Rule("huggingface-token", _token(r"hf_", r"[A-Za-z0-9]", 30)),
    Rule("sendgrid-key", re.compile(r"(?<![A-Za-z0-9_-])SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}")),
    Rule("vault-token", _token(r"hvs\.", r"[A-Za-z0-9_-]", 24)),
    Rule("digitalocean-token", _token(r"do[opr]_v1_", r"[a-f0-9]", 64)),
    Rule("shopify-token", _token(r"shp(?:at|ss|ca|pa)_", r"[a-fA-F0-9]", 32)),
    Rule("databricks-token", _token(r"dapi", r"[a-f0-9]", 32)),
    Rule("age-key", _token(r"AGE-SECRET-KEY-1", r"[0-9A-Z]", 50)),
    Rule("mailgun-key", _token(r"key-", r"[0-9a-f]", 32)),
    Rule("mailgun-key", re.compile(r"(?<![0-9a-f-])[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}(?![0-9a-f-])")),
    Rule("telegram-token", re.compile(r"(?:(?<=/bot)|(?<![\w:]))\d{8,10}:AA[A-Za-z0-9_-]{33}(?![\w-])")),
    Rule("discord-token", re.compile(r"(?<![\w.-])[MNO][A-Za-z\d_-]{23,27}\.[\w-]{6}\.[\w-]{27,40}(?![\w.-])")),
    Rule(  # a registry's `auth`: base64 of user:password (docker config.json, .npmrc `_auth`)
        "registry-auth",
        re.compile(r"(?i:[\"']?_?auth[\"']?[ \t]*[:=][ \t]*[\"']?)([A-Za-z0-9+/]{8,}={0,2})"),
        group=1,
        keep=lambda m: not _user_password(m[1]),
    ),
    Rule(  # a payment card's number (Luhn-valid, 13-19 digits, spaced or not), said to be a card's
        "card-number",
        re.compile(
            r"(?i:\b(?:card|visa|mastercard|amex|credit|debit|cc|kreditkarte|tarjeta|cart[ãa]o)\b)[^\n\d]{0,30}"
            r"(?<![\d.-])(\d{4}(?:[ -]?\d{4}){2}[ -]?\d{1,7})(?![\d.-])"
        ),
        group=1,
        keep=lambda m: not _luhn(m[1]),
    ),
    Rule(  # an HTTP header's credentials: Authorization: Bearer <token>, Basic <base64>
        "auth-header",
        re.compile(r"(?i:\b(?:bearer|basic|token))[ \t]+([A-Za-z0-9._~+/=-]{16,})"),
        group=1,
        keep=lambda m: (
            not _mixed(m[1])
            or not _random(m[1])  # a name: "token gh-actions-release-2024"
            or bool(_UUID.fullmatch(m[1]))  # an id: "the invalid token 550e8400-e29b-..."
            or bool(_IDENTIFIER.fullmatch(m[1]))  # a class: "the bearer token TokenRefresherV2Client"
            or _stands_in(m[1])
            or _basic_stands_in(m[0], m[1])
        ),
    ),
    Rule(  # a password on a command line: curl -u user:pass, mysql -pPASS, sshpass -p PASS, docker login -p PASS
        "cli-password",
        re.compile(
            r"(?:\bcurl\b[^\n]{0,200}?\s(?:-u|--user)[ \t]+(?P<user>[^\s:]{1,100}):|"
            r"\bmysql\w*(?:[ \t]+-{1,2}[A-Za-z][\w-]*(?:[= ][^\s-]\S*)?){0,8}?[ \t]+-p|"  # (its own options only)
            r"\b(?:sshpass|docker login|podman login|mongo|mongosh|az login|wget|lftp|smbclient)\b[^\n]{0,200}?"
            r"\s(?:-p|--password|--http-password|--ftp-password)[ \t=]+|"
            r"\bredis-cli\b[^\n]{0,200}?\s-a[ \t]+|\s-pass(?:in|out|word)?[ \t]+pass:|"
            r"\bhtpasswd\b(?:[ \t]+-\w+)*?[ \t]+-\w*b\w*(?:[ \t]+-\w+)*[ \t]+\S+[ \t]+\S+[ \t]+)"
            r"(?P<q>['\"]?)(?P<value>[^\s'\"`)\]]+)(?P=q)"
        ),
        group=("value",),
        keep=lambda m: _stands_in(m["value"], m["user"] or ""),
    ),
    Rule(  # a secret said in words: "the admin password is hunter2Qx9", "**Password:** ...", "pw: ...", "PIN is 4821"
        "secret",
        re.compile(
            r"(?i:\b(?P<kw>password|passphrase|passcode|passwd|passwort|kennwort|senha|contrase[ñn]a|mot de passe|pw|"
            r"pwd|pin|door code|api[ _-]?(?:key|token)|access[ _-]?token|secret[ _-]?key|client[ _-]secret|"
            r"(?:webhook|deploy|auth|bot|app|signing|shared)[ _-](?:secret|token))|密码|口令)"
            r"(?:[ \t]+for[ \t]+[^:\n]{1,40}?(?=[*_`]*[ \t]*[:：]))?[*_`]*[ \t\xa0]*"
            r"(?:(?i:is|was|ist|war|é|es|est|era)[ \t\xa0]+|是|"
            r"[=:：][*_`]*[ \t\xa0]*(?=['\"`]?[^\s'\"`]+['\"`*_]*[ \t]*(?:[,.;)\]]|[ \t]+\(|$))|"
            r"(?=[ \t]+['\"][^'\"\n(){}\[\];,=]+ [^'\"\n(){}\[\];,=]+['\"]))"
            r"[ \t]*(?:'(?P<sq>[^'\n]{1,100})'|\"(?P<dq>[^\"\n]{1,100})\"|`?(?P<value>[^\s'\"`]+)`?)",
            re.MULTILINE,
        ),
        group=("sq", "dq", "value"),
        keep=lambda m: _kept_said(m),
    ),
    Rule(  # credential files: a .netrc `password VALUE` line, a .pgpass `host:port:db:user:password` line
        "secret",
        re.compile(
            r"^[ \t]*password[ \t]+(?P<netrc>\S+)[ \t]*$|^[^\s:#]+:(?:\d+|\*):[^\s:]+:[^\s:]+:(?P<pgpass>\S+)$",
            re.MULTILINE,
        ),
        group=("netrc", "pgpass"),
        keep=lambda m: not _mixed(m["netrc"] or m["pgpass"]) or _stands_in(m["netrc"] or m["pgpass"]),
    ),
    Rule("jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}")),
    Rule(
        "url-password",
        re.compile(
            r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}://(?P<user>[^\s:/@\"'<>]*):(?P<password>[^\s/\"'<>@][^\s\"'<>@]*)@"
        ),
        group=2,
        keep=lambda m: _stands_in(m["password"], m["user"]),
    ),
    Rule(
        "secret",
        re.compile(
            r"(?<![\w.-])(?:--?)?(?P<name>[A-Za-z_][\w.-]*)(?:\[?[\"'][A-Za-z_]\w*[\"']\])?[ \t]*:?=[ \t]*"
            r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<value>(?:[^\s\"'`;&]|&(?![\w.-]+=))+))"
        ),
        group=_VALUE,
        keep=lambda m: not _secret_name(_named(m)) or _code(m) or _stands_in(_valued(m), _named(m)),
        nested=("dq", "sq"),
    ),
    Rule(  # name: value (YAML, JSON, a JavaScript object): only a value that looks like a key, not a word
        "secret",
        re.compile(
            r"(?<![\w.-])[\"'`]?(?P<name>[A-Za-z_][\w.-]*)[\"'`]?[ \t]*(?::|[ \t]*\|)[ \t]*"
            r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|`(?P<bq>[^`\n]+)`|"
            r"(?P<value>[^\s\"'`,;&|]+)(?=[ \t]*(?:[,}\]#\n\"'|]|$)))",
            re.MULTILINE,
        ),
        group=_VALUE,
        keep=lambda m: (
            not _secret_name(_named(m))
            or _code(m)
            or _stands_in(_valued(m), _named(m))
            or not (_random(_valued(m)) or " " in _valued(m) or _password_name(_named(m)))
        ),
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
        at = 0
        while (match := rule.pattern.search(text, at)) is not None:
            start, end = rule.span(match)
            if rule.keep is not None and rule.keep(match):
                # a quoted value left alone may hold settings of its own (a connection string's AccountKey=...)
                inner = next((match.start(g) for g in rule.nested if match[g] is not None), -1)
                at = inner if inner > match.start() else max(match.end(), match.start() + 1)
                continue
            if start < end and not any(r.start < end and start < r.end for r in found):
                found.append(Redaction(rule.kind, start, end))
            at = max(match.end(), match.start() + 1)
    return sorted(found, key=lambda r: r.start)


def redact(text: str) -> str:
    """`text` with every secret replaced by `[redacted: <kind>]`."""
    out, last = [], 0
    for found in find_secrets(text):
        out += [text[last : found.start], MARKER.format(kind=found.kind)]
        last = found.end
    return "".join(out) + text[last:] if out else text


def without_private(text: str) -> str:
    """`text` without its `<private>...</private>` spans: a nested one goes with the span around it, one left open
    runs to the end, `<private/>` hides nothing and a stray `</private>` stays."""
    if "<" not in text:
        return text
    out, depth, at = [], 0, 0
    for tag in PRIVATE_TAG.finditer(text):
        if tag.group(0)[:-1].rstrip().endswith("/"):
            continue
        if not depth and not tag.group(1):
            out.append(text[at : tag.start()])
        if depth or not tag.group(1):
            depth += -1 if tag.group(1) else 1
            at = tag.end()
    if depth:  # unbalanced ("<private> tags" said in prose): each span to its first close, the last one to the end
        return _FIRST_CLOSE.sub("", text)
    return "".join(out) + text[at:]


def safe_text(text: str) -> str:
    """What may be written: `text` without private spans, its secrets redacted."""
    return redact(without_private(text))
