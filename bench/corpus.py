"""Deterministic, seeded synthetic agent memories: realistic daily logs at a chosen number of chunks.

`generate(root, chunks, seed)` writes `root/memory/MEMORY.md` and daily logs `root/memory/YYYY-MM-DD.md`
(newest = END_DATE, going back one day per file) so that `chunk_markdown` yields exactly `chunks` chunks:
every file has a `# date` title (one chunk) and `##` sections of 150-900 characters (one chunk each).
The needles of `bench/queries/generated.json` (hand-written facts with labelled queries) replace one
generated section on their date, so the labelled set works at every size. Only `random.Random(seed)`
drives the choices: the same arguments give the same bytes on every machine and Python version.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GENERATOR_VERSION = 1
END_DATE = dt.date(2026, 2, 27)
NEEDLES_FILE = Path(__file__).resolve().parent / "queries" / "generated.json"

PEOPLE = [
    "Dana",
    "Marco",
    "Priya",
    "Lena",
    "Tomasz",
    "Aisha",
    "Kenji",
    "Sofia",
    "Noah",
    "Ines",
    "Rahul",
    "Mei",
    "Oskar",
    "Fatima",
    "Jonas",
    "Chloe",
    "Diego",
    "Hana",
    "Victor",
    "Amara",
]
SERVICES = [
    "cart",
    "pricing",
    "payments",
    "ledger",
    "inventory",
    "shipping",
    "notifications",
    "auth",
    "search",
    "recommendations",
    "billing",
    "reporting",
    "gateway",
    "catalogue",
    "reviews",
    "loyalty",
    "fraud",
    "returns",
    "warehouse",
    "analytics",
    "checkout",
    "tax",
    "profile",
]
TECH = {
    "PostgreSQL": ["13", "14", "15", "16", "17"],
    "Redis": ["6.2", "7.0", "7.2", "7.4"],
    "Kafka": ["3.5", "3.6", "3.7", "3.8"],
    "Kubernetes": ["1.27", "1.28", "1.29", "1.30", "1.31"],
    "Python": ["3.10", "3.11", "3.12", "3.13"],
    "Node.js": ["18", "20", "22"],
    "Go": ["1.21", "1.22", "1.23"],
    "OpenSearch": ["2.11", "2.13", "2.15"],
    "RabbitMQ": ["3.12", "3.13"],
    "nginx": ["1.24", "1.25", "1.26"],
    "Envoy": ["1.28", "1.29", "1.30"],
    "Terraform": ["1.6", "1.7", "1.8"],
    "Grafana": ["10.2", "10.4", "11.0"],
    "ClickHouse": ["23.8", "24.3", "24.8"],
    "Celery": ["5.3", "5.4"],
    "Django": ["4.2", "5.0", "5.1"],
    "FastAPI": ["0.110", "0.111", "0.115"],
    "gRPC": ["1.60", "1.62", "1.64"],
}
SYMPTOMS = [
    "returned HTTP 502 for some requests",
    "timed out under load",
    "leaked database connections",
    "dropped messages from the queue",
    "served stale prices",
    "ran out of memory",
    "double-charged a few orders",
    "stalled on a lock",
    "lost its consumer group offsets",
    "logged thousands of retries",
    "rejected valid tokens",
    "slowed down after a deploy",
    "filled the disk with logs",
    "failed health checks in one zone",
    "sent duplicate emails",
]
CAUSES = [
    "a missing index on the {table} table",
    "the connection pool being too small ({n} connections)",
    "a retry loop without backoff",
    "a clock skew of {n} seconds between nodes",
    "an expired TLS certificate on the internal load balancer",
    "a config flag left on from a test",
    "a slow query doing a sequential scan over {table}",
    "a memory leak in the {lib} client",
    "a race between two workers updating the same {table} row",
    "DNS caching in the JVM sidecar",
    "the autoscaler reacting {n} minutes too late",
    "a schema change that locked {table}",
]
FIXES = [
    "added the index concurrently",
    "raised the pool to {n} and added a timeout",
    "added exponential backoff with jitter",
    "pinned NTP on every node",
    "rotated the certificate and added an expiry alert",
    "removed the flag and added a check in CI",
    "rewrote the query to use the covering index",
    "upgraded the client library",
    "took a row lock with SELECT ... FOR UPDATE",
    "lowered the DNS TTL to 30 s",
    "scaled on queue depth instead of CPU",
    "split the migration into three steps",
]
TABLES = [
    "orders",
    "order_items",
    "payments",
    "carts",
    "users",
    "invoices",
    "shipments",
    "refunds",
    "events",
    "sessions",
    "coupons",
    "stock_levels",
]
LIBS = ["Redis", "Kafka", "HTTP", "S3", "Stripe", "PostgreSQL", "gRPC"]
TOPICS = [
    "the Q{q} roadmap",
    "on-call load",
    "the {service} API contract",
    "flaky tests in CI",
    "the migration plan",
    "error budgets",
    "the {service} data model",
    "hiring for the platform team",
    "the staging environment",
    "cost of the {tech} cluster",
    "the release checklist",
    "alert fatigue",
    "the incident review process",
]
AGREEMENTS = [
    "ship the {service} change behind a feature flag",
    "write an ADR before the next sprint",
    "move the {service} jobs to the shared worker pool",
    "keep the old endpoint for {n} more weeks",
    "add contract tests between {service} and {service2}",
    "review dashboards every Monday",
    "drop support for {tech} {old}",
    "batch the writes to {table} every {n} seconds",
]
NOTES = [
    "{tech} {ver} changes the default of `{setting}`; set it explicitly before upgrading.",
    "The {service} service reads its config from `{path}` at start-up, not on every request.",
    "{tech} {ver} needs at least {n} GB of memory per node for our load.",
    "Retries in the {service} client are capped at {n}; the gateway has its own retry budget.",
    "The {table} table grows by about {n}k rows per day; vacuum keeps up.",
    "Use `make {target}` to rebuild the {service} fixtures; it takes about {n} minutes.",
    "Dashboards for {service} live in the `{service}-overview` folder in Grafana.",
    "The {service} team prefers squash merges and conventional commit messages.",
    "Local tests need `{env}=1`, otherwise they call the real {lib} sandbox.",
]
SETTINGS = [
    "max_connections",
    "statement_timeout",
    "maxmemory-policy",
    "fetch.min.bytes",
    "worker_concurrency",
    "idle_timeout",
    "keepalive_requests",
    "session.timeout.ms",
    "shared_buffers",
    "work_mem",
]
TARGETS = ["fixtures", "seed", "golden", "schemas", "protos", "snapshots"]
ENVS = ["OFFLINE", "USE_FAKES", "NO_NETWORK", "LOCAL_ONLY", "SKIP_SANDBOX"]
PREFIXES = ["ERR", "E", "SVC", "DB", "NET", "AUTH", "PAY", "CART"]
WORDS = ["TIMEOUT", "CONFLICT", "LOCKED", "INVALID", "EXHAUSTED", "REJECTED", "STALE", "OVERFLOW", "MISMATCH"]


@dataclass(frozen=True)
class CorpusInfo:
    root: Path
    chunks: int
    files: int
    bytes: int
    seed: int
    digest: str  # sha256 over every file's name and text, to prove determinism

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "chunks": self.chunks,
            "files": self.files,
            "bytes": self.bytes,
            "seed": self.seed,
            "digest": self.digest,
        }


def load_needles() -> list[dict[str, Any]]:
    return json.loads(NEEDLES_FILE.read_text(encoding="utf-8"))["needles"]


class _Writer:
    """Fills templates from one random.Random."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def pick(self, items: list[str]) -> str:
        return items[self.rng.randrange(len(items))]

    def fill(self, template: str, tech: str = "") -> str:
        r, p = self.rng, self.pick
        tech = tech or p(sorted(TECH))
        service = p(SERVICES)
        return template.format(
            table=p(TABLES),
            n=r.choice([2, 3, 4, 5, 8, 10, 12, 15, 20, 30, 40, 50, 64, 100, 128, 200]),
            lib=p(LIBS),
            service=service,
            service2=p([s for s in SERVICES if s != service]),
            tech=tech,
            ver=p(TECH[tech]),
            old=TECH[tech][0],
            q=r.randint(1, 4),
            setting=p(SETTINGS),
            path=f"/etc/{service}/{p(['app', 'service', 'runtime'])}.toml",
            target=p(TARGETS),
            env=p(ENVS),
        )

    def code(self) -> str:
        if self.rng.random() < 0.5:
            return f"{self.pick(PREFIXES)}_{self.pick(WORDS)}_{self.rng.randint(100, 9999)}"
        return f"HTTP {self.pick(['500', '502', '503', '504', '409', '429'])}"

    def time(self) -> str:
        h, m = self.rng.randint(0, 23), self.rng.choice([0, 5, 10, 15, 20, 30, 40, 45, 50])
        return f"{h:02d}:{m:02d}"

    def section(self, day: dt.date) -> str:
        kind = self.rng.choices(
            ["meeting", "incident", "decision", "release", "debug", "todo", "note", "perf", "review"],
            weights=[16, 10, 8, 10, 14, 12, 16, 6, 8],
        )[0]
        return getattr(self, f"_{kind}")(day)

    def _bullets(self, lines: list[str]) -> str:
        return "\n".join(f"- {line}" for line in lines)

    def _meeting(self, day: dt.date) -> str:
        who, topic = self.pick(PEOPLE), self.fill(self.pick(TOPICS))
        lines = [
            f"Talked with {who} about {topic}.",
            f"{who} raised that {self.fill(self.pick(NOTES)).rstrip('.').lower()}.",
            f"Agreed to {self.fill(self.pick(AGREEMENTS))}.",
        ]
        if self.rng.random() < 0.6:
            lines.append(f"{self.pick(PEOPLE)} to follow up by {day + dt.timedelta(days=self.rng.randint(2, 14))}.")
        return f"## Meeting with {who} about {topic}\n\n{self._bullets(lines)}"

    def _incident(self, day: dt.date) -> str:
        service, code = self.pick(SERVICES), self.code()
        start = self.time()
        lines = [
            f"From {start} UTC the {service} service {self.pick(SYMPTOMS)}.",
            f"Error code in the logs: {code}.",
            f"Root cause: {self.fill(self.pick(CAUSES))}.",
            f"Fix: {self.fill(self.pick(FIXES))}.",
        ]
        if self.rng.random() < 0.5:
            lines.append(
                f"About {self.rng.randint(1, 30)}% of requests were affected for "
                f"{self.rng.randint(4, 90)} minutes; postmortem owner is {self.pick(PEOPLE)}."
            )
        return f"## Incident: {service} {code}\n\n{self._bullets(lines)}"

    def _decision(self, day: dt.date) -> str:
        a, b = self.rng.sample(sorted(TECH), 2)
        purpose = self.pick(
            [
                "the {service} queue",
                "caching in {service}",
                "the {service} read models",
                "background jobs",
                "service-to-service calls",
                "the reporting pipeline",
            ]
        )
        purpose = self.fill(purpose)
        lines = [
            f"Decision: use {a} instead of {b} for {purpose}.",
            f"Reason: {self.fill(self.pick(NOTES))}",
            f"{b} stays in place for existing workloads until {self.pick(['Q2', 'Q3', 'Q4'])}.",
        ]
        return f"## Decision: {a} over {b} for {purpose}\n\n{self._bullets(lines)}"

    def _release(self, day: dt.date) -> str:
        service = self.pick(SERVICES)
        version = f"{self.rng.randint(1, 4)}.{self.rng.randint(0, 20)}.{self.rng.randint(0, 9)}"
        lines = [
            f"Released {service} {version}; canary at {self.pick(['1', '5', '10'])}% for "
            f"{self.pick(['15', '30', '60'])} minutes, then 100%.",
            f"Includes: {self.fill(self.pick(AGREEMENTS))}.",
            f"Rollback command: `argocd app rollback {service}` if error rates rise.",
        ]
        if self.rng.random() < 0.4:
            lines.append(f"Known issue: {self.pick(SYMPTOMS)} once in staging; tracked as {self.code()}.")
        return f"## Release {service} {version}\n\n{self._bullets(lines)}"

    def _debug(self, day: dt.date) -> str:
        service = self.pick(SERVICES)
        symptom = self.pick(SYMPTOMS)
        lines = [
            f"Investigated why {service} {symptom} in staging.",
            f"Suspected {self.fill(self.pick(CAUSES))}, but the traces pointed elsewhere.",
            f"Found it: {self.fill(self.pick(CAUSES))}.",
            f"Next: {self.fill(self.pick(FIXES))}.",
        ]
        return f"## Debugging {service}\n\n{self._bullets(lines)}"

    def _todo(self, day: dt.date) -> str:
        lines = [f"{self.pick(PEOPLE)} to {self.fill(self.pick(AGREEMENTS))}." for _ in range(self.rng.randint(2, 5))]
        return f"## Follow-ups\n\n{self._bullets(lines)}"

    def _note(self, day: dt.date) -> str:
        tech = self.pick(sorted(TECH))
        lines = [self.fill(self.pick(NOTES), tech) for _ in range(self.rng.randint(2, 4))]
        return f"## Notes on {tech}\n\n{self._bullets(lines)}"

    def _perf(self, day: dt.date) -> str:
        service = self.pick(SERVICES)
        rps, p95 = self.rng.randint(2, 60) * 100, self.rng.randint(40, 900)
        lines = [
            f"Load test of {service} with k6 reached {rps:,} requests per second; p95 latency {p95} ms.",
            f"The bottleneck was {self.fill(self.pick(CAUSES))}.",
            f"CPU at {self.rng.randint(30, 95)}% on {self.rng.randint(2, 12)} pods.",
        ]
        return f"## Load test {service}\n\n{self._bullets(lines)}"

    def _review(self, day: dt.date) -> str:
        service, who = self.pick(SERVICES), self.pick(PEOPLE)
        lines = [
            f"Reviewed {who}'s pull request on the {service} service ({self.rng.randint(20, 600)} changed lines).",
            f"Asked for a test around {self.fill(self.pick(CAUSES))}.",
            f"Style: {self.fill(self.pick(NOTES))}",
        ]
        return f"## Code review for {service}\n\n{self._bullets(lines)}"


