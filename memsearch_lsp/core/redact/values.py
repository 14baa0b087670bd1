"""What a value said to be a secret looks like: a placeholder, a variable, a path or a word that says how it is kept
(never redacted), a random key, a passphrase, a registry's `user:password`, a card number (core/redact's rules keep or
replace a match by these)."""

from __future__ import annotations

import base64
import itertools
import re

_MARKED = re.compile(r"\[redacted:(?: [a-z0-9-]+\])?")  # a value already replaced (`[redacted:` where it stops)
# Values that stand for a secret rather than being one, whole: a template (`{{ vault_pw }}`, `<%= ENV['PW'] %>`,
# `%(pw)s`, `%PASSWORD%`), a name in brackets (`<your-password>`, `[REDACTED]`, `{password}`; open when the value
# stops at a space: `<your key>`), a YAML tag (`!vault`, `!Ref`), a placeholder word. Only these shapes: a
# generated password may start with `$`, `<`, `[`, `{` or `%` too.
_PLACEHOLDER = re.compile(
    r"""^(?:\$?\{\{.*\}\}|\{%.*%\}|<%.*%>|\{[A-Za-z_][\w.:|-]*\}|
    <[A-Za-z][A-Za-z\ _.-]*>?|\[[A-Za-z][A-Za-z\ _.-]*\]?|<[A-Za-z][\w\ .|-]*>|\[[A-Za-z][\w\ .-]*\]|
    %\([A-Za-z_]\w*\)s|%[A-Za-z_]\w*%|%s|!!?(?-i:[a-z]+(?:_[a-z]+)*|(?:[A-Z][a-z]+)+)|\*+|x+|\.+|…|
    password|passwd|pass|pwd|secret|token|changeme|change-me|example|redacted|none|null|empty|
    (?:your|my)[-_]?(?:own[-_]?)?(?:api[-_]?)?(?:password|passwd|pass|secret|token|key|pat)\w*|dummy|test|foo|bar|
    disabled|enabled|required|optional|unset|expired|prompt|ask|interactive|default|auto|env|development|
    production|staging|local|none|inherit|hidden|masked|rotated|revoked)$""",
    re.IGNORECASE | re.VERBOSE,
)
# process.env.TOKEN, self._password: dotted names, each a word in one case or words run together (no digits: a key)
# (No two ways to read one name, here and in `_NAME`: `(?:[A-Z]?[a-z]+)+` read 30 letters in 2**29 ways before it
# failed, minutes for `DB_PASSWORD=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1`; a word ends at a dot, so each is read alone.)
_WORD = re.compile(r"[a-z_]+|[A-Z_]+|_*[A-Z]?[a-z]+(?:[A-Z][a-z]+)*")
# A variable: `$DB_PASSWORD`, `${DB_PASSWORD:-x}`, `$(cat /run/secrets/db)` (open where the value stops at a space:
# `${DB_PASSWORD:-a`, `$(cat`).
# Code: names (each in one case, or words then digits: `Yup`, `getPassword`, `get_secret_v2`, never `Xk9m`)
# joined by `.`, `::`, `->`, called or indexed with plain arguments (`os.getenv("TOKEN")`, `params[:password]`),
# ending there or left open (the value stops at a quote, a space or the line's end: `ENV[`, `JWT.encode(payload,`).
_NAME = r"[_$]*(?:[a-z][a-z0-9_]*|[A-Z][A-Z0-9_]*|[A-Z][a-z]+(?:[A-Z][a-z]+)*[0-9]*|[a-z]+(?:[A-Z][a-z]+)+[0-9]*)"
_VARIABLE = re.compile(rf"\$(?:{_NAME}|\{{[A-Za-z_]\w*(?:[:?+=-][^{{}}]*\}}|:?[?+=-][\w.-]*|\}})|\([a-z][^()]*\)?)")
_ARG = r"[\w$.:'\" ,/-]*"
_ARGS = rf"{_ARG}(?:\({_ARG}\){_ARG})*"
_CODE = re.compile(rf"{_NAME}(?:(?:\.|::|->){_NAME}|\({_ARGS}\)|\[{_ARGS}\])*(?:[(\[](?:{_ARGS},)?)?")
_RUNS = ("0123456789" * 4, "abcdefghijklmnopqrstuvwxyz")
# a file or a key's alias named, not a secret: /etc/ssl/private/api.key, ~/.ssh/id_ed25519, alias/prod-data (path
# characters only; one name after a lone `/` is a name, not a generated `/Xk9mP2vL7q`)
_PATH = re.compile(
    r"^(?:~|\.\.?|alias)?/(?:[\w.@~+-]+/)*(?P<last>[\w.@~+-]*)$|"
    r"^[\w.-]+(?:/[\w.-]+)*\.(?:pem|key|crt|p12|pfx|jks|json|ya?ml|env|txt)$"
)
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # OPENAI_API_KEY_V2: a variable's name
_IDENTIFIER = re.compile(r"(?:[A-Z][a-z0-9]+){2,}")  # TokenRefresherV2Client: a class
_SECRET_WORDS = {
    "secret", "token", "password", "passwd", "passphrase", "pwd", "credential", "credentials", "pass", "pat", "sig",
    "passwort", "kennwort", "senha", "contraseña", "contrasena", "motdepasse", "密码",
}  # fmt: skip
# the last word of a setting whose value is a secret only when it looks made (REDIS_AUTH, SESSION_COOKIE, SALT)
_WEAK_WORDS = {"auth", "cookie", "salt", "signature"}
_KEY_OWNERS = {"api", "secret", "access", "private", "auth", "signing", "encryption", "master", "client", "account"}


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


