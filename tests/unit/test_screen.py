"""Text for a terminal: headings and snippets are cut by columns, never inside what is shown as one character."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memsearch_lsp.core.search.hybrid import display_heading, snippet
from memsearch_lsp.core.search.screen import boundary, columns, fit

FAMILY = "👨\u200d👩\u200d👧\u200d👦"
FLAGS = "🇧🇷🇩🇪🇨🇳🇪🇸"


def test_a_wide_character_takes_two_columns_and_a_joined_emoji_is_one() -> None:
    assert columns("数据库") == 6 and columns("Straße") == 6 and columns(FAMILY) == 2 and columns("e\u0301") == 1
    assert fit("数据库迁移", 5) == "数据"
    assert fit(f"家{FAMILY}旅", 3) == "家" and fit(f"家{FAMILY}旅", 4) == f"家{FAMILY}"
    assert [fit(FLAGS, n) for n in (1, 2, 3)] == ["", "🇧🇷", "🇧🇷"]
    assert fit("cafe\u0301s", 4) == "cafe\u0301"  # the accent stays with its letter
    assert columns("👍🏽") == 2 and fit("ab👍🏽cd", 4) == "ab👍🏽"  # a skin tone is shown in its emoji's columns
    assert fit("नमस्ते", 2) == "नम" and fit("कीx", 1) == ""  # a vowel sign stays with its consonant
    assert [boundary(FLAGS, n) for n in range(5)] == [0, 2, 2, 4, 4]


def test_a_chinese_heading_is_cut_at_its_width_and_a_clause_not_inside_a_name() -> None:
    note = (
        "## 09:41\n\n迁移计划：订单数据从旧的集群迁移到新的集群，负责人是张伟（数据库管理员），迁移期间订单服务只读。"
    )
    shown = display_heading("09:41", note)
    assert shown == "迁移计划：订单数据从旧的集群迁移到新的集群… (09:41)"
    assert columns(shown.removesuffix(" (09:41)")) <= 61
    latin = display_heading("09:41", "## 09:41\n\n" + "Straßenbahn-Fahrplan und Übersetzungsdatei " * 3)
    assert latin == "Straßenbahn-Fahrplan und Übersetzungsdatei… (09:41)"  # (a word is never cut)


def test_a_snippet_never_opens_inside_a_flag_nor_ends_inside_a_joined_emoji() -> None:
    text = snippet("## 09:41\n\n" + FLAGS * 40 + " bandeiras do time", "bandeiras")
    assert text.startswith("…🇧🇷🇩🇪") and text.endswith("bandeiras do time")
    cut = snippet("## 09:41\n\n" + ("旅行" + FAMILY) * 80, "旅行", width=41)
    assert columns(cut) <= 41 and not cut.rstrip("…").endswith("\u200d")


WORDS = ["payout", "pay", "out", "deploy", "deployed", "旅行", "数据库", "straße", "the", "a", FAMILY, FLAGS, "e\u0301"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*WORDS, " ", ". ", "\n", "x" * 30, "🇧🇷"]), max_size=80),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.integers(min_value=1, max_value=40),
)
def test_a_snippet_of_any_width_from_1_fits_it_whatever_the_text(
    parts: list[str], query: list[str], width: int
) -> None:
    """search.snippetChars may be 1 (docs/protocol.md): a width under 3 left the window empty, and every search of
    a word in a long chunk raised KeyError."""
    text = snippet("## 09:41\n\n" + "".join(parts), " ".join(query), width=width)
    assert columns(text) <= width, (text, width)


def test_a_snippet_one_or_two_columns_wide_is_the_start_of_a_long_chunk() -> None:
    note = "## 03:58\n\n" + "We raised the payout limit for partners after the audit. " * 20
    assert [snippet(note, "payout", width=w) for w in (1, 2)] == ["…", "W…"]
    assert snippet(note, "payout", width=12) == "…payout lim…"
