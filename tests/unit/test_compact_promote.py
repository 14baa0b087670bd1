"""Issue 39: which facts of a compacted log are lasting (promote.py), and how they are added to MEMORY.md
(every line already there kept, under the right section, or under a new one at the end)."""

from __future__ import annotations

from memsearch_lsp.core.compact.promote import applied as _apply
from memsearch_lsp.core.compact.promote import durable_facts, insertions
from tests.helpers import log_text


def test_preferences_and_decisions_in_force_are_lasting_tasks_and_deadlines_are_not() -> None:
    log = log_text(
        "2027-02-01",
        """# 2027-02-01

## Review

Ines prefers small PRs, under 400 lines of diff.
She also wants commit messages in the imperative mood.
Carol (product) wants the export feature by 2027-03-15.
Dana to write the topic naming convention.
The user asked me to look into why test_export_invoices_csv fails on CI.
The user wants to upgrade Django 4.2 to 5.1.
Mia asked us to always add a comment that explains the cause of a flaky test.
Never run migrations from a laptop; they go through the pipeline only.
Decision: we keep PostgreSQL and do not move to DynamoDB, because reporting needs joins.
We went with Caddy for the reverse proxy.
Let me look at the dashboards again.
Is the cache warm?
""",
    )
    later = log_text("2027-02-03", "# 2027-02-03\n\n## Proxy\n\nCaddy reverted: back to nginx for the reverse proxy.\n")
    found = [(kind, text) for kind, text, _, _ in durable_facts([log, later])]
    assert found == [
        ("preference", "Ines prefers small PRs, under 400 lines of diff."),
        ("preference", "Ines also wants commit messages in the imperative mood."),  # who "She" is
        ("preference", "Mia asked us to always add a comment that explains the cause of a flaky test."),
        ("preference", "Never run migrations from a laptop; they go through the pipeline only."),
        ("decision", "we keep PostgreSQL and do not move to DynamoDB, because reporting needs joins."),
    ]  # Carol's wish has a deadline (a task); Dana's and the user's two asks are tasks; Caddy was reverted


def test_a_reply_a_decision_not_taken_and_a_rule_pointing_back_are_not_lasting() -> None:
    """A captured turn's "Assistant: Agreed." leans on the user's line before it: it is not promoted alone."""
    log = log_text(
        "2027-08-05",
        "# 2027-08-05\n\nUser: I want invariants like this enforced by a database constraint.\n\nAssistant: Agreed.\n\n"
        "Decision: we use Kafka.\n\nSome talk about the offsite, nothing decided.\n\n"
        "Always estimate state size from the key's cardinality. Noting that as a rule.\n\n"
        "- We have not decided on the logging library yet.\n"
        "- Marta argued for structlog, Priya for loguru, and the meeting ran out of time before anyone agreed.\n"
        "- So we chatted about the roadmap for a while, honestly nothing really decided here.\n"
        "- The team couldn't agree on tabs.\n",
    )
    found = [(kind, text) for kind, text, _, _ in durable_facts([log])]
    assert found == [
        ("preference", "User: I want invariants like this enforced by a database constraint."),
        ("decision", "we use Kafka."),
        ("preference", "Always estimate state size from the key's cardinality."),
    ]  # a decision not taken is none; "Noting that as a rule." points at the sentence before it


def test_additions_go_under_their_sections_and_every_line_stays() -> None:
    memory = (
        "# Memory\n\nIntro line.\n\n## Decisions\n\n- 2026-01-02: chose Kafka.\n\n## Preferences\n\n"
        "We like tests.\n\n## Team\n\n- Dana leads.\n"
    )
    inserts = insertions(memory, {"Decisions": ["keep PostgreSQL"], "Preferences": ["small PRs"], "Rules": ["r1"]})
    text = _apply(memory, inserts)
    assert text == (
        "# Memory\n\nIntro line.\n\n## Decisions\n\n- 2026-01-02: chose Kafka.\n- keep PostgreSQL\n\n"
        "## Preferences\n\nWe like tests.\n\n- small PRs\n\n## Team\n\n- Dana leads.\n\n## Rules\n\n- r1\n"
    )
    assert insertions("", {"Decisions": ["a"]}) == [(0, "## Decisions\n\n- a\n")]
    no_newline = "# M\n\n## Decisions\n\n- old"
    assert _apply(no_newline, insertions(no_newline, {"Decisions": ["new"]})) == "# M\n\n## Decisions\n\n- old\n- new\n"
    last = "# M\n\n## Preferences\n\n- tabs\n"  # a bullet for the last section, and a new section: in that order
    assert _apply(last, insertions(last, {"Preferences": ["small PRs"], "Decisions": ["Kafka"]})) == (
        "# M\n\n## Preferences\n\n- tabs\n- small PRs\n\n## Decisions\n\n- Kafka\n"
    )
    fenced = "# M\n\n```\n## Decisions\n```\n"  # a heading in a code block is no section
    assert _apply(fenced, insertions(fenced, {"Decisions": ["x"]})) == fenced + "\n## Decisions\n\n- x\n"


