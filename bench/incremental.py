"""Incremental indexing over LSP: one-line edit -> didSave -> `memsearch/indexed` -> searchable.

On a private copy of the built 1k / 10k workspace, a fresh server starts (its start-up reconcile must embed
nothing); five recent daily logs are opened; then 20 edits, round robin over them, alternating "change a
line" (a sentence appended to a bullet) and "insert a line" (a new bullet). Each edit is sent as an editor
would: didChange (full text), the file written to disk, didSave. We time didSave -> the next
`memsearch/indexed`; didSave -> searchable (the edited chunk's new id, computed as the indexer computes it,
answers `memsearch.expand`); and didSave -> found (a `memsearch/search`, topK 20, for the new sentence returns
that chunk; `found` counts the edits for which it did, which is a matter of ranking, not of indexing).
Goal: searchable <= watch.debounce_ms + 500 ms. Medians of 20 edits.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import emit, log, percentile, table
from bench.lsp_client import LspClient, LspError, text_document
from bench.workspace import built, clone
from memsearch_lsp.config import DEFAULT_MODEL
from memsearch_lsp.core.chunks import chunk_markdown

EDITS = 20
FILES = 5
DEBOUNCE_MS = 1500  # config.WatchConfig default


SENTENCES = [
    "the warehouse scanner firmware now retries Bluetooth pairing three times",
    "quarterly invoices for Belgian customers must show the reverse-charge VAT note",
    "the mobile checkout hides the coupon field behind a tap on small screens",
    "our Grafana alert for disk usage fires at eighty percent on database hosts",
    "the marketing site moved its images to a CDN bucket in Frankfurt",
    "Lena prefers pairing sessions on Thursdays after the planning meeting",
    "the loyalty points expire after eighteen months without a purchase",
    "support tickets tagged urgent page the on-call engineer after ten minutes",
    "the fraud model flags orders shipped to freight forwarders for manual review",
    "nightly exports to the data lake are compressed with zstd level nine",
    "gift cards cannot be used to buy other gift cards",
    "the returns portal asks for a photo when the item is damaged",
    "password reset links stay valid for thirty minutes",
    "the iOS widget shows the delivery window instead of the carrier name",
    "we archive Slack incident channels ninety days after the postmortem",
    "the search index rebuild runs on Sunday nights with half the replicas",
    "warehouse robots pause when the aisle sensor reports a person",
    "the recommendation carousel is hidden for users who opted out of tracking",
    "new interns get read-only production access for their first month",
    "the printer in the Lisbon office needs a driver from the vendor portal",
]


def edit(text: str, n: int) -> tuple[str, str, str]:
    """(new text, query sentence, marker word): change or insert one line after a bullet."""
    lines = text.split("\n")
    bullets = [i for i, line in enumerate(lines) if line.startswith("- ")]
    at = bullets[(n * 7) % len(bullets)]
    marker = f"zq{n:03d}x"
    sentence = f"Note {marker}: {SENTENCES[n % len(SENTENCES)]}."
    if n % 2 == 0:
        lines[at] = lines[at].rstrip() + " " + sentence
    else:
        lines.insert(at + 1, "- " + sentence)
    return "\n".join(lines), sentence, marker


TOP = 20


def present(client: LspClient, chunk_id: str) -> bool:
    try:
        return bool(
            client.request(
                "workspace/executeCommand", {"command": "memsearch.expand", "arguments": [chunk_id]}, timeout=60
            )
        )
    except LspError:  # an unknown id may be answered with an error
        return False


def found(client: LspClient, sentence: str, marker: str, uri: str) -> bool:
    """Does a search for the new sentence return the edited chunk (checked with memsearch.expand)?"""
    hits = client.request("memsearch/search", {"query": sentence, "topK": TOP}, timeout=120) or []
    for hit in hits:
        if hit.get("uri") == uri:
            chunk = client.request(
                "workspace/executeCommand", {"command": "memsearch.expand", "arguments": [hit["id"]]}, timeout=60
            )
            if chunk and marker in chunk.get("content", ""):
                return True
    return False


def run(size: int, seed: int, edits: int) -> dict[str, Any]:
    root, _ = built(size, seed)
    with tempfile.TemporaryDirectory(prefix="bench-incremental-") as tmp:
        ws = clone(root, Path(tmp) / "ws")
        logs = sorted((ws / "memory").glob("2*.md"))[-FILES:]
        with LspClient(cwd=ws) as client:
            client.initialize(ws)
            when, first = client.wait_notification("memsearch/indexed", timeout=3600)
            ready_s = when - client.t_spawn
            versions = {}
            for path in logs:
                mark = client.mark()
                client.notify("textDocument/didOpen", {"textDocument": text_document(path)})
                versions[path] = 1
                client.wait_notification("memsearch/indexed", after=mark, timeout=120)
            to_indexed, to_present, to_search, server_ms, embedded, reused, retries = [], [], [], [], [], [], []
            missed = 0
            for n in range(edits):
                path = logs[n % len(logs)]
                new_text, sentence, marker = edit(path.read_text(encoding="utf-8"), n)
                uri = path.resolve().as_uri()
                versions[path] += 1
                client.notify(
                    "textDocument/didChange",
                    {"textDocument": {"uri": uri, "version": versions[path]}, "contentChanges": [{"text": new_text}]},
                )
                path.write_text(new_text, encoding="utf-8")
                mark = client.mark()
                t0 = time.perf_counter()
                client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
                t1, stats = client.wait_notification("memsearch/indexed", after=mark, timeout=120)
                # Present: the edited chunk's new id (computed as the indexer does) answers memsearch.expand.
                new_id = next(
                    c.id
                    for c in chunk_markdown(new_text, f"memory/{path.name}", model=DEFAULT_MODEL)
                    if marker in c.content
                )
                while not present(client, new_id):
                    time.sleep(0.01)
                t2 = time.perf_counter()
                # Found: a search for the new sentence returns that chunk (ranking, not indexing).
                tries = 0
                while not found(client, sentence, marker, uri):
                    tries += 1
                    if tries > 25:
                        log(f"  edit {n}: present, but not in the top {TOP} for its own sentence")
                        missed += 1
                        break
                    time.sleep(0.02)
                else:
                    to_search.append(1000 * (time.perf_counter() - t0))
                to_indexed.append(1000 * (t1 - t0))
                to_present.append(1000 * (t2 - t0))
                server_ms.append(float(stats.get("ms", 0)))
                embedded.append(int(stats.get("embedded", 0)))
                reused.append(int(stats.get("reused", 0)))
                retries.append(tries)
            rss = client.peak_rss_mib()
    return {
        "chunks": size,
        "edits": edits,
        "save_to_indexed_ms": statistics.median(to_indexed),
        "save_to_searchable_ms": statistics.median(to_present),
        "p95_searchable_ms": percentile(to_present, 95),
        "max_searchable_ms": max(to_present),
        "save_to_found_ms": statistics.median(to_search) if to_search else None,
        "server_pass_ms": statistics.median(server_ms),
        "embedded_per_edit": statistics.median(embedded),
        "max_embedded": max(embedded),
        "reused_per_edit": statistics.median(reused),
        "search_retries": sum(retries),
        "found": edits - missed,
        "goal_ms": DEBOUNCE_MS + 500,
        "startup_ready_s": ready_s,
        "startup_embedded": first.get("embedded"),
        "peak_rss_mib": rss,
    }


def main(args: Any) -> None:
    sizes = [args.chunks] if args.chunks else ([1000] if args.quick else [1000, 10000])
    rows = []
    for size in sizes:
        log(f"incremental: {size} chunks, {args.reps or EDITS} edits")
        rows.append(emit("incremental", run(size, args.seed, args.reps or EDITS)))
    table(
        rows,
        [
            "chunks",
            "edits",
            "save_to_indexed_ms",
            "save_to_searchable_ms",
            "p95_searchable_ms",
            "save_to_found_ms",
            "found",
            "server_pass_ms",
            "embedded_per_edit",
            "reused_per_edit",
            "goal_ms",
            "startup_ready_s",
            "startup_embedded",
        ],
        "didSave -> searchable (median of edits)",
    )
