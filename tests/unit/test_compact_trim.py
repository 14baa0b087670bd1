"""Issue 39, second round: a kept sentence is trimmed of words that carry no fact (core/compact/trim.py), and
the rules added this round: no sentence split after a title, bounds with their number, what a decision
replaced ("instead", "(was ...)"), a role told before its person, a dead end that speaks only of itself."""

from __future__ import annotations

from memsearch_lsp.core.compact.extractive import choose, parse_log
from memsearch_lsp.core.compact.rules import LIMIT, NAME_ROLE, REPLACED
from memsearch_lsp.core.compact.summarize import LogText
from memsearch_lsp.core.compact.trim import TRIMS, trim
from memsearch_lsp.core.compact.units import sentences_of, units_of


def _day(text: str) -> LogText:
    """A daily log dated by its title ("# 2027-02-01")."""
    day = text.split("\n", 1)[0].lstrip("# ").strip()
    return LogText(f"memory/{day}.md", f"memory/archive/{day}.md", f"archive/{day}.md", day, text)


def test_each_trim_is_named_and_stated_in_one_line() -> None:
    assert len({t.name for t in TRIMS}) == len(TRIMS)
    assert all("\n" not in t.says and 20 <= len(t.says) <= 100 for t in TRIMS)


def test_a_lead_in_without_a_fact_before_a_colon_goes() -> None:
    assert trim("Found it: the cache TTL was 5 s.") == "The cache TTL was 5 s."
    assert trim("Looked at the backpressure tab: the dedupe operator is 100% busy.").startswith("The dedupe")
    # a lead-in that says a fact stays ("Config", "Result" said with numbers are labels, set apart earlier)
    assert trim("Exp 31 on 4 GPUs: WER 23.4%.") == "Exp 31 on 4 GPUs: WER 23.4%."
    # and one before a value, which says nothing without what it is of
    assert trim("Eastfield depot: 38 buses in total.") == "Eastfield depot: 38 buses in total."
    # and so does one whose rest says nothing
    assert trim("Plan for tomorrow: read more.") == "Plan for tomorrow: read more."
    # a clause (lower case) keeps its case
    assert (
        trim("summarised: the `gpu` partition limits jobs to 72 hours") == "the `gpu` partition limits jobs to 72 hours"
    )


def test_an_opener_a_filler_and_a_wordy_phrase_go() -> None:
    assert trim("So the pool is 20 connections.") == "The pool is 20 connections."
    assert trim("In the end we pinned Redis 7.2.") == "We pinned Redis 7.2."
    assert trim("It is really very 3 ms slower.") == "It is 3 ms slower."
    assert trim("Alert on Slack, not just the email.") == "Alert on Slack, not just the email."
    assert trim("We report CER as well as WER in order to compare.") == "We report CER and WER to compare."


def test_trims_never_touch_code_a_parenthesis_or_a_quotation() -> None:
    kept = 'Run `really build` (really very once) and "so very fast" now.'
    assert trim(kept) == kept


def test_a_kept_sentence_is_trimmed_in_the_summary_but_a_table_is_not() -> None:
    log = _day(
        "# 2027-02-01\n\nSo the export job really runs with concurrency 4 in order to spare MySQL.\n\n"
        "| service | p99 |\n|---|---|\n| api | 120 ms |\n",
    )
    text = choose(parse_log(log), budget=400)
    assert "- The export job runs with concurrency 4 to spare MySQL." in text
    assert "| service | p99 |" in text


def test_a_short_item_of_a_list_stays_with_the_clause_before_it_whatever_its_aside() -> None:
    text = '- validator on the draft feed: 0 errors, 14 warnings (mostly "fast travel")\n'
    log = LogText("memory/2028-03-15.md", "a", "b", "2028-03-15", text)
    (item,) = parse_log(log)
    assert [u.text for u in units_of(item)] == ["validator on the draft feed: 0 errors, 14 warnings"]


def test_no_sentence_ends_after_a_title_or_an_abbreviation() -> None:
    item = parse_log(_day("# 2027-05-11\n\nMet with Prof. Lindqvist (supervisor) at 14:00. Use e.g. CER.\n"))[0]
    assert [s for _, s in sentences_of(item)] == ["Met with Prof. Lindqvist (supervisor) at 14:00.", "Use e.g. CER."]


def test_a_bound_needs_its_number_and_minutes_are_no_bound() -> None:
    assert LIMIT.search("max 3 substitutes per item") and LIMIT.search("min=2 replicas")
    assert LIMIT.search("the maximum is 4")
    assert not LIMIT.search("Training took 5 h 12 min.")


def test_what_a_decision_replaced_is_found() -> None:
    assert REPLACED.search("it goes into the thesis instead.")
    assert REPLACED.search("4.2.0 code freeze moved to 2027-03-11 (was 03-10)")
    assert not REPLACED.search("the freeze is on 2027-03-11 (a Thursday)")


def test_a_role_told_before_its_person_is_found() -> None:
    assert NAME_ROLE.search("Second author will be Aino.")
    assert NAME_ROLE.search("The reviewer is Jukka.")
    assert not NAME_ROLE.search("The author will be back on Monday.")


def test_a_long_dead_end_sinks_only_itself_not_the_cause_before_it() -> None:
    log = _day(
        "# 2027-03-02\n\nThe crash happens because the second tap calls `confirmPayment` while the first is pending. "
        "I wasted an hour thinking it was the Hermes upgrade, it wasn't.\n\n"
        "Tried a bigger pool. No effect.\n\nThe pool has 20 connections, Dana (DBA) owns it.\n",
    )
    text = choose(parse_log(log), budget=400)
    assert "The crash happens because the second tap calls `confirmPayment`" in text
    assert "Hermes" not in text and "bigger pool" not in text  # a verdict still sinks the sentence it judges
    assert "Dana (DBA)" in text


def test_each_connective_that_opens_a_sentence_goes() -> None:
    assert trim("Okay, so it is reproducible locally.") == "It is reproducible locally."
    assert trim("So we keep Redis.") == "We keep Redis."