def _kept_auth(match: re.Match[str]) -> bool:
    """After Bearer, Basic or `--token`, any value is a credential but a placeholder, lower-case words
    (`your-token-here`, "basic internationalization") or a setting (`basic NAME=value`: a token's `=` only pads its
    end); after "token" in prose only a value that looks made: not a name, an id or a class."""
    value = match[2]
    if match["sent"]:
        return (
            _stands_in(value)
            or _basic_stands_in(match[0], value)
            or bool(re.fullmatch(r"[a-z]+(?:[-_.][a-z]+)*", value))
            or bool(_SETTING.fullmatch(value))
            or _worded(value)
        )
    return (
        not mixed(value)
        or not _random(value)  # a name: "token gh-actions-release-2024"
        or bool(_UUID.fullmatch(value))  # an id: "the invalid token 550e8400-e29b-..."
        or bool(_IDENTIFIER.fullmatch(value))  # a class: "the bearer token TokenRefresherV2Client"
        or _stands_in(value)
    )


_SETTING = re.compile(r"(?:[A-Z][A-Z0-9_]*|[a-z][a-z0-9_]*)=\S*")  # SESSION_COOKIE=sessionid: one case, then =
_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}")


def _worded(value: str) -> bool:
    """A value written in words, a class, a heading or a path ("RateLimiterMiddleware", "TokenRefresherV2Client",
    "Setup/Configuration", "v2.3.1-beta.4-release-candidate"): nearly all of its letters are in words of 4 or more
    with a vowel; a made one's letters are in short runs between case changes and digits ("Tq8Zr2LmX7pTw4NvB9kYd")."""
    letters = sum(c.isalpha() for c in value)
    worded = sum(len(w) for w in _WORDISH.findall(value) if re.search("[aeiouy]", w, re.I))
    return letters > 0 and worded >= 0.85 * letters


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
    return (value != value.lower() and value != value.upper()) or mixed(value) or bool(re.search(r"[^\w.-]", value))


def _code(match: re.Match[str]) -> bool:
    """An unquoted value that is code, not a secret: `JWT.encode(payload,`, `ENV["API_SECRET"]` (its value `ENV[`
    stops at the quote)."""
    return match["value"] is not None and _call(match["value"])


