"""What never reaches a memory file: secrets (API keys and tokens of the common providers: providers.py; private
key blocks, JWTs, passwords and tokens in URLs, authorization and cookie headers, command lines and SQL
(`IDENTIFIED BY`, `WITH PASSWORD`), settings whose name says secret, token or password (or auth, cookie, salt,
signature, or says it before its last word, when the value looks made: values.py `_kept_setting`): `NAME=value`,
`--name=value`, `--name value`, `name: value` in YAML (a block scalar too) and JSON, "the password is ..." in five
languages, "with password ..."), each replaced by a marker naming its kind (`[redacted: aws-key]`) wherever the text
says it, and `<private>...</private>` spans, removed whole.

A rule table, not a detector library: `detect-secrets` 1.5 (the best kept one on PyPI) was measured for this
(bench/README.md): it brings `requests` and `pyyaml`, scans a line at a time (a PEM block is one line to it),
reports GitHub and GitLab tokens by their prefix alone (no span to replace), misses Anthropic, Google and
today's OpenAI keys, and its keyword and URL detectors redact placeholders (`username:password@host`,
`postgres:postgres@localhost`) that the development sets hold. Each rule here names a kind, matches a span
and may leave a match alone (a placeholder, a variable, a value its own name or user name already says).
Like detect-secrets, Stripe's test-mode keys (`sk_test_`, published in Stripe's own documentation) are kept.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence

from memsearch_lsp.core.redact.lines import key_tails, merged, wrapped
from memsearch_lsp.core.redact.providers import PROVIDER_RULES
from memsearch_lsp.core.redact.rule import Redaction, Rule
from memsearch_lsp.core.redact.values import (
    _code,
    _kept_auth,
    _kept_said,
    _kept_setting,
    _luhn,
    _made_said,
    _passphrase,
    _password_name,
    _random,
    _said,
    _scrambled,
    _secret_name,
    _stands_in,
    _user_password,
    _weak_name,
    mixed,
)

MARKER = "[redacted: {kind}]"
REPEATED = 64  # the secrets found in a text that are looked for again in it (the longest)
REPEATED_KNOWN = 1024  # and those found elsewhere (`known`: a private span's); a literal alternation stays fast
PRIVATE_TAG = re.compile(r"<\s*(?:(/)\s*)?private\b[^<>]*>", re.IGNORECASE)  # <private>, </private >, <private a=b>
_FIRST_CLOSE = re.compile(r"<\s*private\b[^<>/]*>.*?(?:<\s*/\s*private\s*>|\Z)", re.IGNORECASE | re.DOTALL)


_VALUE = ("dq", "sq", "bq", "value")  # a setting's value: "double-quoted", 'single-quoted' (spaces and all), or bare


def _named(match: re.Match[str]) -> str:
    return match["name"]


def _valued(match: re.Match[str]) -> str:
    return next((match[g] for g in _VALUE if g in match.re.groupindex and match[g]), "")


_SESSION = re.compile(r"(?i)sess|sid|token|auth|jwt|remember|csrf|xsrf|login")  # a cookie that says who you are


# (a payload of `{"`, `{ ` or `{` and a new line)
JWT = Rule("jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.e[wy][A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}"))
WRAPPED = (*PROVIDER_RULES, JWT)  # the tokens read across a line's end (lines.py `wrapped`)

RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        re.compile(
            # to its END line (past blank lines: PGP armour, encrypted PEM; not past another BEGIN, or a text of BEGIN
            # lines was read to its end from each), else to a blank line, else to the end
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?:(?!-----BEGIN).)*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*?(?=\n[ \t]*\n)|.*\Z)",
            re.DOTALL,
        ),
    ),
    Rule("private-key", re.compile(r"(?<![A-Za-z0-9+/])LS0tLS1CRUdJTi[A-Za-z0-9+/=]{40,}")),  # base64 of a PEM
    Rule(  # a private key's body without its BEGIN line: how the DER of one starts (PKCS#1, PKCS#8, SEC1, Ed25519),
        # or OpenSSH's; never a public key's or a certificate's (`MIIBIjAN`, `MIIDXTCC`, `AAAAC3Nz`)
        "private-key",
        re.compile(
            r"(?<![A-Za-z0-9+/])(?:MII[A-Za-z0-9+/]{3}IBA(?:AK|DAN)|MHcCAQEE|MC4CAQAwBQYDK2Vw|b3BlbnNzaC1rZXktdjE)"
            r"[A-Za-z0-9+/=]{16,}(?:\r?\n[ \t>]*[A-Za-z0-9+/=]{4,}(?=[ \t]*(?:\r?\n|$)))*"
        ),
    ),
    Rule("private-key", re.compile(r"Private-Lines: *\d+\n[A-Za-z0-9+/=]+(?:\n[A-Za-z0-9+/=]+)*\n?")),  # PuTTY .ppk
    *PROVIDER_RULES,
    JWT,  # (before a registry's auth: `auth=eyJ...` is a JWT)
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
    Rule(  # an HTTP header's credentials: Authorization: Bearer <token> (`<id>|<token>` too), Basic <base64>, `--token`
        "auth-header",
        re.compile(r"(?i:(?P<sent>\bbearer|\bbasic|--token)|\btoken)[ \t]+((?:\d{1,12}\|)?[A-Za-z0-9._~+/=%-]{16,})"),
        group=2,
        keep=lambda m: _kept_auth(m),
    ),
    Rule(  # a Cookie header's value, all its pairs, when a session's, a token's or a login's looks made:
        # `Cookie: sessionid=<random>; theme=dark` (not a signed `Set-Cookie: discount=BAhpMg==--<hex>`)
        "cookie",
        re.compile(
            r"(?i:\b(?:set-)?cookie[\"']?[ \t]*:[ \t]*[\"']?)"  # its pairs only: `name=value; name=value`
            r"(?P<value>[^\s=;\"'`|]{1,100}=[^\s;\"'`|]{0,4096}"
            r"(?:;[ \t]*[^\s=;\"'`|]{1,100}(?:=[^\s;\"'`|]{0,4096})?){0,50})"
        ),
        group=("value",),
        keep=lambda m: (
            not any(
                len(value) >= 12 and _random(value) and _SESSION.search(name)
                for name, value in re.findall(r"([^\s=;]+)=([^;\s]+)", m["value"])
            )
        ),
    ),
    Rule(  # a password on a command line: curl -u user:pass, mysql -pPASS, sshpass -p PASS (or -pPASS), docker login
        "cli-password",
        re.compile(
            r"(?:\bcurl\b[^\n]{0,200}?\s(?:-u|--user)[ \t]+(?P<user>[^\s:]{1,100}):|"
            r"\bmysql\w*(?:[ \t]+-{1,2}[A-Za-z][\w-]*(?:[= ][^\s-]\S*)?){0,8}?[ \t]+-p|"  # (its own options only)
            r"\bsshpass\b[^\n]{0,200}?\s-p[ \t]*|"
            r"\b(?:docker login|podman login|mongo|mongosh|az login|wget|lftp|smbclient)\b[^\n]{0,200}?"
            r"\s(?:-p|--password|--http-password|--ftp-password)[ \t=]+|"
            r"\bredis-cli\b[^\n]{0,200}?\s-a[ \t]+|\s-pass(?:in|out|word)?[ \t]+pass:|"
            # (its flags are short: bounded, a long word after "htpasswd -" is read once)
            r"\bhtpasswd\b(?:[ \t]+-\w{1,16})*?[ \t]+-\w{0,16}b\w{0,16}(?!\w)(?:[ \t]+-\w{1,16})*"
            r"[ \t]+\S+[ \t]+\S+[ \t]+)"
            r"(?P<q>['\"]?)(?P<value>[^\s'\"`)\]]+)(?P=q)"
        ),
        group=("value",),
        keep=lambda m: _stands_in(m["value"], m["user"] or ""),
    ),
    Rule(  # a secret said in words: "the admin password is hunter2Qx9", "**Password:** ...", "pw: ...", "PIN is 4821"
        "secret",
        re.compile(
            r"(?i:\b(?P<kw>password|passphrase|passcode|passwd|passwort|kennwort|senha|contrase[ñn]a|mot de passe|pw|"
            r"(?:wi-?fi|wlan)[ \t]+pass|"
            r"pwd|pin|door code|api[ _-]?(?:key|token)|access[ _-]?token|secret[ _-]?key|client[ _-]secret|"
            r"(?:webhook|deploy|auth|bot|app|signing|shared)[ _-](?:secret|token)|"
            r"(?:encryption|master) key)|密码|口令)"
            r"(?:[ \t]+(?i:for|of|do|da|de|del|du|für|pour)[ \t]+[^:\s][^:\n]{0,39}?"
            r"(?=[*_`]*[ \t]*(?:[:：]|(?i:is|was|ist|war|lautet|é|es|est|era)[ \t])))?[*_`]*[ \t\xa0]*"
            # (no two quantifiers that may both take one run of spaces, and no unbounded look ahead: from each
            # keyword, a long line of spaces or of `pw:` was read to its end once per keyword)
            r"(?:(?i:is|was|ist|war|lautet|é|es|est|era)[ \t\xa0]+|是[ \t]*|"
            # (the value ends at a mark, a space before `(` or the line's end: its first run without marks read once)
            r"[=:：][*_`]*[ \t\xa0]*(?=['\"`]?[^\s'\"`](?=(?P<said>[^\s'\"`,.;)\]]{0,255}))(?P=said)"
            r"(?:[,.;)\]]|['\"`*_]*[ \t]*(?:[,.;)\]]|(?<=[ \t])\(|$)|(?P<more>[ \t]+(?=\S))))|"
            r"(?<=[ \t])(?=['\"][^'\"\n(){}\[\];,=][^'\"\n(){}\[\];,= ]{0,98} [^'\"\n(){}\[\];,=]{1,98}['\"]))"
            r"(?:'(?P<sq>[^'\n]{1,100})'|\"(?P<dq>[^\"\n]{1,100})\"|`?(?P<value>[^\s'\"`]+)`?)",
            re.MULTILINE,
        ),
        group=("sq", "dq", "value"),
        # (words after the value, "password: Wr0ub4dor-and-3 for the guest network": only a value a person or a
        # generator made, not a label's first word, "Password: reset flow broken on Safari")
        keep=lambda m: _kept_said(m) or (m["more"] is not None and not _made_said(m)),
    ),
    Rule(  # a password set to a value: "I set the admin password to Xk9mP2vL7qR4", "changed the PIN to '4821'"
        "secret",
        re.compile(
            r"(?i:\b(?:set|changed?|reset|rotated?|updated?)\b[^.\n]{0,30}?\b(?P<kw>password|passphrase|passcode|pin|"
            r"pw)\b[ \t]+to[ \t]+)(?:'(?P<sq>[^'\n]{1,100})'|\"(?P<dq>[^\"\n]{1,100})\"|`?(?P<value>[^\s'\"`]+)`?)"
        ),
        group=("sq", "dq", "value"),
        keep=lambda m: _kept_said(m) or not (m["sq"] or m["dq"] or _passphrase(_valued(m).rstrip(".,;:!?)"))),
    ),
    Rule(  # a password named in prose without "is": "log in as admin with password Xk9m2pQ", "ssh deploy@host, password
        # hunter2", "the password Tr0ub4dor&3xK contains an &": a generated one anywhere, letters and digits after
        # "with", "and", "using" or a comma (not "the password sha256 hash", "hash the password with argon2")
        "secret",
        re.compile(
            r"(?P<joined>(?i:\b(?:with|and|using|plus)|[,;])[ \t]+"
            r"(?:(?i:the|its|a|an|my|our|your)[ \t]+)?(?:\w+[ \t]+)?)?"
            r"(?i:\b(?P<kw>password|passphrase|passwd|pwd|passwort|kennwort|senha|contrase[ñn]a|mot de passe|"
            r"(?:wi-?fi|wlan)[ \t]+pass))[ \t]+"
            r"`?(?P<value>[^\s`'\"]{1,256}?)`?(?=[,.;:!?)]{0,8}(?:\s|$))"
        ),
        group=("value",),
        keep=lambda m: (
            not (_scrambled(m["value"]) or (m["joined"] and mixed(m["value"]) and len(m["value"]) >= 6))
            or _stands_in(m["value"])
            or _said(m["value"])
            or _code(m)
        ),
    ),
    Rule(  # a login said in prose: "user admin, pass Wq9rTz3Lk8Mn" (the value ends the phrase), "staging login: admin /
        # Wq9rTz3Lk8Mn", "creds are admin:Wq9rTz3Lk8Mn": a value of letters and digits, or one a generator made (not
        # "login: admin / dashboard", "Login flow: OAuth2Callback", "the user model, pass UserDTOv2 to the serializer")
        "secret",
        re.compile(
            r"(?i:\b(?:user(?:name)?|login)[ \t]{0,8}:?[ \t]{1,8}[\w.@-]{1,64}[,;]?[ \t]{1,8}(?:pass|pw|pwd)"
            r"(?:[ \t]{0,8}[:=][ \t]{0,8}|[ \t]{1,8}(?=[^\s`'\",;/]{1,128}[ \t]{0,8}(?:[,.;)\n]|$)))|"
            r"\b(?:login|creds|credentials)\b(?:[ \t]{1,8}(?:are|is)\b)?[ \t]{0,8}:?[ \t]{1,8}[\w.@-]{1,64}"
            r"(?:[ \t]{0,8}/[ \t]{0,8}|:))"
            r"`?(?P<value>[^\s`'\",;/]{0,127}[^\s`'\",;/.])"
        ),
        group=("value",),
        keep=lambda m: (
            not ((mixed(m["value"]) and len(m["value"]) >= 6) or _scrambled(m["value"])) or _stands_in(m["value"])
        ),
    ),
    Rule(  # credential files: a .netrc `password VALUE` line, a .pgpass `host:port:db:user:password` line
        "secret",
        re.compile(
            r"^[ \t]*password[ \t]+(?P<netrc>\S+)[ \t]*$|^[^\s:#]+:(?:\d+|\*):[^\s:]+:[^\s:]+:(?P<pgpass>\S+)$",
            re.MULTILINE,
        ),
        group=("netrc", "pgpass"),
        keep=lambda m: not mixed(m["netrc"] or m["pgpass"]) or _stands_in(m["netrc"] or m["pgpass"]),
    ),
    Rule(
        "url-password",
        re.compile(
            # (at most 256 characters each: from every `scheme://` of a long word, the password was looked for to the
            # word's end, seconds for 64 KB of `http://`)
            r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}://(?P<user>[^\s:/@\"'<>]{0,256}):"
            r"(?P<password>[^\s\"'][^\s\"']{0,255}?)@"  # (an @, # or / in it too: the last @ before a host)
            r"(?=(?:[\w.-]{1,255}|\[[\w:.]+\])(?::\d*)?(?:/|[?#][^\s@]*(?:\s|$)|[)>\"'`,.;!]*(?:\s|$)))"
        ),
        group=2,
        keep=lambda m: _stands_in(m["password"], m["user"]),
    ),
    Rule(  # NAME=value, --name=value, --name value (`_kept_setting`)
        "secret",
        re.compile(
            r"(?<![\w.-])(?:(?P<flag>--)|-)?(?P<name>[A-Za-z_][\w.-]*)(?:\[?[\"'][A-Za-z_]\w*[\"']\])?"
            r"(?:[ \t]*(?::?=|＝)[ \t]*|(?(flag)(?P<spaced>[ \t]+)(?!-)|(?!)))"  # (a flag after a flag is no value)
            r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<value>(?:[^\s\"'`;&]|&(?![\w.-]+=)|"
            r";(?![A-Za-z][A-Za-z. -]*=|[\s\"'`]|$))+))"  # (a `;` inside it too: `Password=ab;cd;`)
        ),
        group=_VALUE,
        keep=lambda m: (
            _code(m) or _stands_in(_valued(m), _named(m)) or _kept_setting(_named(m), _valued(m), bool(m["spaced"]))
        ),
        nested=("dq", "sq"),
    ),
    Rule(  # name: value (YAML, JSON, a JavaScript object): only a value that looks like a key, not a word
        "secret",
        re.compile(
            r"(?<![\w.:/|-])(?<!\$\{)[\"'`]?(?P<name>[A-Za-z_][\w.-]*)[\"'`]?[ \t]*[:|][ \t]*"
            r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|`(?P<bq>[^`\n]+)`|"
            # the value: to the line's end (`,;&|` in it), at most 256 characters looked at from each start; else a
            # run without those, taken whole (a lookahead holds no backtracking); a name right after `:`, `/` or `|`
            # is no key (`a:b:c`, `x://u:`): from each of those a 50 KB line of `a:` took seconds
            r"(?P<value>[^\s\"'`][^\s\"'`]{0,255}?(?=[,;]?[ \t]*$|[ \t]+\#)|"
            r"(?=(?P<run>[^\s\"'`,;&|]+))(?P=run)(?=[ \t]*(?:[,}\]#\n\"'|]|$))))",
            re.MULTILINE,
        ),
        group=_VALUE,
        keep=lambda m: _kept_key(m),
    ),
    Rule(  # a YAML block scalar: `password: |` (or `>-`, `!vault |`) and the indented lines under it
        "secret",
        re.compile(
            r"^(?P<indent>[ \t]*)(?:-[ \t]+)?[\"']?(?P<name>[A-Za-z_][\w.-]*)[\"']?[ \t]*:[ \t]*(?:![\w!/-]*[ \t]+)?"
            r"[|>][1-9+-]{0,2}[ \t]*(?:#[^\n]*)?\n(?P=indent)[ \t]+(?P<value>\S[^\n]*(?:\n(?P=indent)[ \t]+\S[^\n]*)*)",
            re.MULTILINE,
        ),
        group=("value",),
        keep=lambda m: _kept_key(m),
    ),
    Rule(  # SQL: CREATE USER bob IDENTIFIED BY 'pw' (or bare), ALTER USER app WITH PASSWORD 'pw', ROLE .. PASSWORD
        "secret",
        re.compile(
            r"(?i:\b(?:user|role)[ \t]+(?P<user>[\w\"'`@%.-]+)(?:[ \t]+[^;\s][^;\n]{0,79}?)?[ \t]+"
            r"(?:identified(?:[ \t]+with[ \t]+\w+)?[ \t]+by(?:[ \t]+password)?|password(?=[ \t]+['\"])))[ \t]+"
            r"(?:'(?P<sq>(?:[^'\n]|'')+)'|\"(?P<dq>[^\"\n]+)\"|(?P<value>[^\s;'\"]+))"
        ),
        group=_VALUE,
        keep=lambda m: _stands_in(_valued(m), m["user"]),
    ),
    Rule(  # a token as a URL's user name: https://<token>@github.com/org/repo.git (a user name is a word, a slug)
        "url-token",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}://(?P<token>[A-Za-z0-9_~%+-]{16,256})@(?=[\w-]+(?:\.[\w-]+)+)"),
        group=1,
        keep=lambda m: (
            not (mixed(m[1]) and (len(m[1]) >= 32 or (m[1] != m[1].lower() and m[1] != m[1].upper())))
            or _stands_in(m[1])
        ),
    ),
)


def _kept_key(match: re.Match[str]) -> bool:
    """`name: value` left alone: not a secret's name, code, a placeholder, or a word under a key's or token's name
    (`signing_key: kid-2024-03`); a password's value is one whatever it looks like."""
    name, value = _named(match), _valued(match)
    if _code(match) or _stands_in(value, name):
        return True
    if not _secret_name(name):  # `db_password_prod: <made>` (`_loose_name`)
        return _kept_setting(name, value)
    if _weak_name(name):  # `auth: basic`, `'set-cookie': 'id=a; Secure'`
        return " " in value or not _random(value)
    return not (_random(value) or " " in value or _password_name(name))