MEMORY_MD_SECTIONS = [
    (
        "Team",
        "- {a} leads the backend; {b} owns infrastructure and the on-call rotation.\n"
        "- {c} is the product manager for payments and checkout.",
    ),
    (
        "Stack",
        "- Services are Python 3.12 with FastAPI, deployed on Kubernetes 1.30.\n"
        "- PostgreSQL 16 is the primary database; Redis 7.2 caches reads for 5 minutes.",
    ),
    ("Conventions", "- API errors follow RFC 9457 problem details.\n- Dates are YYYY-MM-DD and times are UTC."),
    ("Preferences", "- Small pull requests, under 400 changed lines.\n- Prefer boring technology."),
]


def _memory_md(rng: random.Random, sections: int) -> tuple[str, int]:
    a, b, c = rng.sample(PEOPLE, 3)
    parts = ["# Project Memory", "Long-term notes curated by the team; agents append daily logs beside this file."]
    used = 1  # the title plus the intro paragraph form one chunk
    writer = _Writer(rng)
    for title, body in MEMORY_MD_SECTIONS[: max(0, sections)]:
        parts.append(f"## {title}\n\n{body.format(a=a, b=b, c=c)}")
        used += 1
    for n in range(max(0, sections - len(MEMORY_MD_SECTIONS))):
        tech = writer.pick(sorted(TECH))
        parts.append(f"## {tech} notes {n + 1}\n\n- {writer.fill(writer.pick(NOTES))}")
        used += 1
    return "\n\n".join(parts) + "\n", used