def _call(value: str) -> bool:
    """A call or an index of named things (`get_password()`, `params[:password]`, `os.environ[`), not a password
    holding `(` or `[`."""
    if re.match(r"[A-Z][a-z]+[0-9]*[(\[]|[a-z]+[0-9]+[(\[]", value):  # Summer2024(, Hunter(2): a password, no call
        return False
    return ("(" in value or "[" in value) and _CODE.fullmatch(value) is not None


def _path(value: str) -> bool:
    """A file's path or a key's alias (`/run/secrets/db`, `~/.ssh/id_ed25519`, `alias/prod-data`, `/tmp`)."""
    found = _PATH.match(value)
    if found is None or found["last"] is None:
        return found is not None
    return value.count("/") > 1 or not value.startswith("/") or not _random(found["last"])


def _words(name: str) -> list[str]:
    """`OPENAI_API_KEY`, `apiKey`, `db.password` as lower-case words."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])", name)]


def _trimmed(value: str) -> str:
    """`value` without what closes the code or the sentence around it (`secret=None)`, `None,`), its own brackets
    (`{KeyObject}`) and an ellipsis (`...`) kept."""
    end = len(value)
    while end > 1 and (close := value[end - 1]) in ",;.)]}":
        if close == "." and not value[: end - 1].strip("."):
            break
        if close in ")]}" and value.count("([{"[")]}".index(close)], 0, end) >= value.count(close, 0, end):
            break
        end -= 1
    return value[:end]


def _stands_in(value: str, *names: str) -> bool:
    """A value that is no secret: a placeholder, a variable, an expression, a trivial run (123456), or a word
    the setting's name (POSTGRES_PASSWORD=postgres) or the URL's user name already says."""
    short, value = len(value) < 4, _trimmed(value)
    low = value.lower()
    return (
        short
        or (value.isdigit() and len(value) < 8)
        or low in ("true", "false", "yes", "no", "on", "off")
        or bool(_PLACEHOLDER.match(value) or _VARIABLE.fullmatch(value) or _MARKED.fullmatch(value.rstrip(".,;!?)")))
        or _reference(value)
        or _call(value)
        or _path(value)
        or bool(_ENV_NAME.fullmatch(value))
        or all(
            len(part) > 2 and any(part in run for run in _RUNS) for part in re.findall(r"[a-z]+|[0-9]+", low) or [low]
        )
        or any(low == n.lower() or low in _words(n) or (n.lower() in low and not mixed(value)) for n in names if n)
    )


def _reference(value: str) -> bool:
    """A dotted name: `process.env.TOKEN`, `self._password`."""
    words = value.split(".")
    return len(words) > 1 and all(_WORD.fullmatch(word) for word in words)


def _secret_name(name: str) -> bool:
    """A setting's name that says it holds a secret: its last word is secret, token, password, ... or it
    ends in a key of that sort (API_KEY, SECRET_ACCESS_KEY, apiKey)."""
    words = _words(name)
    if not words:
        return False
    if words[-1] in _SECRET_WORDS | _WEAK_WORDS or words[-1] in ("apikey", "secretkey", "accesskey", "accountkey"):
        return True
    if words[-1].endswith(("password", "passwd", "secret", "token")):  # PGPASSWORD, DBSECRET
        return True
    return words[-1] == "key" and len(words) > 1 and words[-2] in _KEY_OWNERS | _SECRET_WORDS


# words that say a secret wherever they stand in a setting's name (DB_PASSWORD_PROD, SECRET_KEY_BASE, AUTH_TOKEN_2)
_SAID_ANYWHERE = _SECRET_WORDS - {"pass", "pat", "sig"} | {"secrets", "apikey", "secretkey", "accesskey", "privatekey"}
# a value that names or counts rather than hides: a number, a duration or a size (3600, 15m, 1h30m, 512MB), a word
# or words of letters (id, created_at, user.email, AccessToken, cmd+shift+k), or code (a call: `buildKey(user, {`)
_PLAIN = re.compile(
    r"[+-]?\d+(?:\.\d+)?(?:(?:ms|s|m|h|d|w|y|sec|min|hours?|days?|[kmgt]i?b?)(?:\d+(?:ms|s|m|h))*)?|"
    r"[A-Za-z]+(?:[_.:/+-][A-Za-z]+)*|[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*\(.*",
    re.IGNORECASE,
)


def _loose_name(name: str) -> bool:
    """A setting's name that says a secret anywhere, not only by its last word (`_secret_name`): one of its words is
    secret, token, password, passphrase, pwd, credential(s) or apikey (DB_PASSWORD_PROD, SECRET_KEY_BASE,
    GH_TOKEN_CLASSIC, TOKEN_TTL), it ends in `key` (APP_KEY, LICENSE_KEY, OPENAI_KEY, PRIMARY_KEY) or a key's owner
    and `key` stand in it (FIREBASE_PRIVATE_KEY_ID, DD_API_KEY_V2). Its value is a secret only when `_made`: such
    names hold counts, durations and names too (TOKEN_TTL=3600, PASSWORD_MIN_LENGTH=12, SORT_KEY=created_at)."""
    words = _words(name)
    return bool(words) and (
        _secret_name(name)
        or any(w in _SAID_ANYWHERE or w.endswith(("password", "passwd", "secret", "token")) for w in words)
        or words[-1] == "key"
        or any(k == "key" and w in _KEY_OWNERS | _SECRET_WORDS for w, k in itertools.pairwise(words))
    )


# a key's characters (hex, base64, url-safe base64), after a short scheme (`base64:`, `sha256:`)
_KEY_CHARS = re.compile(r"(?:[A-Za-z0-9]{2,10}:)?(?P<body>[A-Za-z0-9+/=_-]{12,})")
# a name written with words and numbers, each piece with at most one run of digits: `X-Api-Key-V2`, `PBKDF2-SHA256`,
# `Argon2id`, `NIST-800-63B`, `prod/api-db-v2`, `strong2024` (not `hunter2hunter2`, `Wr0ub4dor`, `9f3a7c21be4d`)
_NAMED = re.compile(r"[A-Za-z]*\d*[A-Za-z]*(?:[/_.-][A-Za-z]*\d*[A-Za-z]*)*")


def _made(value: str) -> bool:
    """A value of a loosely named setting (`_loose_name`) that is a secret: 12 characters or more of a key's characters
    that look made (`_random`: `9f3a7c21be4d8e06f5a2`, `base64:Zm9vYmFy...`, `hunter2hunter2`); never a number, a
    duration, a size or a boolean, a word or a name (`created_at`, `AccessToken`, `X-Api-Key-V2`), a slug
    (`us-east-1`), a URL, a time, a dotted or a hex literal (`0x4AA4...`), a call or a phrase."""
    match = _KEY_CHARS.fullmatch(value)
    body = match["body"] if match else ""
    return bool(body) and _random(body) and not _PLAIN.fullmatch(body) and not _named(body) and body[:2] != "0x"


def _named(value: str) -> bool:
    return _NAMED.fullmatch(value) is not None


def _kept_setting(name: str, value: str, spaced: bool = False) -> bool:
    """`NAME=value` (`--name value`: `spaced`) left alone, a placeholder, a variable and code aside: a setting whose
    last word says secret (`_secret_name`) is redacted whatever its value (an auth, cookie, salt or signature setting
    when the value looks made: AUTH=basic stays); one that says it elsewhere, or given after a space, only a `_made`
    value (`--password hunter2hunter2`, not "the --password prompt")."""
    if _secret_name(name) and not spaced:
        return _weak_name(name) and not _random(value)
    return not (_loose_name(name) and _made(value))


def _weak_name(name: str) -> bool:
    """A setting for an auth string, a cookie, a salt or a signature: its values are often words (`AUTH=basic`)."""
    words = _words(name)
    return bool(words) and words[-1] in _WEAK_WORDS


def _password_name(name: str) -> bool:
    """A setting for a password (its values are passwords whatever they look like), not a key's or a token's name
    (whose values may be the names of keys: `signing_key: kid-2024-03`)."""
    words = _words(name)
    return bool(words) and words[-1] in {"password", "passwd", "passwort", "kennwort", "senha", "pass", "pwd", "密码"}


def mixed(value: str) -> bool:
    """A token with letters and digits (a real key), not a word or a slug."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