_INVISIBLE = re.compile("[\u200b\u2060\ufeff\u00ad]")  # zero-width space, word joiner, BOM, soft hyphen


def find_secrets(text: str, known: Mapping[str, str] | None = None) -> list[Redaction]:
    """The secrets in `text`, in order, none overlapping (the first rule that claims a span wins); a character that
    shows nothing inside one (a zero-width space splitting a key in two) is read as not there, and goes with it.
    `known`: values found as secrets elsewhere (`secret_values`), looked for as repeats too."""
    if _INVISIBLE.search(text) is None:
        return _find(text, known)
    shown = [n for n, c in enumerate(text) if not _INVISIBLE.match(c)]
    return [Redaction(r.kind, shown[r.start], shown[r.end - 1] + 1) for r in _find(_INVISIBLE.sub("", text), known)]


def _find(text: str, known: Mapping[str, str] | None = None) -> list[Redaction]:
    found: list[Redaction] = []  # (in order, none overlapping: the one before where a span would go is all to check)
    starts: list[int] = []
    for rule in RULES:
        at = 0
        while (match := rule.pattern.search(text, at)) is not None:
            start, end = rule.span(match)
            if rule.keep is not None and rule.keep(match):
                # a quoted value left alone may hold settings of its own (a connection string's AccountKey=...)
                inner = next((match.start(g) for g in rule.nested if match[g] is not None), -1)
                at = inner if inner > match.start() else max(match.end(), match.start() + 1)
                continue
            n = bisect.bisect_left(starts, end)
            if start < end and (n == 0 or found[n - 1].end <= start):
                found.insert(n, Redaction(rule.kind, start, end))
                starts.insert(n, start)
            at = max(match.end(), match.start() + 1)
    found = merged(found, [*key_tails(text), *wrapped(text, WRAPPED)])
    return sorted(found + _repeated(text, found, known), key=lambda r: r.start)