def generate(root: Path, chunks: int, seed: int = 7) -> CorpusInfo:
    """Write a memory of exactly `chunks` chunks under `root/memory` (which must not exist or be empty)."""
    if chunks < 10:
        raise ValueError("a corpus needs at least 10 chunks")
    rng = random.Random(f"memsearch-bench:{GENERATOR_VERSION}:{seed}:{chunks}")
    folder = Path(root) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    needles: dict[str, list[dict[str, Any]]] = {}
    for needle in load_needles():
        needles.setdefault(needle["date"], []).append(needle)

    digest = hashlib.sha256()
    total_bytes = files = 0

    def write(name: str, text: str) -> None:
        nonlocal total_bytes, files
        (folder / name).write_text(text, encoding="utf-8")
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
        total_bytes += len(text.encode())
        files += 1

    memory_text, used = _memory_md(rng, min(20, chunks // 50))
    write("MEMORY.md", memory_text)
    writer = _Writer(rng)
    day = END_DATE
    while used < chunks:
        planted = needles.get(day.isoformat(), [])
        want = max(rng.randint(6, 14), len(planted) + 1)
        want = min(want, chunks - used - 1)  # the `# date` title is a chunk too
        if want < 1:  # one chunk left: a title-only file
            want = 0
        sections = [writer.section(day) for _ in range(want - min(len(planted), want))]
        for needle in planted[:want]:
            sections.insert(rng.randint(0, len(sections)), f"## {needle['heading']}\n\n{needle['body'].strip()}")
        write(f"{day.isoformat()}.md", "\n\n".join([f"# {day.isoformat()}", *sections]) + "\n")
        used += 1 + len(sections)
        day -= dt.timedelta(days=1)
    return CorpusInfo(Path(root), used, files, total_bytes, seed, digest.hexdigest())


def count_chunks(root: Path) -> int:
    """Chunks as the indexer sees them (slow-ish: parses every file)."""
    from memsearch_lsp.core.chunks import chunk_markdown

    folder = Path(root) / "memory"
    return sum(
        len(chunk_markdown(p.read_text(encoding="utf-8"), f"memory/{p.name}")) for p in sorted(folder.glob("*.md"))
    )


def ensure(chunks: int, seed: int = 7, base: Path | None = None) -> Path:
    """A generated workspace for (chunks, seed), reused while its stamp matches; returns its root."""
    from bench.common import work_dir

    root = (base or work_dir()) / f"corpus-{chunks}-s{seed}-v{GENERATOR_VERSION}"
    stamp = root / "corpus.json"
    needles_hash = hashlib.sha256(NEEDLES_FILE.read_bytes()).hexdigest()[:12]
    if stamp.is_file() and json.loads(stamp.read_text()).get("needles") == needles_hash:
        return root
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    info = generate(root, chunks, seed)
    stamp.write_text(json.dumps(dict(info.to_dict(), needles=needles_hash)))
    return root


def main(args: Any) -> None:
    import tempfile
    import time

    from bench.common import emit, table

    sizes = [args.chunks] if args.chunks else ([1000] if args.quick else [1000, 10000, 100000])
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-corpus-") as tmp:
            start = time.perf_counter()
            info = generate(Path(tmp), size, args.seed)
            seconds = time.perf_counter() - start
            counted = count_chunks(Path(tmp)) if size <= 10000 or not args.quick else None
            again = generate(Path(tmp) / "again", size, args.seed).digest
        rows.append(
            emit(
                "corpus",
                {
                    "chunks": size,
                    "counted": counted,
                    "files": info.files,
                    "mib": round(info.bytes / 2**20, 2),
                    "seed": args.seed,
                    "seconds": round(seconds, 2),
                    "digest": info.digest[:16],
                    "deterministic": again == info.digest,
                },
            )
        )
    table(rows, ["chunks", "counted", "files", "mib", "seconds", "digest", "deterministic"], "corpus")