def test_a_decision_is_undone_only_by_a_sentence_on_the_same_thing_and_a_table_s_lead_in_is_no_decision() -> None:
    """An unrelated later "... instead" sharing two words cancelled a decision; a line announcing a table was promoted;
    a `Decision:` inside a paragraph was not a decision."""
    first = log_text(
        "2027-10-08",
        "# 2027-10-08\n\n## Migration\n\nDecision: import only batches from 2026 onward; older records stay in the "
        "Hopsheet archive export.\n\nFermentation profiles, agreed with Maren so the alarms make sense:\n\n"
        "| profile | temp |\n|---|---|\n| ale | 19 C |\n",
    )
    later = log_text(
        "2027-10-11",
        "# 2027-10-11\n\nPriyanka and Tobias went over the point of sale. Decision: stay on Square; Hopsheet's "
        "inventory sync pushes keg levels into Square's item stock instead.\n",
    )
    found = [(kind, text) for kind, text, _, _ in durable_facts([first, later])]
    assert found == [
        (
            "decision",
            "import only batches from 2026 onward; older records stay in the Hopsheet archive export.",
        ),
        (
            "decision",
            "stay on Square; Hopsheet's inventory sync pushes keg levels into Square's item stock instead.",
        ),
    ], found


def test_an_answer_to_a_how_to_question_is_no_decision_an_outcome_that_decides_is() -> None:
    """Audit J: captured turns' answers to "How do we ...?" went to MEMORY.md as Decisions ("Rotate them in Vault
    ...", "Set `retries=5` ..."); an outcome of "Should we ...?" that decides, or one told as a decision, still is."""
    vault = "Rotate them in Vault under secret/webhooks every 90 days."
    turns = (
        ("How do we rotate the signing keys for webhooks?", vault),
        ("How do I configure the retry policy for the http client?", "Set `retries=5`; 0 never retries."),
        ("¿Cómo rotamos las claves de firma?", vault),
        ("我们如何轮换签名密钥？", vault),
        ("Should we move the job queue to Redis streams?", "Yes: the queue moves to Redis streams, RabbitMQ goes."),
        ("What broker do we use for events?", "We decided to stay on Kafka for events."),
        ("Wasm or a native module for the plugin runtime?", "The plugin runtime moves to Wasm, native modules go."),
        ("Can we drop Python 3.9 support in the SDK?", "The SDK drops Python 3.9; 3.10 is the floor."),
        ("How do we merge pull requests?", "Always squash-merge into main."),
    )
    text = "# 2026-11-04\n\n" + "".join(
        f"## 10:0{n} {asked.rstrip('?')}\n\n**Asked:** {asked}\n\n**Outcome:** {outcome}\n\n"
        for n, (asked, outcome) in enumerate(turns)
    )
    found = [(kind, text) for kind, text, _, _ in durable_facts([log_text("2026-11-04", text)])]
    assert found == [
        ("decision", "the queue moves to Redis streams, RabbitMQ goes."),
        ("decision", "We decided to stay on Kafka for events."),
        ("decision", "The plugin runtime moves to Wasm, native modules go."),
        ("decision", "The SDK drops Python 3.9; 3.10 is the floor."),
        ("preference", "Always squash-merge into main."),  # (a rule the answer says as one)
    ], found


def test_it_is_decides_only_after_what_was_chosen() -> None:
    """ "to make the log bigger than it is" was proposed for MEMORY.md's Decisions ("Postgres it is" is a decision)."""
    log = log_text(
        "2027-02-01",
        "# 2027-02-01\n\n## Notes\n\nFiller text that goes on about nothing, to make the log bigger than it is.\n\n"
        "Leave the retry budget as it is.\n\nWe compared the brokers all morning. Kafka it is.\n",
    )
    assert [(kind, text) for kind, text, _, _ in durable_facts([log])] == [("decision", "Kafka it is.")]


def test_a_french_label_with_its_space_before_the_colon_is_a_label() -> None:
    """(audit Z1, 4) French sets a space (often a no-break one) before a colon: "Décision : ..." was no label, so the
    decision was not proposed for MEMORY.md while the same line in Chinese or English was."""
    log = log_text(
        "2026-11-05",
        "# 2026-11-05\n\n## Réunion\n\n"
        "Décision : nous passons à PostgreSQL 17 parce que la réplication logique est meilleure.\n"
        "Décision\u202f: les déploiements se font le mardi.\n",
    )
    found = [(kind, text) for kind, text, _, _ in durable_facts([log])]
    assert found == [
        ("decision", "nous passons à PostgreSQL 17 parce que la réplication logique est meilleure."),
        ("decision", "les déploiements se font le mardi."),
    ]
