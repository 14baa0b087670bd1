#!/usr/bin/env python3
"""Claude Code hooks for memsearch-lsp: `session-start`, `user-prompt-submit` and `stop`.

Each reads the hook's JSON on stdin and prints what Claude Code expects on stdout:
- session-start: starts a warm index owner for the session (`memsearch-lsp warm --detach`), then gives
  MEMORY.md, the newest summary and the last days' notes (`memsearch-lsp recent --session`) as
  `additionalContext`, within its budget;
- user-prompt-submit: the top hits for the prompt (straight from the warm owner's socket, else through
  `memsearch-lsp search --json`) with
  each hit's source, lines and id; MEMORY.md and summaries come first when they match as well, and a captured
  turn that repeats a curated note shown is left out; in a project without memory, the user memory's hits; while
  the owner's index pass runs (a first index), the part indexed so far, and the agent told so once;
- stop: returns at once; a detached process records the turn (`memsearch-lsp remember - --summarize`) under a
  heading that says what it was about, trimmed at paragraph or sentence ends outside code fences; of a turn too long
  to keep whole, the assistant's last messages (its answer) are kept and the narration of its first steps goes.
  Turns with nothing to remember (an acknowledgement, an empty answer) are skipped.
Recall and capture read what the user typed: the blocks Claude Code puts in a message (the IDE's opened file and
selection, `<system-reminder>`) are left out.
A hook never blocks the agent: on any failure it prints nothing, notes why on stderr and exits 0, and its calls
to the CLI and the index owner end within MEMSEARCH_HOOK_TIMEOUT seconds in all (a stuck owner is skipped, and
the agent told so once). In a folder without memory, SessionStart tells the agent once that
`memsearch-lsp init` would start one. Standard library only, Python 3.8 or later, so any `python3` runs it; the
CLI does all memory work (and its confinement rules, redaction of secrets and `<private>` spans included).

Settings (environment):
  MEMSEARCH_HOOK_CLI            the command to run (default: memsearch-lsp)
  MEMSEARCH_HOOK_CONTEXT_CHARS  at most this many characters of context per prompt (default 2000)
  MEMSEARCH_HOOK_SESSION_CHARS  at most this many characters of context at session start (default 4000)
  MEMSEARCH_HOOK_TOP_K          hits per prompt (default 3)
  MEMSEARCH_HOOK_DAYS           days of notes at session start (default 3)
  MEMSEARCH_HOOK_TURN_CHARS     at most this many characters of prompt and of answer kept per turn (default 1500)
  MEMSEARCH_HOOK_TIMEOUT        seconds a hook's CLI and index owner calls may take in all (default 10; a
                                detached capture gets 12 times as long)
  MEMSEARCH_HOOK_WARM_IDLE      seconds the warm index owner waits for a call before it exits (default: the
                                warm.idle_s setting, 600)
  MEMSEARCH_HOOK_CAPTURE        0 (or off, false, no) turns capture off: Stop records nothing
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import json
import os
import re
import shlex
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

COMMAND_ECHO = ("<local-command-stdout>", "<local-command-stderr>", "<command-name>", "<command-message>")
# blocks Claude Code puts in a user's message (and a prompt's hook input) that the user did not type: the IDE's context
# (<ide_opened_file>, <ide_selection>, <ide_diagnostics>, any <ide_...>), reminders, a background task's notice, a
# hook's output, bash mode's echo; a closed list of names, so a tag the user typed (<config>, <Widget>) stays. A block
# runs from an opening tag to the first closing tag of its name (and the blank after it); typed() pairs them itself, in
# time in proportion to the text (a pattern `<(name)...>.*?</\1>` read on to the end from each unclosed opening)
INJECTED_NAMES = r"(ide_[a-z_]+|system-reminder|task-notification|local-command-caveat|user-prompt-submit-hook" + (
    r"|bash-(?:input|stdout|stderr))"
)
INJECTED_OPEN = re.compile(r"<" + INJECTED_NAMES + r"(?:\s[^<>]*)?>")
INJECTED_CLOSE = re.compile(r"</" + INJECTED_NAMES + r"\s*>")
BLANK = re.compile(r"\s*")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
RETRY_S = 2.0  # a capture whose note the CLI could not write asks again after this long
EARLIER_PART = 200  # a captured turn too long to keep whole keeps of an earlier message at least this much, or none
SHORT_ANSWER = 160  # a go-ahead answered in fewer characters, with no number, path or name, is courtesy, not work
# a prompt made of these words alone (one of ACKNOWLEDGEMENTS at least; at most ACK_MAX_WORDS) thanks, agrees or lets
# the agent go on: "great, thanks!", "perfect, thank you", "nice work", "muito obrigado pela ajuda", "非常感谢"
# (English, Portuguese, Spanish, German, French and Chinese); a word of a request ("now", "add", "fix") makes it one
ACKNOWLEDGEMENTS = {
    "ok", "okay", "k", "kk", "thanks", "thank", "thx", "ty", "cheers", "appreciated", "yes", "yep", "yeah", "no",
    "nope", "y", "n", "sure", "great", "cool", "nice", "perfect", "awesome", "excellent", "amazing", "brilliant",
    "fantastic", "wonderful", "neat", "sweet", "good", "fine", "alright", "continue", "proceed", "lgtm", "done",
    "got", "right", "agreed", "bravo", "super", "top", "ahead", "on",
    "obrigado", "obrigada", "valeu", "vlw", "perfeito", "perfeita", "ótimo", "ótima", "otimo", "legal", "beleza",
    "certo", "sim", "blz", "excelente", "continua", "prossiga",
    "gracias", "perfecto", "perfecta", "genial", "vale", "bien", "claro", "listo", "dale", "estupendo", "sí", "si",
    "sigue", "continúa", "acuerdo",
    "danke", "dank", "dankeschön", "perfekt", "toll", "gut", "klasse", "prima", "passt", "ja", "weiter", "genau",
    "merci", "parfait", "parfaite", "génial", "oui", "d'accord", "daccord", "nickel", "continuez",
}  # fmt: skip
ACK_FILLERS = {
    "you", "a", "lot", "so", "much", "very", "really", "for", "the", "your", "all", "help", "again", "work", "job",
    "well", "looks", "sounds", "to", "me", "it", "that", "that's", "thats", "this", "is", "you're", "youre", "go",
    "please", "man", "mate", "guys", "just",
    "muito", "muita", "pela", "pelo", "ajuda", "por", "tudo", "trabalho", "bom", "boa", "demais",
    "muchas", "mil", "muy", "buen", "buena", "la", "ayuda", "todo", "de",
    "vielen", "schön", "sehr", "für", "die", "hilfe", "alles", "gute", "arbeit", "mach",
    "beaucoup", "très", "bon", "travail", "pour", "l'aide", "aide", "vas", "allez",
}  # fmt: skip
ACK_CHINESE = re.compile(
    "(?:非常感谢|太感谢了|谢谢你|谢谢您|谢谢|多谢|感谢|太好了|好的|很好|完美|不错|可以|没问题|辛苦了|继续|收到|明白|了解|太棒了|好棒|是的|好|行|棒|嗯)+"
)
ACK_MAX_WORDS = 8
SOURCE_LINE = 80  # room for the `<!-- source:lines id=... -->` line SessionStart puts above a note
CURATED_SHARE = 0.5  # a MEMORY.md or summary hit scoring at least this share of the best hit goes first
REPEAT_OVERLAP = 0.5  # a daily-log hit sharing this much of its words with a curated hit shown repeats it
WORD = re.compile(r"\w+")
WHOLE_TURN_BYTES = 60000  # a note and the turn that travels beside it, for redaction alone (`left_out`): < 64 KiB
PRIVATE_TAG = re.compile(r"<\s*(?:(/)\s*)?private\b[^<>]*>", re.IGNORECASE)  # <private>, </private >, <private a=b>
# a span to its first close, one left open to the end (what an unbalanced text hides; group 1: what it says)
PRIVATE_SPAN = re.compile(r"<\s*private\b[^<>/]*>(.*?)(?:<\s*/\s*private\s*>|\Z)", re.IGNORECASE | re.DOTALL)
# the `<` of a tag the CLI reads as <private> or </private> (it deletes control characters first: `<\x01private>` too)
QUIET = r"[\s\x00-\x08\x0b-\x1f\x7f-\x9f]*"
TAG_OPENS = re.compile(rf"<(?={QUIET}(?:/{QUIET})?private\b[^<>]*>)", re.IGNORECASE)


def typed(text: str) -> str:
    """What the user typed of a prompt: `text` without the blocks Claude Code injected (INJECTED), stripped; "" when
    it held only those (an IDE's opened file and selection say what is on screen, not what the user asks). Each
    opening tag, left to right, takes the first closing tag of its name after it; one inside a block taken is text of
    that block, one with no closing tag after it stays."""
    closes: dict[str, list[int]] = {}  # a name's closing tags' starts, in order
    ends: dict[int, int] = {}  # a closing tag's start: its end
    for close in INJECTED_CLOSE.finditer(text):
        closes.setdefault(close.group(1), []).append(close.start())
        ends[close.start()] = close.end()
    if not closes:
        return text.strip()
    kept, done = [], 0
    for opening in INJECTED_OPEN.finditer(text):
        starts = closes.get(opening.group(1))
        if opening.start() < done or not starts:
            continue
        at = bisect.bisect_left(starts, opening.end())
        if at == len(starts):
            continue
        kept.append(text[done : opening.start()])
        done = BLANK.match(text, ends[starts[at]]).end()
    kept.append(text[done:])
    return "".join(kept).strip()


def without_private(text: str) -> str:
    """`text` without its `<private>` spans, nested ones whole, one left open to the end (as the CLI reads them,
    core/redact.py): what a private span says never leaves this process."""
    out, depth, at = [], 0, 0
    for tag in PRIVATE_TAG.finditer(text):
        if tag.group(0)[:-1].rstrip().endswith("/"):
            continue  # <private/> hides nothing
        if not depth and not tag.group(1):
            out.append(text[at : tag.start()])
        if depth or not tag.group(1):
            depth += -1 if tag.group(1) else 1
            at = tag.end()
    if depth:  # unbalanced ("<private> tags" said in prose): each span to its first close, the last to the end
        return PRIVATE_SPAN.sub("", text)
    return "".join(out) + text[at:]


def as_written(said: str) -> str:
    """What the assistant said, its `<private>` tags as text (`‹private>`): the tag it writes marks nothing, so no
    tag it names ("wrap it in a `<private>` tag. Also we fixed ...") makes the rest of its answer private, here or in
    the CLI. What the user's prompts said in private is kept out of it apart (`without_hidden`)."""
    return TAG_OPENS.sub("\u2039", said)


TIME_HEADING = re.compile(r"^\d{1,2}:\d{2}(?:\s+\(\d+\))?$")
TURNS_KEPT_S = 3 * 86400  # how long the record of a captured turn is kept (one note per turn)
DEADLINE = [0.0]  # when this hook's calls must have ended (time.monotonic); set by main
BUDGET_S = [10]  # the seconds they get in all (MEMSEARCH_HOOK_TIMEOUT; a detached capture's, 12 times that)
PING_S = 2.0  # how long an index owner may take to say it is there (a stopped one never does)
OWNER_PROTOCOL = 2  # memsearch_lsp/core/process/protocol.py PROTOCOL: an owner that says another is asked nothing
INDEX_WAIT_S = 0.8  # how long a prompt waits for the owner to bring its index up to date (a first index: longer)
EMPTY_WAIT_S = 4.0  # and, when the part indexed so far has no hit, how much longer (a small memory's first pass)
INDEXING = [False]  # an owner asked for this prompt was still indexing (its hits: of the part indexed so far)


class HookError(Exception):
    """A reason to skip this hook (noted on stderr; the agent goes on)."""


class NoMemory(HookError):
    """The project has no memory (`memsearch-lsp init` starts one)."""


class Stuck(HookError):
    """The index owner or the CLI did not answer within the hook's time."""


class Busy(HookError):
    """The index is busy: its owner did not answer, or another process holds it (worth asking again soon)."""


BUSY = re.compile(r"does not answer|holds the index|is gone|\bbusy\b", re.I)


def left() -> float:
    """Seconds this hook's calls may still take; Stuck when none are left."""
    remaining = DEADLINE[0] - time.monotonic()
    if remaining <= 0.05:
        raise Stuck(f"memory calls took more than {BUDGET_S[0]} s")
    return remaining


def setting(name: str, default: int) -> int:
    value = os.environ.get(f"MEMSEARCH_HOOK_{name}", "").strip()
    try:
        return max(1, int(value)) if value else default
    except ValueError as exc:
        raise HookError(f"MEMSEARCH_HOOK_{name}={value!r} is not a number") from exc


LOG_NAME = re.compile(r"\d{4}-\d{2}-\d{2}(?:\.\d+)?\.md")  # a daily log: 2026-02-09.md, 2026-02-09.2.md


def project(event: dict[str, Any]) -> Path:
    """The project's folder, or the memory workspace above it (Claude Code started in `src/pkg`): the nearest
    folder that holds a memory (`opted_in`), of this user's own (a `memory/` another user planted in /tmp or a shared
    folder would read and receive the turns), below home and `/`."""
    start = Path(os.environ.get("CLAUDE_PROJECT_DIR") or event.get("cwd") or os.getcwd())
    stops = {Path.home(), Path(start.anchor or "/")}
    for folder in [start, *start.parents]:
        if folder in stops:
            break
        found = [folder / m for m in ("memory", ".memsearch.toml", ".memsearch") if os.path.lexists(folder / m)]
        if found and opted_in(folder):  # (a link is another user's when it or its target is)
            mine = all(
                m.lstat().st_uid == os.geteuid() and (not m.exists() or m.stat().st_uid == os.geteuid()) for m in found
            )
            return folder if mine else start
    return start


def opted_in(folder: Path) -> bool:
    """`folder` holds a memory the hooks may read and write: what `memsearch-lsp init` makes (a `.memsearch.toml`),
    an index (`.memsearch/`), or a `memory/` holding MEMORY.md or a daily log. A code package named `memory/` is
    none: the hooks index nothing there and write no turn into it."""
    if os.path.lexists(folder / ".memsearch.toml") or os.path.isdir(folder / ".memsearch"):
        return True
    try:
        return any(e.name == "MEMORY.md" or LOG_NAME.fullmatch(e.name) for e in os.scandir(folder / "memory"))
    except OSError:
        return False


def workspace(event: dict[str, Any]) -> Path:
    """The project, when it holds a memory (`opted_in`); NoMemory otherwise (nothing is asked of the CLI for it)."""
    where = project(event)
    if not opted_in(where):
        raise NoMemory(f"no memory here: {where} (`memsearch-lsp init` starts one)")
    return where


def command(event: dict[str, Any], subcommand: str, *args: str, where: Path | None = None) -> list[str]:
    return [
        *shlex.split(os.environ.get("MEMSEARCH_HOOK_CLI", "memsearch-lsp")),
        subcommand,
        "--workspace",
        str(where or project(event)),
        *args,
    ]


def cli(
    event: dict[str, Any], subcommand: str, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> str:
    argv, wait_s = command(event, subcommand, *args), left()
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=wait_s, check=False, env=env)
    except subprocess.TimeoutExpired as exc:  # (the time this call had: what was left of the hook's)
        said = f"`{argv[0]} {subcommand}` did not answer within {wait_s:.0f} s (this hook's calls get {BUDGET_S[0]} s)"
        raise Stuck(said) from exc
    except OSError as exc:
        raise HookError(f"{argv[0]} failed: {exc}") from exc
    if done.returncode != 0:  # with --json the CLI's error is {"error": {"message", "hint"}} on stdout
        try:
            error = json.loads(done.stdout)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            error = ""
        message = done.stderr.strip() or error or f"{argv[0]} exited with {done.returncode}"
        raise (NoMemory if "no memory here" in message else Busy if BUSY.search(message) else HookError)(message)
    return done.stdout


def detach(argv: list[str], stdin: str = "") -> None:
    """Start `argv` in its own session and return at once (it outlives this hook)."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    if process.stdin is not None:
        try:
            process.stdin.write(stdin)
        finally:
            process.stdin.close()


def user_root() -> Path | None:
    """The user memory's folder (`$XDG_DATA_HOME/memsearch-lsp`, as `memsearch_lsp.core.process.user.user_root`
    names it) when the user has one."""
    base = os.environ.get("XDG_DATA_HOME", "").strip()
    data = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"
    root = data / "memsearch-lsp"
    return root if (root / "memory").is_dir() else None


def owner_running(event: dict[str, Any], root: Path | None = None) -> bool:
    """True when a process (an editor's server, a warm owner) serves this project's index (or `root`'s): one listens
    on the socket this program names for it (a stopped one too: the system takes the connection). What a record
    says is never trusted: a `.memsearch/server.json` committed in a repository, naming pid 1, turned the warm
    owner off."""
    sock = owner_socket(event, root)
    if sock is None:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(1.0)
        try:
            conn.connect(sock)
        except (socket.timeout, BlockingIOError):  # noqa: UP041 (3.8) a full backlog: it listens
            return True
        except OSError:  # refused: a socket left by a killed owner
            return False
    return True


def owner_socket(event: dict[str, Any], where: Path | None = None) -> str | None:
    """The socket of the process serving this project's index (or `where`'s), when it is a socket of this user:
    the path `memsearch_lsp.core.process.owner.socket_path_for` names (never one read from a file)."""
    root = (where or project(event)).resolve()
    path = root / ".memsearch" / "server.sock"
    if len(str(path)) > 100:
        folder = Path(tempfile.gettempdir()) / f"memsearch-{os.getuid()}"
        try:
            info = folder.lstat()
        except OSError:
            return None
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) != 0o700:
            return None
        path = folder / (hashlib.sha256(str(root).encode()).hexdigest()[:16] + ".sock")
    try:
        info = path.lstat()
    except OSError:
        return None
    private = stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid() and not stat.S_IMODE(info.st_mode) & 0o077
    return str(path) if private else None


def owner_call(sock: str, op: str, wait_s: float | None = None, **params: Any) -> Any:
    """One request to the index owner (JSON-RPC 2.0, one message a line: memsearch_lsp/core/process/protocol.py);
    OSError or ValueError when it fails, or when the process answering is not of this user; Stuck when it does not
    answer within the hook's time, or `wait_s` (a `ping` within PING_S: a stopped owner costs a prompt that, not the
    hook's whole time, and the user memory's does not take the workspace's recall with it)."""
    wait_s = PING_S if op == "ping" and wait_s is None else wait_s
    timeout = min(left(), wait_s) if wait_s is not None else left()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect(sock)
            if hasattr(socket, "SO_PEERCRED"):
                peer = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
                if struct.unpack("3i", peer)[1] != os.geteuid():
                    raise ValueError(f"{sock} is served by another user's process")
            conn.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": op, "params": params}).encode() + b"\n")
            with conn.makefile("rb") as reader:
                reply = json.loads(reader.readline() or b"{}")
                while reply.get("method") == "$/progress":  # notifications before the reply
                    reply = json.loads(reader.readline() or b"{}")
        except socket.timeout as exc:  # noqa: UP041 (TimeoutError only from Python 3.10; this runs on 3.8)
            raise Stuck(f"the index owner did not answer `{op}` within {round(timeout, 1):g} s") from exc
    if "result" not in reply:
        raise ValueError((reply.get("error") or {}).get("message") or "the index owner did not answer")
    return reply["result"]


def owner_ping(sock: str) -> None:
    """The owner at `sock` answers a ping in this release's protocol; HookError (this prompt's recall is skipped,
    said once) for one of another release, whose operations may take other arguments or answer another shape."""
    about = owner_call(sock, "ping")
    if not isinstance(about, dict) or about.get("protocol") != OWNER_PROTOCOL:
        pid = about.get("pid", "?") if isinstance(about, dict) else "?"
        raise HookError(
            f"the index is served by pid {pid}, a memsearch-lsp of another version: restart it (close and reopen "
            f"the editor, or `kill {pid}`)"
        )


def search(event: dict[str, Any], query: str, top_k: int) -> list[dict[str, Any]]:
    """Hits for `query`: straight from a running index owner (no process to start), else through the CLI
    (which opens the index, or waits for the owner SessionStart started)."""
    try:
        workspace(event)
    except NoMemory:  # a project without memory: the user's own memory is still recalled
        return user_hits(event, query, top_k)
    sock = owner_socket(event)
    if sock is not None:
        try:
            owner_ping(sock)
            hits = indexed_hits(sock, query, top_k)
            return merge(hits, user_hits(event, query, top_k), top_k)
        except Stuck:
            raise  # the CLI would wait for the same owner: skip this prompt
        except (OSError, ValueError) as exc:
            sys.stderr.write(f"memsearch hook: the index owner did not answer ({exc}); using the CLI\n")
    warm(event)
    try:
        said = cli(event, "search", "-k", str(top_k), "--json", "-", stdin=query)  # (never on the command line)
    except NoMemory:  # a project without memory/: the user's own memory is still recalled
        return user_hits(event, query, top_k)
    found: list[dict[str, Any]] = json.loads(said)["hits"]
    return found


def indexed_hits(sock: str, query: str, top_k: int) -> list[dict[str, Any]]:
    """The owner's hits (it answered a ping) once it brought its index up to date, waiting INDEX_WAIT_S at most: an
    index pass that runs longer (a first index of a large memory) goes on, and the prompt is answered from the part
    indexed so far, as MCP and the editor answer it (INDEXING says so); the hook never waits for a whole pass. When
    that part has no hit yet, the pass is given EMPTY_WAIT_S more (a small memory's first pass ends in seconds)."""
    hits: list[dict[str, Any]] = []
    for wait_s in (INDEX_WAIT_S, EMPTY_WAIT_S):
        try:
            owner_call(sock, "index", wait_s=wait_s)
            indexing = False
        except Stuck:
            indexing = True
        hits = owner_call(sock, "search", query=query, top_k=top_k)
        if hits or not indexing:
            break
    INDEXING[0] = INDEXING[0] or indexing
    return hits


def user_hits(event: dict[str, Any], query: str, top_k: int) -> list[dict[str, Any]]:
    """Hits of the user memory: from its running owner (the warm one SessionStart starts); without one (it went
    idle, or the user memory began mid-session) from the CLI, while a warm owner starts for the next prompt."""
    root = user_root()
    if root is None:
        return []
    sock = owner_socket(event, root)
    try:
        if sock is None:
            warm(event)
            said = cli(event, "search", "--scope", "user", "-k", str(top_k), "--json", "-", stdin=query)
            return [dict(h, scope="user") for h in json.loads(said)["hits"]]
        owner_ping(sock)
        return [dict(h, scope="user") for h in indexed_hits(sock, query, top_k)]
    except (OSError, ValueError, HookError) as exc:
        sys.stderr.write(f"memsearch hook: the user memory did not answer ({exc})\n")
        return []


def merge(first: list[dict[str, Any]], second: list[dict[str, Any]], top_k: int) -> list[dict[str, Any]]:
    """Two searches' hits by relevance (comparable across indexes), each list in its own order."""
    out: list[dict[str, Any]] = []
    a, b = list(first), list(second)
    while (a or b) and len(out) < top_k:
        take_a = bool(a) and (not b or relevance(a[0]) >= relevance(b[0]))
        out.append((a if take_a else b).pop(0))
    return out


def warm(event: dict[str, Any]) -> None:
    """Keep an index owner for the session (and one for the user memory), so each prompt's search skips
    opening an index."""
    seconds = setting("WARM_IDLE", 0)  # 0: unset, the warm.idle_s setting decides
    idle = ["--idle", str(seconds)] if seconds else []
    mine = user_root()
    try:
        if opted_in(project(event)) and not owner_running(event):
            detach(command(event, "warm", *idle))
        if mine is not None and not owner_running(event, mine):
            detach(command(event, "warm", *idle, where=mine))
    except OSError as exc:
        sys.stderr.write(f"memsearch hook: no warm index owner: {exc}\n")


def bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def context(event_name: str, text: str, limit: int) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": bounded(text, limit)}}


def state(name: str) -> Path | None:
    """A file in this user's private folder for the hooks' records (`<tmp>/memsearch-<uid>/hooks`); None when
    that folder is not private to this user."""
    folder = Path(tempfile.gettempdir()) / f"memsearch-{os.getuid()}"
    try:
        for path in (folder, folder / "hooks"):
            try:
                path.mkdir(mode=0o700)
            except FileExistsError:
                pass
            info = path.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
                return None
    except OSError:
        return None
    return folder / "hooks" / name


def first_time(name: str) -> bool:
    """True the first time `name` is asked for (its record is created then); False after, or when no record
    can be kept."""
    path = state(name)
    if path is None:
        return False
    try:
        os.close(os.open(str(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except OSError:
        return False


def forget_time(name: str) -> None:
    path = state(name)
    if path is not None:
        try:
            path.unlink()
        except OSError:
            pass


def key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "replace")).hexdigest()[:32]


def stuck_once(event: dict[str, Any], event_name: str, why: Exception) -> dict[str, Any] | None:
    """Say once (until the owner answers again) that memory was skipped because it did not answer in time."""
    if not first_time(f"stuck-{key(str(project(event).resolve()))}"):
        return None
    return context(event_name, f"memsearch: memory recall skipped for now: {why}.", 400)


SESSION_INTRO = (
    "Long-term memory of this project (memsearch): MEMORY.md, the latest summary and the last days' notes "
    "(newest first). Search for more with `memsearch-lsp search QUERY` (or the memory_search MCP tool) and show "
    "a whole section with `memsearch-lsp expand ID`.\n\n"
)


def session_start(event: dict[str, Any]) -> dict[str, Any] | None:
    budget = setting("SESSION_CHARS", 4000)  # the whole context, its intro too
    room = max(1, budget - len(SESSION_INTRO))  # for the notes and their source lines
    try:
        chars = str(max(1, room - SOURCE_LINE))  # (the first note, cut to that, fits with its source line)
        workspace(event)
        notes = json.loads(
            cli(event, "recent", "--session", "--days", str(setting("DAYS", 3)), "--chars", chars, "--json")
        )["notes"]
    except NoMemory:
        if not first_time(f"init-{key(str(project(event).resolve()))}"):
            return None  # said once for this folder
        return context(
            "SessionStart",
            f"This project ({project(event)}) has no memsearch memory yet: running `memsearch-lsp init` in it would "
            "start one (memory/ with MEMORY.md and daily logs; past decisions recalled before each prompt, each "
            "turn recorded). Mention it to the user if long-term memory would help; this is said once.",
            600,
        )
    warm(event)
    if not notes:
        return None
    parts = [f"<!-- {n['source']}:{n['start_line']}-{n['end_line']} id={n['id']} -->\n{n['content']}" for n in notes]
    text = parts[0]  # whole notes that fit with their source lines (the CLI's budget counts content alone)
    for note, part in zip(notes[1:], parts[1:]):
        if len(text) + 2 + len(part) <= room:
            text += "\n\n" + part
        elif note.get("kind") == "daily":
            break  # (newest first: no older note is given while a newer one is left out)
    return context("SessionStart", SESSION_INTRO + at_a_line(text, room), budget)


def at_a_line(text: str, limit: int) -> str:
    """`text` cut at a line's end within `limit` characters, never inside a line; at a word when that cut would
    leave out more than half (a note whose paragraph is one long line: its beginning, not its heading alone)."""
    if len(text) <= limit:
        return text
    head = text[: max(0, limit - 2)]
    cut = head.rsplit("\n", 1)[0].rstrip() if "\n" in head else ""
    return f"{cut}\n…" if len(cut) >= len(head) // 2 else at_a_word(text, limit)


def curated(source: str) -> bool:
    name = source.rsplit("/", 1)[-1]
    return name == "MEMORY.md" or name.startswith("summary-")


def words(text: str) -> set[str]:
    return {w.lower() for w in WORD.findall(text) if len(w) > 2}


def repeats(hit: dict[str, Any], shown: list[dict[str, Any]]) -> bool:
    mine = words(hit["snippet"])
    return bool(mine) and any(len(mine & words(h["snippet"])) >= REPEAT_OVERLAP * len(mine) for h in shown)


def ranked(hit: dict[str, Any]) -> float:
    """A hit's ranking score: `rank_score` (its `score` is the relevance; an owner before 2026-12-06 sent the
    ranking score as `score`)."""
    return float(hit.get("rank_score", hit["score"]))


def relevance(hit: dict[str, Any]) -> float:
    """A hit's relevance (0..1, comparable across indexes): `score` (`relevance` from an owner before 2026-12-06)."""
    return float(hit.get("relevance", hit.get("score", 0.0)))


def choose(hits: list[dict[str, Any]], top_k: int) -> list[dict[str, Any]]:
    """The hits to show: curated ones (MEMORY.md, summaries) that match as well first, then by score; a daily
    note that repeats a curated hit among the candidates (a captured turn that says a MEMORY.md decision again,
    ranked above it) gives way to that curated hit, in its place."""
    best = max((ranked(h) for h in hits), default=0.0)
    candidates = [h for h in hits if curated(h["source"])]
    chosen = [h for h in candidates if ranked(h) >= CURATED_SHARE * best][:top_k]
    for hit in hits:
        repeated = [] if curated(hit["source"]) else [h for h in candidates if repeats(hit, [h])]
        for shown in repeated or [hit]:
            if len(chosen) < top_k and shown not in chosen:
                chosen.append(shown)
    return chosen


def user_prompt_submit(event: dict[str, Any]) -> dict[str, Any] | None:
    prompt = typed(whole(str(event.get("prompt") or "")))
    if len(prompt) < 3 or prompt.startswith("/"):
        return None
    top_k = setting("TOP_K", 3)
    try:
        hits = choose(search(event, bounded(prompt, 1000), 2 * top_k + 2), top_k)
        texts = bodies(event, hits)
    except Stuck as exc:
        sys.stderr.write(f"memsearch hook: skipped: {exc}\n")
        return stuck_once(event, "UserPromptSubmit", exc)
    here = key(str(project(event).resolve()))
    forget_time(f"stuck-{here}")  # it answers again: say so again next time
    indexing = INDEXING[0] and first_time(f"indexing-{here}")
    if not INDEXING[0]:
        forget_time(f"indexing-{here}")  # a later first index is said again
    budget = setting("CONTEXT_CHARS", 2000)
    if not hits:
        return context("UserPromptSubmit", INDEXING_NOTE, budget) if indexing else None
    lines = ["Possibly relevant memories (memsearch; `memsearch-lsp expand ID` shows a whole section):"]
    lines += [INDEXING_NOTE] if indexing else []
    share = max(160, (budget - len("\n".join(lines))) // len(hits) - 100)
    for hit, body in zip(hits, texts):
        text = trim(body, share).replace("\n", "\n  ")
        where = (
            "user:" if hit.get("scope") == "user" else ""
        ) + f"{hit['source']}:{hit['start_line']}-{hit['end_line']}"
        lines.append(f"- {where} {shown_heading(str(hit['heading']), body)} (id {hit['id']}):\n  {text}")
    return context("UserPromptSubmit", "\n".join(lines), budget)


INDEXING_NOTE = (
    "memsearch: the memory is still indexing (a first index); recall comes from the part indexed so far until it is"
    " done (said once)."
)


def shown_heading(heading: str, body: str) -> str:
    """A bare `HH:MM` heading named by the note's first line with the time beside it (as the CLI shows it)."""
    if not TIME_HEADING.match(heading.strip()):
        return heading
    first = next((line for line in body.split("\n") if line.strip()), "")
    topic = " ".join(re.sub(r"^\s*(?:[-*+>]|\d+[.)])\s+|\*\*|__|`+", "", first).split())
    if len(topic) > 60:
        topic = topic[:60].rsplit(" ", 1)[0].rstrip(",.;:") + "…"
    return f"{topic} ({heading.strip()})" if topic else heading


def bodies(event: dict[str, Any], hits: list[dict[str, Any]]) -> list[str]:
    """Each hit's section without its heading line, from a running index owner; its snippet otherwise."""
    socks = {"workspace": owner_socket(event)}
    mine = user_root()
    socks["user"] = owner_socket(event, mine) if mine is not None else None
    out = []
    for hit in hits:
        body = str(hit.get("snippet") or "")
        sock = socks.get(str(hit.get("scope") or "workspace"))
        if sock is not None:
            try:
                chunk = owner_call(sock, "expand", chunk_id=hit["id"])
                lines = str(chunk["content"]).split("\n") if chunk else []
                if lines and lines[0].lstrip().startswith("#"):
                    lines = lines[1:]
                body = "\n".join(lines).strip() or body
            except Stuck:
                raise
            except (OSError, ValueError, KeyError, TypeError):
                pass
        out.append(body)
    return out


# -- capture -----------------------------------------------------------------------------------
def text_of(message: Any) -> str:
    """The text of a transcript message's content (a string or a list of blocks; tool blocks ignored)."""
    content = message.get("content") if isinstance(message, dict) else message
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def attached(message: Any) -> str:
    """What a user's message holds besides text, as a prompt's words: "(image)" for a pasted image (a document, any
    other block but a tool's result likewise); "" for none."""
    content = message.get("content") if isinstance(message, dict) else None
    kinds = [b.get("type") for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    other = [k for k in kinds if isinstance(k, str) and k not in ("text", "tool_result")]
    return f"({other[0]})" if other else ""


def last_turn(transcript: Path) -> tuple[str, list[str], list[str]]:
    """The last prompt the user typed, what the assistant said after it (the text of each of its messages, in order:
    the cause it found before its tool calls as well as its closing words), and what every `<private>` span the user
    typed in the session said (an earlier prompt's private name is kept out of a later turn's answer too; the
    assistant's words, "wrap it in a `<private>` tag", mark nothing), from the JSONL transcript."""
    prompt, said, hidden = "", [], []
    for line in transcript.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if (
            not isinstance(entry, dict)
            or entry.get("isMeta")
            or entry.get("isSidechain")
            or entry.get("isCompactSummary")
        ):
            continue  # the agent's notes to itself, a subagent's turns, a compacted session's summary
        text = text_of(entry.get("message") or {}).strip()
        if entry.get("type") == "user":
            text = typed(text)  # (a message of injected blocks alone is no prompt)
        if entry.get("type") == "user" and text.startswith(COMMAND_ECHO):
            continue  # a slash command's echo ("<local-command-stdout>..."): no prompt the user typed
        if entry.get("type") == "user" and (text or attached(entry.get("message"))):
            prompt, said = text or attached(entry.get("message")), []  # (an image alone is a prompt too)
            hidden += [h.strip() for h in PRIVATE_SPAN.findall(text)]  # (what the user typed; never the assistant's)
        elif entry.get("type") == "assistant" and text:
            said.append(text)
    return prompt, said, hidden


def blocks(text: str) -> list[tuple[str, bool]]:
    """Paragraphs and code blocks of `text`, in order: (block, is_code); a fence is one block, never split."""
    out: list[tuple[str, bool]] = []
    current: list[str] = []
    fence = ""
    for line in text.split("\n"):
        opened = FENCE.match(line)
        if fence:
            current.append(line)
            if (
                opened
                and opened.group(1)[0] == fence[0]
                and len(opened.group(1)) >= len(fence)
                and not line.strip().strip(fence[0])
            ):
                out.append(("\n".join(current), True))
                current, fence = [], ""
        elif opened:
            if current:
                out.append(("\n".join(current), False))
            current, fence = [line], opened.group(1)
        elif not line.strip():
            if current:
                out.append(("\n".join(current), False))
            current = []
        else:
            current.append(line)
    if current:
        out.append(("\n".join(current) + (f"\n{fence}" if fence else ""), bool(fence)))
    return out


def trim(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut between paragraphs or after a sentence, never inside a code block
    (one that does not fit is left out and said so)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    kept: list[str] = []
    used = 0
    for block, code in blocks(text):
        room = limit - used - 2
        if len(block) <= room:
            kept.append(block)
            used += len(block) + 2
            continue
        if code:
            kept.append(f"(a code block of {block.count(chr(10)) + 1} lines left out)")
            used += 40
        else:
            cuts = [m.start() for m in SENTENCE_END.finditer(block) if m.start() <= room - 2]
            if cuts and cuts[-1] > 0:
                kept.append(block[: cuts[-1]].rstrip() + " …")
            break
        if used >= limit:
            break
    return "\n\n".join(kept).strip() or at_a_word(text.split("\n", 1)[0], limit)


def labelled(label: str, text: str) -> str:
    """`**Label:** text`; a text that opens with a heading (an answer's `## Summary`) starts on a line of its own, where
    the CLI makes it a bold line, never a literal `##` after the label."""
    return f"**{label}:**{chr(10) * 2 if HEADING_START.match(text) else ' '}{text}"


HEADING_START = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")


def outcome(said: list[str], limit: int) -> str:
    """What the assistant said in the turn (its messages, in order) within `limit` characters: all of it when it fits;
    else the last messages whole, as many as fit (the answer, and the cause found just before it), then the one
    before them cut at its paragraph or sentence ends when EARLIER_PART characters are left. What goes is the
    narration of the turn's first steps ("Let me look at ...", "Now I'll check ..."), never its conclusion."""
    turn = "\n\n".join(said)
    if len(turn) <= limit:
        return turn
    kept: list[str] = []
    room = limit
    for message in reversed(said):
        room -= 2 if kept else 0
        if len(message) <= room:
            kept.insert(0, message)
            room -= len(message)
            continue
        if not kept:  # the answer alone is too long: its beginning, as a prompt is kept
            kept.append(trim(message, limit))
        elif room >= EARLIER_PART:
            kept.insert(0, trim(message, room))
        break
    return "\n\n".join(kept)


def at_a_word(text: str, limit: int) -> str:
    """`text` cut at a space within `limit` characters: never inside a word, where a key cut short would be
    too short for the CLI's redaction to know it (a word longer than the limit goes whole)."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)]
    return cut[: max(cut.rfind(" "), 0)].rstrip() + "…"


def go_ahead(prompt: str) -> bool:
    """The prompt only acknowledges or lets the agent go on ("ok", "thanks a lot", "continue", "muito obrigado"): it
    says no topic. A question ("is that right?", "is it done?") never is: its answer is what was asked."""
    if any(mark in prompt for mark in "?？¿"):
        return False
    said = re.sub(r"[^\w\s']", " ", prompt.lower().replace("\u2019", "'")).split()
    acks = [w for w in said if w in ACKNOWLEDGEMENTS or ACK_CHINESE.fullmatch(w)]
    return 0 < len(said) <= ACK_MAX_WORDS and bool(acks) and all(w in acks or w in ACK_FILLERS for w in said)


def whole(text: str) -> str:
    """`text` with each lone surrogate (half an emoji a JSON escape left) as U+FFFD: UTF-8 cannot carry it, so a
    prompt or an answer holding one was neither recalled nor recorded."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def nothing_to_remember(prompt: str, answer: str) -> bool:
    """A turn with no answer, or a go-ahead answered with courtesy ("thanks" -> "You're welcome."); a go-ahead whose
    answer reports work ("ok" -> "Done: merged PR 482 and deployed v2.3.1 ...") is kept."""
    said = answer.strip()
    courtesy = len(said) < SHORT_ANSWER and not re.search(r"\d|\w[/_.]\w|`", said)  # no number, path or name
    terse = len(prompt.strip()) < 12 and len(said) < 40  # "Deploy it" -> "Done."
    return not said or terse or (go_ahead(prompt) and courtesy)


def topic(prompt: str, limit: int = 72) -> str:
    """A heading that says what the turn was about: the prompt's first sentence, cut at a word. Only Markdown's
    marks go (`code`, *emphasis*, _emphasis_, # and > at the start, [links]): a name such as DB_PASSWORD=...
    stays whole, so the CLI's redaction still knows it; a password that held a mark (`Wq7*Rt5...`) the CLI knows
    without it too (core/notes.py `_MARKS`: the same marks)."""
    first = next((line for line in prompt.split("\n") if line.strip() and not FENCE.match(line)), "")
    first = re.sub(r"^\s*(?:[#>]+\s*)+", "", first)
    first = re.sub(r"`+([^`]*\s[^`]*)`+", r'"\1"', first)  # a `quoted phrase` stays quoted: a pass phrase in it too
    first = " ".join(re.sub(r"[`*\[\]]|(?<!\w)_+|_+(?!\w)", "", first).split())
    first = SENTENCE_END.split(first, 1)[0].rstrip(".!?:;, ")
    if len(first) > limit:
        cut = first[:limit]  # at a word; a first word longer than the limit (a URL) goes whole: redaction must see it
        first = (cut.rsplit(" ", 1)[0] if " " in cut else first.split(" ", 1)[0]).rstrip(".,;:") + "…"
    closed = before_open_quote(first)
    return first if closed == first else closed.rstrip(".,;:=( ") + "…"


QUOTE = re.compile("[\"\u201c\u201d]|(?<!\\w)'|'(?!\\w)")  # a double quote, or a single one that is no apostrophe
CLOSES = {'"': '"', "\u201c": "\u201d", "'": "'"}
# a word that names a secret (the CLI's redaction keys on these, in its five languages): at a word's start or a
# camelCase part (DB_PASSWORD, apiKey, pass phrase, Passwort, mot de passe; not bypass or monkey), then a few words
SECRET_WORD = re.compile(
    r"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))(?i:pass|pwd|pw\b|pin\b|secret|token|key|cred|auth|cookie|salt|kennwort"
    r"|senha|contrase)|密码|口令"
)
SECRET_BEFORE = 60  # how far before a quote such a word is looked for


def before_open_quote(text: str) -> str:
    """`text` up to the quote it leaves open after a word that names a secret: a heading cut inside a quoted value
    (`password = "correct horse battery…`, or a sentence end inside it) would hold a part of a pass phrase that no
    redaction rule knows without its closing quote; the CLI redacts a quoted value whole. A quote after no such word
    (a quoted question, `27" monitor`, an error quoted) stays."""
    opened: list[tuple[str, int]] = []  # the quotes open, innermost last
    for mark in QUOTE.finditer(text):
        quote, at = mark.group(), mark.start()
        if opened and quote == CLOSES[opened[-1][0]]:
            opened.pop()
        elif quote in CLOSES and not (quote == "'" and text[at - 1 : at].isalnum()):
            opened.append((quote, at))
    named = [at for _, at in opened if SECRET_WORD.search(text, max(0, at - SECRET_BEFORE), at)]
    return text[: named[0]] if named else text


def now() -> dt.datetime:
    value = os.environ.get("MEMSEARCH_NOW", "").strip()
    return dt.datetime.fromisoformat(value) if value else dt.datetime.now()


def capture_off() -> bool:
    return os.environ.get("MEMSEARCH_HOOK_CAPTURE", "").strip().lower() in ("0", "off", "false", "no")


def new_turn(event: dict[str, Any], prompt: str, answer: str) -> bool:
    """True the first time this turn (this project, session, prompt and answer) is seen: the same turn captured
    again (a Stop hook that fires twice) is not recorded again; a second "go ahead" of the session answered with
    other work is another turn. Records older than TURNS_KEPT_S go."""
    session = str(event.get("session_id") or event.get("transcript_path") or "")
    if not session:
        return True
    path = state("")
    if path is not None:
        now_s = time.time()
        for old in path.glob("turn-*"):
            try:
                if now_s - old.stat().st_mtime > TURNS_KEPT_S:
                    old.unlink()
            except OSError:
                pass
    return first_time(turn_key(event, prompt, answer)) or path is None


def turn_key(event: dict[str, Any], prompt: str, answer: str) -> str:
    session = str(event.get("session_id") or event.get("transcript_path") or "")
    return f"turn-{key(str(project(event).resolve()), session, prompt, answer)}"


def private_values(hidden: list[str]) -> list[str]:
    """What `<private>` spans said that an answer may repeat, longest first: each span whole, and each of its values
    (a word with a digit or a mark: an SSN, a date of birth, a password; not the words around them)."""
    found = {h for h in hidden if len(h) >= 4}
    for span in hidden:
        for word in span.split():
            value = word.strip(".,;:!?()[]{}\"'`")
            if len(value) >= 4 and not value.isalpha():
                found.add(value)
    return sorted(found, key=len, reverse=True)


MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(?:[a-z]{0,6}\.?)"  # January, Jan., Sept
# a date as it is written: 1984-03-07 (or / or .), 19840307, 1984年3月7日, 07/03/1984 and 03/07/1984 (or - or ., a
# two-digit year too), 7 March 1984, 07-Mar-1984, March 7, 1984
DATE = re.compile(
    r"(?<![\w./-])(?:(?P<year>\d{4})(?P<s>[-/.]?)(?P<month>\d{1,2})(?P=s)(?P<day>\d{1,2})"
    r"|(?P<cjk>\d{4})\s*年\s*(?P<cm>\d{1,2})\s*月\s*(?P<cd>\d{1,2})\s*日?"
    r"|(?P<a>\d{1,2})(?P<t>[-/.])(?P<b>\d{1,2})(?P=t)(?P<y>\d{4}|\d{2})"
    rf"|(?P<d>\d{{1,2}})(?:st|nd|rd|th)?[\s-]+(?:of\s+)?(?P<named>{MONTH}),?[\s-]+(?P<of>\d{{4}})"
    rf"|(?P<name>{MONTH})[\s-]+(?P<on>\d{{1,2}})(?:st|nd|rd|th)?,?[\s-]+(?P<in>\d{{4}}))(?!\d)",
    re.IGNORECASE,
)


def days(date: re.Match[str]) -> set[tuple[int, int, int]]:
    """The days (year, month, day) a DATE match may say: two for 03/07/1984 (7 March or 3 July)."""
    said = date.groupdict()
    if said["year"]:
        if not said["s"] and (len(said["month"]), len(said["day"])) != (2, 2):  # (19840307: no separator, 8 digits)
            return set()
        read = [(said["year"], said["month"], said["day"])]
    elif said["cjk"]:
        read = [(said["cjk"], said["cm"], said["cd"])]
    elif said["y"]:
        years = [said["y"]] if len(said["y"]) == 4 else [f"19{said['y']}", f"20{said['y']}"]  # (07/03/84)
        read = [(y, m, d) for y in years for m, d in ((said["b"], said["a"]), (said["a"], said["b"]))]
    else:
        month = str(MONTHS.index((said["named"] or said["name"])[:3].lower()) + 1)
        read = [(said["of"] or said["in"], month, said["d"] or said["on"])]
    return {(int(y), int(m), int(d)) for y, m, d in read if 1 <= int(m) <= 12 and 1 <= int(d) <= 31}


def without_private_dates(hidden: list[str], answer: str) -> str:
    """`answer` with each date a `<private>` span said taken out, however it writes it ("born 7 March 1984" said in
    private, "DOB 1984-03-07" in the answer): no part of it ("-03-07") is left once its year goes."""
    private = {day for span in hidden for date in DATE.finditer(span) for day in days(date)}
    return DATE.sub(lambda date: "[private]" if days(date) & private else date.group(), answer) if private else answer


# words that say nothing alone: a phrase of a private span made of them alone ("is the") is no private phrase
COMMON = {
    "a", "an", "the", "and", "or", "but", "if", "of", "at", "by", "for", "to", "in", "on", "is", "are", "was",
    "were", "be", "been", "it", "its", "this", "that", "these", "those", "with", "from", "as", "i", "me", "my", "we",
    "our", "you", "your", "he", "him", "his", "she", "her", "they", "them", "their", "not", "no", "so", "do", "did",
    "does", "have", "has", "had", "will", "would", "can", "could", "should"
}  # fmt: skip


def without_private_phrases(hidden: list[str], answer: str) -> str:
    """`answer` with what the `<private>` spans said taken out where it repeats them in words: each run of its words
    that the spans hold in the same order (two words or more, one of them not a common word: "Maria Gonzalez",
    "diagnosed with multiple sclerosis"), and each name a span holds (a capitalised word that is not common)."""
    pairs: set[tuple[str, str]] = set()
    names: set[str] = set()
    for span in hidden:
        said = WORD.findall(span)
        pairs.update(
            (a.lower(), b.lower())
            for a, b in zip(said, said[1:])  # noqa: RUF007 (Python 3.8 has no itertools.pairwise)
            if not {a.lower(), b.lower()} <= COMMON and max(len(a), len(b)) >= 3
        )
        names.update(w for w in said if w[:1].isupper() and len(w) >= 3 and w.lower() not in COMMON)
    words = list(WORD.finditer(answer))
    marked = [w.group() in names for w in words]
    for n in range(len(words) - 1):
        if (words[n].group().lower(), words[n + 1].group().lower()) in pairs:
            marked[n] = marked[n + 1] = True
    out, at, n = [], 0, 0
    while n < len(words):
        if not marked[n]:
            n += 1
            continue
        end = n
        while (
            end + 1 < len(words) and marked[end + 1] and not answer[words[end].end() : words[end + 1].start()].strip()
        ):
            end += 1
        out += [answer[at : words[n].start()], "[private]"]
        at, n = words[end].end(), end + 1
    return "".join(out) + answer[at:]


def without_hidden(hidden: list[str], message: str) -> str:
    """`message` without what the user kept private (`hidden`), repeated whole, in part or in its words."""
    message = without_private_dates(hidden, message)  # (a date in another form, before its year alone goes)
    for said in private_values(hidden):  # what the user kept private, repeated in the answer (whole or in part)
        message = message.replace(said, "[private]")
    return without_private_phrases(hidden, message)  # ... or in its words: a name, a diagnosis


# what may name a secret in a turn too long to send whole (`left_out`): a setting whose name says secret, password,
# token, key or auth and its value (quoted or bare), a URL's password, a key of a common provider by its prefix; the
# CLI's redaction decides which are secrets. One pass, each piece bounded: time in proportion to the turn.
SECRETISH = re.compile(
    r"(?<![\w.-])(?P<name>[\w.-]{0,60}(?i:pass|pwd|secret|token|key|auth|cred|cookie|salt|signature|session)"
    r"[\w.-]{0,60})"
    r"[\"']?[ \t]{0,3}(?::=|[:=]|(?i:\bis\b))[ \t]{0,3}(?:\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|\S{1,300})"
    r"|\b[A-Za-z][\w+.-]{0,20}://[^\s/@:]{1,100}:[^\s/@]{1,200}@[^\s/]{1,200}"
    r"|\b(?:sk|pk|rk|ghp|gho|ghs|ghu|github_pat|glpat|xox[abprs]|AKIA|ASIA|AIza|eyJ|hf|npm|pypi)[\w.+/=-]{12,400}"
)
SECRETISH_BYTES = 8000  # of a long turn, what may name its secrets, sent before its beginning
# which go first: a setting named for a password, secret, key or credentials (a URL's password and a provider's key,
# with no name, too), then one for a token, auth, salt or signature, then the rest (a session id, a cookie)
STRONGER = (re.compile(r"(?i)pass|pwd|secret|key|cred"), re.compile(r"(?i)token|auth|salt|signature"))


def secretish(turn: str, seen: int) -> str:
    """What may name a secret in `turn` past its first `seen` characters (sent anyway), each once, the strongest
    first, at most SECRETISH_BYTES: of a kind too many to send, as many from the end as from the start (a key
    pasted last is as likely to be said again as the first)."""
    kinds: list[dict[str, int]] = [{}, {}, {}]  # (a dict keeps each once, in the turn's order)
    for match in SECRETISH.finditer(turn, max(0, seen - 1000)):  # (a piece is under 1,000: one cut at `seen` too)
        if match.end() > seen:
            name = match["name"]
            strength = next((n for n, words in enumerate(STRONGER) if words.search(name)), 2) if name else 0
            kinds[strength].setdefault(match.group(), len(match.group().encode("utf-8")) + 1)
    chosen: list[str] = []
    room = SECRETISH_BYTES
    for kind in kinds:  # (a kind that fits goes whole; of one that does not, a piece from each end in turn)
        pieces, first, last = list(kind), list[str](), list[str]()
        start, end = 0, len(pieces)
        while start < end:
            from_end = len(last) <= len(first)
            piece = pieces[end - 1] if from_end else pieces[start]
            if kind[piece] > room:
                break
            room -= kind[piece]
            if from_end:
                end -= 1
                last.append(piece)
            else:
                start += 1
                first.append(piece)
        chosen += first + last[::-1]
    return "\n".join(chosen)


def left_out(prompt: str, answer: str, room: int) -> str:
    """The whole turn as a `<private>` span after the note: never written, but the CLI's redaction reads it, so a
    secret the trim left out (`DB_PASSWORD=X` at the end of a long prompt) is redacted where the note says it again
    ("the store now holds X"); at most `room` bytes of it (a note is at most 64 KiB). Of a turn longer than that,
    what may name a secret past the part that goes anyway (`secretish`) goes first, then its beginning."""
    # (no `<` inside: no tag can close the span early, whatever the turn holds: `</priv</private>ate>`, a control
    # character the CLI deletes inside a tag)
    turn = f"{prompt}\n\n{answer}".replace("<", "\u2039")
    if len(turn.encode("utf-8")) > room:
        sent = turn.encode("utf-8")[: max(0, room - SECRETISH_BYTES - 2)].decode("utf-8", "ignore")
        turn = secretish(turn, len(sent)) + "\n\n" + turn
    kept = turn.encode("utf-8")[: max(0, room)].decode("utf-8", "ignore")
    return f"\n\n<private>{kept}</private>" if kept else ""


def capture(event: dict[str, Any]) -> dict[str, Any] | None:
    """Record the turn (run detached by `stop`); what the user's `<private>` spans say never leaves this process."""
    workspace(event)  # (a code package named memory/ receives no turn)
    prompt, said, hidden = "", [], []
    last = str(event.get("last_assistant_message") or "").strip()
    transcript = Path(str(event.get("transcript_path") or ""))
    if event.get("transcript_path") and transcript.is_file():
        prompt, said, hidden = last_turn(transcript)  # the last message ends the transcript, unless not written yet
    if last not in "\n\n".join(said):
        said.append(last)
    prompt = without_private(whole(prompt)).strip()
    said = [m for m in (without_hidden(hidden, as_written(whole(m)).strip()) for m in said) if m]
    answer = "\n\n".join(said)
    if nothing_to_remember(prompt, answer) or not new_turn(event, prompt, answer):
        return None
    limit = setting("TURN_CHARS", 1500)
    note = f"{labelled('Asked', trim(prompt, limit))}\n\n{labelled('Outcome', outcome(said, limit))}"
    note += left_out(prompt, answer, WHOLE_TURN_BYTES - len(note.encode("utf-8")))
    when = now()  # (the note's day is the heading's, however long the summariser takes: past midnight too)
    heading = f"{when:%H:%M} {topic(answer if go_ahead(prompt) else prompt) or 'Turn'}"  # ("ok": what was done)
    while True:  # an owner that stalls a moment (a long embed) is asked again while this capture has time
        try:
            # (the heading in the environment: a command line is readable by any local user, an environment is not)
            env = {**summary_budget(), "MEMSEARCH_HOOK_HEADING": heading, "MEMSEARCH_NOW": when.isoformat()}
            cli(event, "remember", "-", "--summarize", stdin=note, env=env)
            return None
        except NoMemory:
            raise
        except HookError as exc:
            if not isinstance(exc, (Busy, Stuck)) or DEADLINE[0] - time.monotonic() < RETRY_S + 1:
                forget_time(turn_key(event, prompt, answer))  # not recorded: the next Stop of this turn tries again
                raise  # (a refusal, such as a log that is no regular file, is not asked again and again)
            time.sleep(RETRY_S)


def summary_budget() -> dict[str, str]:
    """The CLI's environment with a summariser endpoint's time bounded by what this capture has left (its tries:
    compact.timeout_s x (1 + compact.max_retries), 3 minutes by default, outlived a capture's 2): an endpoint that
    hangs then leaves the CLI the time to keep the raw turn, as it does when the endpoint fails. A bound the user
    set in the environment stays."""
    env = dict(os.environ)
    if "MEMSEARCH_COMPACT_TIMEOUT_S" not in env and "MEMSEARCH_COMPACT_MAX_RETRIES" not in env:
        env["MEMSEARCH_COMPACT_TIMEOUT_S"] = str(max(5, int((left() - 20) / 3)))
        env["MEMSEARCH_COMPACT_MAX_RETRIES"] = "2"
    return env


def stop(event: dict[str, Any]) -> dict[str, Any] | None:
    if event.get("stop_hook_active") or capture_off():
        return None  # a continuation forced by another Stop hook: the turn is recorded once
    detach([sys.executable, os.path.abspath(__file__), "capture"], json.dumps(event))
    return None


HOOKS = {"session-start": session_start, "user-prompt-submit": user_prompt_submit, "stop": stop, "capture": capture}


def main(argv: list[str]) -> int:
    try:
        if len(argv) != 1 or argv[0] not in HOOKS:
            raise HookError(f"usage: memsearch_hook.py {{{'|'.join(HOOKS)}}}")
        event = json.loads(sys.stdin.read() or "{}")
        if not isinstance(event, dict):
            raise HookError("the hook input is not a JSON object")
        BUDGET_S[0] = setting("TIMEOUT", 10) * (12 if argv[0] == "capture" else 1)
        DEADLINE[0] = time.monotonic() + BUDGET_S[0]
        output = HOOKS[argv[0]](event)
        if output:
            sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
    except Exception as exc:  # never block the agent: note it and go on
        sys.stderr.write(f"memsearch hook: skipped: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