# CorrectHorseBattery (words of two letters or more, three or more of them), sunflower-meadow-lantern
_CAMEL_WORDS = re.compile(r"[A-Z]?[a-z]{2,}(?:[A-Z][a-z]{2,})*")
_JOINED_WORDS = re.compile(r"[a-z]{3,}(?:[-_][a-z]{3,}){2,}")


def _passphrase(value: str) -> bool:
    """A value said to be a password that looks like one: a key (letters and digits), words run together
    (CorrectHorseBatteryStaple, sunflower-meadow-lantern) or a generated mix; not a word that says where or how it
    is kept."""
    camel = _CAMEL_WORDS.fullmatch(value) is not None and sum(len(r) // 2 for r in re.findall("[a-z]+", value)) >= 3
    joined = (camel or _JOINED_WORDS.fullmatch(value) is not None) and (
        not value.islower() or "-" in value or "_" in value
    )
    return mixed(value) or joined or _scrambled(value)


def _scrambled(value: str) -> bool:
    """Eight characters or more of three sorts (lower case, upper case, digits, marks), or with three marks, or
    with its case changing four times: what a password generator makes (`kncSAh&Wacn$BKHb`, `RVK-+/$L(&/W$(=I`,
    `ZwVwsYpWIorgQObk`) in one piece, not a word (`Bitwarden`, `PostgreSQL`, `non-trivial`, `(see`). `-._'/:` are no
    marks."""
    marks = sum(not c.isalnum() and c not in "-._'/:" for c in value)
    sorts = (str.islower, str.isupper, str.isdigit)
    changes = len(re.findall(r"[a-z](?=[A-Z])|[A-Z](?=[a-z])", value))
    if len(value) < 8 or any(c.isspace() for c in value):  # (a phrase: "isaacs (http://blog.izs.me/)")
        return False
    return sum(any(sort(c) for c in value) for sort in sorts) + bool(marks) >= 3 or marks >= 3 or changes >= 4


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
    if _stands_in(value) or _said(value) or _code(match):
        return True
    if (match["sq"] or match["dq"]) and kind in _PASSWORD_WORDS and len(value.split()) >= 2:
        return False  # 'correct horse battery staple'
    plain = value.isalpha() and value.islower() and len(value) >= 5
    if plain and kind in _PASSWORD_WORDS and not _DESCRIBES.search(value) and value not in _NOT_A_PASSWORD:
        return False  # "the password is sunflower"
    return not _passphrase(value)


def _made_said(match: re.Match[str]) -> bool:
    """A value said to be a secret, with words after it, that a person or a generator made: digits with letters of
    both cases or a mark (`Wr0ub4dor-and-3`), a generated mix; not a rule's, a standard's or an algorithm's name
    (`min12chars`, `PBKDF2-SHA256`, `NIST-800-63B`, `Argon2id`, `GPT-4o`), nor a year."""
    value = (match["value"] or "").rstrip(".,;:!?)*_")
    varied = not (value.islower() or value.isupper()) or not value.isalnum()
    return not _named(value) and ((mixed(value) and len(value) >= 6 and varied) or _scrambled(value))


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
