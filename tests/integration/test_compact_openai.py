"""The `openai` summariser against a real chat-completions server on 127.0.0.1 (http.server in a thread)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp import cli
from memsearch_lsp.config import ConfigError
from memsearch_lsp.core.compact.plan import apply_plan, plan_compaction
from memsearch_lsp.core.compact.summarize import DEFAULT_PROMPT, SummarizerError
from tests.fakes import ChatServer, FakeEmbedder
from tests.helpers import BM25, FEB18, snapshot


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


def openai_memory(make_memory: Callable[..., Any], ws: Path, chat: ChatServer, **compact: Any) -> Any:
    settings = {
        "summarizer": "openai",
        "base_url": chat.url,
        "model": "test-model",
        "timeout_s": 5.0,
        "max_retries": 0,
        "api_key_env": "ATLAS_LLM_KEY",
        **compact,
    }
    return make_memory(ws, compact=settings)


def test_openai_summary_per_week_with_prompt_links_and_key(
    workspace: Path, make_memory, chat: ChatServer, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    monkeypatch.setenv("ATLAS_LLM_KEY", "sk-test-secret-42")
    kafka = (
        "```markdown\n# Event bus\n\n- Decision: Kafka over RabbitMQ, 7 days replay "
        "([2026-02-05#L5](archive/2026-02-05.md#L5))\n\n## Sources\n\n- junk\n```"
    )
    chat.answer = lambda messages: kafka if "2026-02-05" in messages[-1]["content"] else "## Cart\n\n- UUIDv7 ids\n"
    memory = openai_memory(make_memory, workspace, chat)
    caplog.set_level(logging.DEBUG)
    plan = plan_compaction(memory, today=FEB18)
    assert plan.summarizer == "openai" and len(chat.requests) == 2  # one call per week, nothing split
    first = chat.requests[0]
    assert first["path"] == "/v1/chat/completions" and first["model"] == "test-model"
    assert first["messages"][0] == {"role": "system", "content": DEFAULT_PROMPT.read_text()}
    user = first["messages"][1]["content"]
    assert "### memory/2026-02-05.md (2026-02-05; cite line n as [2026-02-05#L<n>](archive/2026-02-05.md#L<n>))" in user
    assert "L5: - Decision: we chose Kafka over RabbitMQ for the event bus." in user
    assert "2026-02-09" not in user and "2026-02-09" in chat.user_messages()[1]
    assert chat.headers[0]["authorization"] == "Bearer sk-test-secret-42"
    content = plan.summaries[0].content
    assert content.startswith("# Summary 2026-W06\n") and "(openai, 2026-02-18)" in content
    assert re.match(r"Summarise these daily logs from 2026-W06 in at most \d+ characters, links included", user)
    assert "at most 40 %" in DEFAULT_PROMPT.read_text()  # the ratio target, in the prompt
    assert "## Event bus\n\n- Decision: Kafka over RabbitMQ" in content  # unfenced; the title became a topic
    assert "junk" not in content and "```" not in content
    everything = json.dumps(plan.to_dict()) + plan.describe() + caplog.text
    assert "sk-test-secret-42" not in everything  # the key is never logged or written
    apply_plan(memory, plan)
    assert "sk-test-secret-42" not in "".join(p.read_text(errors="replace") for p in workspace.rglob("*.md"))
    assert "memory/summary-2026-W06.md" in {h.source for h in memory.search("Kafka RabbitMQ replay", top_k=3, **BM25)}


def test_custom_prompt_file(workspace: Path, make_memory, chat: ChatServer) -> None:
    (workspace / "prompts").mkdir()
    (workspace / "prompts/short.md").write_text("Summarise tersely.\n")
    memory = openai_memory(make_memory, workspace, chat, prompt_file="prompts/short.md")
    plan_compaction(memory, files=["memory/2026-02-05.md"], today=FEB18)
    assert chat.requests[0]["messages"][0]["content"] == "Summarise tersely.\n"
    missing = openai_memory(make_memory, workspace, chat, prompt_file="prompts/nope.md")
    with pytest.raises(ConfigError, match="prompt_file"):
        plan_compaction(missing, today=FEB18)


def test_retries_after_a_500_and_a_timeout(workspace: Path, make_memory, chat: ChatServer) -> None:
    chat.script = ["500", 2.0]  # the first attempt fails, the second times out, the third succeeds
    memory = openai_memory(make_memory, workspace, chat, timeout_s=0.5, max_retries=2)
    plan = plan_compaction(memory, files=["memory/2026-02-05.md"], today=FEB18)
    assert len(chat.requests) == 3
    assert "a canned fact" in plan.summaries[0].content


@pytest.mark.parametrize(
    "script,message",
    [
        (["500", "500"], "answered HTTP 500 (2 attempts): model crashed"),
        ([1.5, 1.5], "timed out after 0.3s (2 attempts)"),
    ],
)
def test_exhausted_retries_give_a_clear_error_and_change_nothing(
    workspace: Path, make_memory, chat: ChatServer, script: list[str | float], message: str
) -> None:
    chat.script = list(script)
    memory = openai_memory(make_memory, workspace, chat, timeout_s=0.3, max_retries=1)
    before = snapshot(workspace)
    with pytest.raises(SummarizerError) as info:
        plan_compaction(memory, today=FEB18)
    assert chat.url in str(info.value) and message in str(info.value)
    assert len(chat.requests) == 2 and snapshot(workspace) == before


def test_an_empty_answer_or_a_wrong_url_is_a_clear_error(workspace: Path, make_memory, chat: ChatServer) -> None:
    chat.answer = lambda messages: "  "
    with pytest.raises(SummarizerError, match="returned an empty summary"):
        plan_compaction(openai_memory(make_memory, workspace, chat), today=FEB18)
    wrong = openai_memory(make_memory, workspace, chat, base_url=chat.url.removesuffix("/v1"))
    with pytest.raises(SummarizerError, match=r"HTTP 404.*check compact\.base_url"):
        plan_compaction(wrong, today=FEB18)
    chat.close()
    # one endpoint helper (core/endpoint.py) for the summariser and the embedder: the same sentence and hint
    with pytest.raises(
        SummarizerError,
        match=rf"cannot reach summariser endpoint {chat.url} \(\d attempts?\): "
        r".*; check compact\.base_url$",
    ):
        plan_compaction(openai_memory(make_memory, workspace, chat), today=FEB18)


def test_cli_reports_a_failing_endpoint_and_leaves_the_memory_unchanged(
    workspace: Path, chat: ChatServer, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setattr("memsearch_lsp.core.workspace.create_embedder", lambda *a, **k: FakeEmbedder())
    for key, value in {"SUMMARIZER": "openai", "BASE_URL": chat.url, "MAX_RETRIES": "0", "TIMEOUT_S": "2"}.items():
        monkeypatch.setenv(f"MEMSEARCH_COMPACT_{key}", value)
    chat.script = ["500"]
    before = snapshot(workspace)
    assert cli.main(["compact", "-w", str(workspace)]) == 1
    err = capsys.readouterr().err
    assert f"summariser endpoint {chat.url} answered HTTP 500" in err and "Traceback" not in err
    assert snapshot(workspace) == before


def test_a_group_over_the_token_budget_is_mapped_then_reduced(workspace: Path, make_memory, chat: ChatServer) -> None:
    (workspace / "prompts").mkdir()
    (workspace / "prompts/p.md").write_text("Summarise.\n")
    parts: list[str] = []

    def answer(messages: list[dict[str, str]]) -> str:
        user = messages[-1]["content"]
        if user.startswith("Summarise these daily logs"):
            parts.append(user)
            return f"## Part {len(parts)}\n\n- fact {len(parts)}\n"
        return "## Merged\n\n" + "".join(f"- merged {n}\n" for n in range(user.count("## ")))

    chat.answer = answer
    max_tokens = 120  # 480 characters per request, ~270 of them for the logs
    memory = openai_memory(make_memory, workspace, chat, prompt_file="prompts/p.md", max_input_tokens=max_tokens)
    plan = plan_compaction(memory, files=[f"memory/2026-02-0{d}.md" for d in (2, 3, 4, 5, 6)], today=FEB18)
    users = chat.user_messages()
    maps = [u for u in users if u.startswith("Summarise")]
    reduces = [u for u in users if u.startswith("Merge")]
    assert len(maps) >= 10 and reduces  # five logs of ~400 characters need several pieces each
    for request in chat.requests:
        size = sum(len(m["content"]) for m in request["messages"])
        assert size <= max_tokens * 4, size  # never one huge call
    sent = "\n".join(maps)
    for day in (2, 3, 4, 5, 6):  # every line of every log was sent once, numbered
        for n, line in enumerate((workspace / f"memory/2026-02-0{day}.md").read_text().splitlines(), 1):
            assert f"L{n}: {line}" in sent
    assert "## Part 1\n\n- fact 1" in reduces[0]  # the reduce step merges the map answers
    assert plan.summaries[0].content.count("## Merged") == 1  # the last reduce is the summary
    tiny = openai_memory(make_memory, workspace, chat, max_input_tokens=100)  # the default prompt is bigger
    with pytest.raises(ConfigError, match="max_input_tokens = 100 leaves no room"):
        plan_compaction(tiny, today=FEB18)


def test_logs_a_summary_could_not_shrink_are_never_sent(tmp_path: Path, make_memory, chat: ChatServer) -> None:
    """A week of headings only, and a log smaller than any summary's title and intro: nothing to gain, decided
    before a paid call (the audit's week 2026-W08 was sent every run, then thrown away)."""
    (tmp_path / "memory").mkdir()
    logs = {
        "2026-02-16": "# 2026-02-16\n\n## Morning\n\n## Afternoon\n\n### Notes\n\n## Evening\n",
        "2026-02-17": "",
        "2026-02-23": "# 2026-02-23\n\n- Redis 7.2 on staging\n",
    }
    for day, text in logs.items():
        (tmp_path / "memory" / f"{day}.md").write_text(text, encoding="utf-8")
    plan = plan_compaction(openai_memory(make_memory, tmp_path, chat), today=dt.date(2026, 3, 1), older_than_days=1)
    assert chat.requests == [] and plan.empty, chat.requests
    headings, tiny = plan.unchanged
    assert headings.logs == ("memory/2026-02-16.md", "memory/2026-02-17.md") and tiny.logs == ("memory/2026-02-23.md",)
    assert headings.describe().endswith("nothing to gain (no text beyond headings: nothing to summarise)")
    assert tiny.chars_after >= 0.70 * tiny.chars_before and "nothing to gain (a summary would be" in tiny.describe()


def test_summaries_that_do_not_shrink_stop_with_an_error(workspace: Path, make_memory, chat: ChatServer) -> None:
    (workspace / "prompts").mkdir()
    (workspace / "prompts/p.md").write_text("Summarise.\n")
    chat.answer = lambda messages: "## Long\n\n" + "- a long canned line that does not shrink\n" * 6
    memory = openai_memory(make_memory, workspace, chat, prompt_file="prompts/p.md", max_input_tokens=120)
    with pytest.raises(SummarizerError, match=r"do not fit compact\.max_input_tokens = 120; raise it"):
        plan_compaction(memory, files=["memory/2026-02-05.md"], today=dt.date(2026, 2, 18))


def test_no_secret_or_private_span_is_sent_to_the_endpoint_or_written(
    tmp_path: Path, make_memory, chat: ChatServer
) -> None:
    """Issue 38: a `<private>` span is never written nor sent, and a secret never reaches a summary: the model reads
    the logs redacted (each line numbered as in the archived original), and what it answers or the lines put back
    word for word are redacted too."""
    (tmp_path / "memory").mkdir()
    log = (
        "# 2026-02-05\n\n## 09:00\n\nDecision: store the token ghp_1234567890abcdefghijABCDEFGHIJ123456 in CI.\n"
        "Decision: Postgres <private>PRIVSAL\nlives there</private> for billing.\n"
        "Decision: deploy on Tuesdays.\n\n" + "Filler about the weather and lunch, nothing decided at all. " * 20
    )
    (tmp_path / "memory/2026-02-05.md").write_text(log, encoding="utf-8")
    chat.answer = lambda messages: (
        "## Billing\n\n- Postgres <private>MODELPRIV</private> for billing, DB_PASSWORD=Xk9m2Qv7Lp3w\n"
    )
    memory = openai_memory(make_memory, tmp_path, chat)
    plan = plan_compaction(memory, today=FEB18)
    sent = "\n".join(chat.user_messages())
    assert "ghp_" not in sent and "PRIV" not in sent and "private>" not in sent, sent
    assert "L5: Decision: store the token [redacted: github-token] in CI." in sent
    assert "L8: Decision: deploy on Tuesdays." in sent  # the line of the archived original
    content = plan.summaries[0].content
    assert "Decision: deploy on Tuesdays" in content  # put back word for word
    for said in ("ghp_", "PRIV", "private>", "Xk9m2Qv7Lp3w"):
        assert said not in content, (said, content)


def test_a_summariser_that_quotes_the_api_key_back_never_has_it_shown(
    workspace: Path, make_memory, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATLAS_LLM_KEY", "sk-test-secret-quoted-42")
    chat.script = ["echo401"]
    with pytest.raises(SummarizerError) as info:
        plan_compaction(openai_memory(make_memory, workspace, chat), today=FEB18)
    assert chat.headers[0]["authorization"] == "Bearer sk-test-secret-quoted-42"
    assert "HTTP 401 (1 attempt): Incorrect API key provided: Bearer ***; check the API key" in str(info.value)
    assert info.value.__cause__ is None and "sk-test-secret-quoted-42" not in str(info.value)