def secret_values(text: str, found: Sequence[Redaction]) -> dict[str, str]:
    """What `_repeated` looks for again, by kind: each value found of 6 characters or more that looks made, and each
    run of letters and digits of it of 6 or more that holds both."""
    values: dict[str, str] = {}
    for r in found:
        value = text[r.start : r.end]
        if len(value) >= 6 and _random(value):
            values.setdefault(value, r.kind)
        for piece in re.findall(r"[A-Za-z0-9]{6,}", value):
            if mixed(piece):
                values.setdefault(piece, r.kind)
    return values


def _repeated(text: str, found: list[Redaction], known: Mapping[str, str] | None = None) -> list[Redaction]:
    """Where the text says a secret found in it again, in a form no rule knows ("The password Tr0ub4dor&3xK has an
    &" after `postgres://app:Tr0ub4dor&3xK@db`; an answer repeating a prompt's key): each value of 6 characters or
    more that looks made (`_random`: not `DB_PASSWORD=postgres`, whose every "postgres" would go), and each run of
    letters and digits of it of 6 or more that holds both (`Tr0ub4dor`), as a whole word; the REPEATED longest, in
    one pass over the text."""
    own = secret_values(text, found)
    values = {**(known or {}), **own}
    if not values:
        return []
    # the text's own values first (the longest REPEATED), then those found elsewhere (a capture's whole turn may name
    # hundreds of keys: they never push out the text's own); a longer value first where two start alike
    chosen = sorted(own, key=len, reverse=True)[:REPEATED]
    chosen += sorted((v for v in known or () if v not in own), key=len, reverse=True)[:REPEATED_KNOWN]
    longest = sorted(chosen, key=len, reverse=True)
    again = re.compile(rf"(?<![A-Za-z0-9])(?:{'|'.join(map(re.escape, longest))})(?![A-Za-z0-9])")
    starts = [r.start for r in found]  # (sorted, and the spans found never overlap)
    more: list[Redaction] = []
    for match in again.finditer(text):
        start, end = match.span()
        n = bisect.bisect_left(starts, end)  # the spans found that start before this one ends: the last may overlap
        if n == 0 or found[n - 1].end <= start:
            more.append(Redaction(values[match[0]], start, end))
    return more


def redact(text: str, known: Mapping[str, str] | None = None, lines: bool = False) -> str:
    """`text` with every secret replaced by `[redacted: <kind>]` (and each of the `known` values it repeats);
    `lines`: a secret over several lines leaves its line breaks after the marker."""
    out, last = [], 0
    for found in find_secrets(text, known):
        out += [text[last : found.start], MARKER.format(kind=found.kind), _breaks(text, found.start, found.end, lines)]
        last = found.end
    return "".join(out) + text[last:] if out else text


def _breaks(text: str, start: int, end: int, lines: bool) -> str:
    """What stays of `text[start:end]` when it is taken out: its line breaks (`lines`), else nothing."""
    return "\n" * text.count("\n", start, end) if lines else ""


def without_private(text: str, lines: bool = False) -> str:
    """`text` without its `<private>...</private>` spans: a nested one goes with the span around it, one left open
    runs to the end, `<private/>` hides nothing and a stray `</private>` stays; `lines`: a span's line breaks stay."""
    if "<" not in text:
        return text
    out, depth, at = [], 0, 0
    for tag in PRIVATE_TAG.finditer(text):
        if tag.group(0)[:-1].rstrip().endswith("/"):
            continue
        if not depth and not tag.group(1):
            out.append(text[at : tag.start()])
            at = tag.start()
        if depth or not tag.group(1):
            depth += -1 if tag.group(1) else 1
            out.append(_breaks(text, at, tag.end(), lines))
            at = tag.end()
    if depth:  # unbalanced ("<private> tags" said in prose): each span to its first close, the last one to the end
        return _FIRST_CLOSE.sub(lambda span: _breaks(text, span.start(), span.end(), lines), text)
    return "".join(out) + text[at:]


def safe_text(text: str, lines: bool = False) -> str:
    """What may be written: `text` without private spans, its secrets redacted, and so is a secret found inside a
    private span where the rest says it again (`<private>DB_PASSWORD=X</private> rotate X`). `lines`: each line
    stays where it was (a span or a secret over several lines leaves its line breaks), so line n of `text` is line n
    of the result: compaction reads its logs so, and links its facts to the lines of the archived originals."""
    shown = without_private(text, lines)
    return redact(shown, secret_values(text, find_secrets(text)) if shown != text else None, lines)
