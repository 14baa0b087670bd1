"""The BM25 analysis per language: accent folding, stemming in the text's language, CJK characters, detection."""

from __future__ import annotations

import random
import re
import string
import time

import pytest

from memsearch_lsp.config import SEARCH_LANGUAGES
from memsearch_lsp.core.search.analyzer import (
    MIN_FORM,
    NO_STEMMER,
    STEMMERS,
    Analyzer,
    fold,
    loose_numbers,
    other_forms,
    stem,
)
from memsearch_lsp.core.search.bm25 import doc_vector, query_ids, term_id
from memsearch_lsp.core.search.detection import detect

AUTO = Analyzer()


def old_english(text: str) -> list[str]:
    """The analysis before: lower-cased words, English stems."""
    return [stem(w, "en") for w in re.findall(r"\w+", text.lower()) if len(w) < 64]


def test_accents_fold_for_latin_greek_and_cyrillic_but_never_for_cjk() -> None:
    assert fold("clínica") == fold("clinica") == "clinica"
    assert fold("ação") == "acao" and fold("straße") == "strasse" and fold("français") == "francais"
    assert fold("ελληνικά") == "ελληνικα" and fold("йод") == "иод"
    assert fold("が") == "が" and fold("한국") == "한국"  # kana and Hangul stay whole


def test_letters_without_a_decomposition_fold_as_a_reader_types_them() -> None:
    """œ, æ, ø, ł, đ, ı are no letter with an accent in Unicode: "coeur" met no "cœur", "Kobenhavn" no "København"."""
    assert [fold(w) for w in ("cœur", "encyclopædia", "ørestad", "łodzi", "đức", "toplantı")] == [
        "coeur",
        "encyclopaedia",
        "orestad",
        "lodzi",
        "duc",
        "toplanti",
    ]
    assert fold("ŒÆØŁĐ") == "OEAEOLD" and fold("straße") == "strasse"
    for note, query in (
        ("Le cœur du système est prêt", "coeur"),
        ("Le nœud principal est tombé", "noeud"),
        ("Kontoret i København flytter til Ørestad", "Kobenhavn Orestad"),
        ("Spotkanie w Łodzi o wdrożeniu", "Lodzi"),
        ("Anh Đức phụ trách triển khai", "Duc"),
    ):
        assert set(AUTO.query_terms(query)) <= set(AUTO.tokens(note)), query


def test_a_text_is_read_in_its_compatibility_form_and_marks_stay_in_their_word() -> None:
    """An accent typed as a combining mark (macOS file names, some pastes), full-width Latin letters and digits (a
    Chinese input method), Turkish dotted capitals and Tamil's vowel signs: each analysed as the word it is."""
    assert AUTO.tokens("Überpru\u0308fung der cli\u0301nica") == AUTO.tokens("Überprüfung der clínica")
    note = set(AUTO.tokens("网关监听端口８０８０，所有日志统一用ＪＳＯＮ格式输出到Ｋａｆｋａ"))
    assert {"8080", "json", "kafka"} <= note
    assert AUTO.tokens("İstanbul") == AUTO.tokens("istanbul") == ["istanbul"]
    assert AUTO.words("தமிழ் மொழி") == ["தமிழ்", "மொழி"]
    assert fold("தமிழ்") == "தமிழ்"  # (only Latin, Greek and Cyrillic accents fold)


def test_a_question_without_accents_meets_a_note_with_them() -> None:
    note = set(AUTO.tokens("As clínicas de Lisboa já recebem lembretes por WhatsApp."))
    assert set(AUTO.query_terms("Quais clinicas recebem os lembretes?")) & note >= {stem("clinicas", "pt")}
    assert set(AUTO.query_terms("clinicas lembretes")) & note  # too short to tell: the English stems meet
    assert stem("clínicas", "pt") == stem("clinicas", "pt") == "clinic"


@pytest.mark.parametrize(
    ("lang", "forms"),
    [
        ("pt", ["agendamentos", "agendamento"]),
        ("es", ["pagos", "pago"]),
        ("de", ["Zahlungen", "Zahlung"]),
        ("fr", ["rendez-vous", "rendez-vous"]),
        ("it", ["prenotazioni", "prenotazione"]),
    ],
)
def test_each_language_stems_its_own_inflections_together(lang: str, forms: list[str]) -> None:
    stems = {stem(w.lower(), lang) for f in forms for w in re.findall(r"\w+", f)}
    assert len(stems) <= len(re.findall(r"\w+", forms[0]))
    assert {stem(w.lower(), lang) for w in re.findall(r"\w+", forms[0])} == {
        stem(w.lower(), lang) for w in re.findall(r"\w+", forms[1])
    }


def test_a_text_is_stemmed_in_its_detected_language_and_keeps_english_stems_beside() -> None:
    text = "Os agendamentos das clínicas ficaram lentos depois do deploy; o caching do Redis resolveu."
    assert detect(AUTO.words(text), text.lower()) == "pt"
    terms = AUTO.tokens(text)
    assert stem("agendamentos", "pt") in terms and stem("agendamentos", "pt") == stem("agendamento", "pt")
    # the English technical words keep their English stem: an English question about caching finds the note
    assert {"cach", "deploy"} <= set(terms) and "cach" in AUTO.query_terms("Redis caching")


def test_english_text_is_analysed_as_before() -> None:
    text = "What did Nate say about his dog? Caching the 42 results made the search index faster."
    assert AUTO.tokens(text) == old_english(text)
    assert Analyzer("en").tokens(text) == old_english(text)
    assert "what" not in AUTO.query_terms(text) and "nate" in AUTO.query_terms(text)


def test_a_decision_meets_what_was_decided_and_a_choice_what_was_chosen() -> None:
    """ "What did we decide" met none of a week's "Decision: Kafka over RabbitMQ" notes by their words: the stemmer
    keeps a noun in -sion apart from its verb (decis / decid), and "chose" from "choose"."""
    for family in (
        ["decision", "decisions", "decide", "decided", "deciding"],
        ["conclusion", "conclude", "concluded"],
        ["agreement", "agreed", "agree"],
        ["choice", "chose", "chosen", "choose", "choosing"],
        ["admission", "admit", "admitted"],
    ):
        assert len({stem(word, "en") for word in family}) == 1, family
        assert len({t for word in family for t in AUTO.tokens(word)}) == 1, family  # (the cached English path too)
    assert stem("precision", "en") != stem("decide", "en") and stem("tension", "en") == "tension"
    assert stem("decision", "pt") != stem("decide", "en")  # (English alone)


def test_chinese_becomes_characters_and_their_pairs() -> None:
    assert AUTO.tokens("预约系统") == ["预", "约", "系", "统", "预约", "约系", "系统"]
    # a question shares the note's words without any dictionary, and Latin words inside it stay words
    note = set(AUTO.tokens("我们把预约系统的短信提醒换成了WhatsApp。"))
    question = AUTO.query_terms("预约提醒用什么渠道发送?")
    assert {"预约", "提醒"} <= note & set(question)
    assert "whatsapp" in note
    assert detect(AUTO.words("我们把预约系统的短信提醒换成了WhatsApp"), "") == "zh"
    assert detect(AUTO.words("予約システムのリマインダー"), "") == "ja"


def test_other_scripts_are_stemmed_in_their_language_whatever_the_text() -> None:
    assert stem("платежи", "en") == stem("платежи", "ru") != "платежи"
    assert stem("πληρωμές", "pt") == stem("πληρωμές", "el")


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("Qual é a meta de tempo de resposta para a rota que lista as vagas da agenda?", "pt"),
        ("¿Cuántos escenarios vamos a revisar antes de salir al mercado europeo?", "es"),
        ("Wie sollen Kennwörter künftig gespeichert werden, mit welchen Parametern?", "de"),
        ("Quelle est la politique de sauvegarde pour les bases de données?", "fr"),
        ("Which legacy endpoint kept creating cache keys that never expired?", "en"),
        ("redis timeout", "en"),  # nothing stands out: English
        ("", "en"),
    ],
)
def test_detection(text: str, lang: str) -> None:
    assert detect(AUTO.words(text), text.lower()) == lang


@pytest.mark.parametrize(
    "text",
    [
        "Use Postgres as a DB, no Mongo. Do a backup at 2 a.m. e.g. via cron; a TTL of 30 min as default.",
        "Plan A: ship as is. Plan B: no-go, do a rollback. Status: a few tests fail on CI, no data loss.",
        "Tried a fix: set retries to 3 as a quick hack. No luck. A race in the cache layer, so a lock is needed.",
        "TODO: a) update docs b) tag v2 c) no breaking changes d) e2e tests as smoke",
        "Rate limit: 100 per minute, per user",
        "my son and his son",
    ],
)
def test_terse_english_is_english_though_its_words_are_other_languages_too(text: str) -> None:
    """ "a", "as", "no", "do", "e" (of "e.g.") are Portuguese function words and English ones: they are evidence of
    neither, so a memory of terse English notes is English (it was "pt 95%", and told to change models)."""
    assert detect(AUTO.words(text), text.lower()) == "en"


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("Vi möts för mötet på fredag", "sv"),  # ä and ö are Swedish letters as much as German ones
        ("Mötet flyttas till fredag för att Jörgen är sjuk", "sv"),
        ("Il servizio è in manutenzione per due ore", "it"),  # è is Italian as much as French
        ("Vamos a migrar a Postgres y a Redis", "es"),  # "a" is Spanish as much as Portuguese
        ("Je pense que on va migrer", "fr"),
        ("Non so come fare per il deploy", "it"),  # (review R1: "so" is Italian too, "I know")
    ],
)
def test_a_word_or_letter_of_several_languages_is_evidence_for_each(text: str, lang: str) -> None:
    assert detect(AUTO.words(text), text.lower()) == lang


def test_a_fixed_language_analyses_every_text_in_it() -> None:
    english_looking = "Deploy dos agendamentos"
    assert stem("agendamentos", "pt") in Analyzer("pt").tokens(english_looking)
    assert Analyzer("pt").name != AUTO.name  # a change of setting rewrites the stored weights
    with pytest.raises(ValueError, match=r"search\.language"):
        Analyzer("klingon")


def test_every_setting_has_an_analysis() -> None:
    assert set(SEARCH_LANGUAGES) == {"auto", *STEMMERS, *NO_STEMMER}


def test_the_weights_follow_the_analyzer() -> None:
    assert term_id(stem("clinica", "pt")) in doc_vector("clínicas de Lisboa", Analyzer("pt"))
    assert doc_vector("Redis caching", Analyzer("en")) == doc_vector("Redis caching")  # English: one analysis
    assert query_ids("预约", AUTO) == [term_id(t) for t in ("预", "约", "预约")]


def test_a_word_has_its_forms_in_every_language_but_never_a_short_one() -> None:
    forms = other_forms("déployer")
    assert stem("déploiements", "fr") in forms and stem("déployer", "en") in forms
    assert all(len(f) >= MIN_FORM for f in forms)
    assert other_forms("plugh") == ["plugh"]  # not "plug": a short stem meets unrelated words
    assert other_forms("1966") == [] and other_forms("预约") == []


def test_compound_words_are_also_indexed_in_the_forms_a_reader_types() -> None:
    """An identifier's parts and a hyphenated word written as one follow the text's own terms; the query's terms
    are its words as typed, so "NCCL", "ack wait", "oncall" and "email" meet them. A date is no word to join."""
    text = "Set NCCL_P2P_DISABLE=1 and ack_wait; Kofi is on-call. E-mail him by 2026-11-11."
    own = old_english(text)
    assert AUTO.tokens(text) == [*own, "nccl", "p2p", "disabl", "ack", "wait", "oncal", "email"]
    for query in ("NCCL", "ack wait", "oncall", "email", "nccl_p2p_disable", "on-call"):
        assert set(AUTO.query_terms(query)) <= set(AUTO.tokens(text)), query
    assert AUTO.query_terms("NCCL") == ["nccl"]  # the query is not split or joined: it is matched


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("What changed in v2.3.1.", ["2.3.1"]),  # a sentence's last dot is no part; a version's "v" is no part either
        ("The replica is at 10.0.3.17, the other at 10.0.3.71", ["10.0.3.17", "10.0.3.71"]),
        (
            "Served at https://api.example.com:8443/v1 now",
            ["api.example.com:8443/v1", "api.example.com:8443", "api.example.com"],
        ),
        ("Config in /etc/app/conf.d/main.toml", ["etc/app/conf.d/main.toml", "conf.d", "main.toml"]),
        ("pinned `>=1.2,<2` and python:3.11.4", ["1.2", "python:3.11.4", "3.11.4"]),
        ("版本2.3.1发布了", ["2.3.1"]),
        ("e.g. at 3 p.m. the client/server and/or J.K. Rowling", []),  # initials, words joined by slashes alone
    ],
)
def test_a_dotted_or_colon_joined_identifier_is_also_a_term_whole(text: str, whole: list[str]) -> None:
    """`v2.3.1` was only v2, 3, 1, and `20.11.1` the same bag as `20.1.11`: the identifier is also one term, in a
    note and a query alike, its words kept ("numpy 2" still meets "numpy 2.0")."""
    tokens = AUTO.tokens(text)
    assert [t for t in tokens if "." in t or ":" in t] == whole
    assert set(whole) <= set(AUTO.query_terms(text)) and not {"e.g", "p.m", "j.k", "client/server"} & set(tokens)
    assert AUTO.tokens("20.11.1") != AUTO.tokens("20.1.11") and {"numpi", "2"} <= set(AUTO.tokens("numpy 2.0"))


def test_a_query_s_numbers_inside_its_identifiers_are_no_evidence_alone() -> None:
    assert loose_numbers("1.0.0") == {"1", "0"} and loose_numbers("10.9.9.9") == {"10", "9"}
    assert loose_numbers("numpy 2 or 2.0") == {"0"} and loose_numbers("numpy 2") == set()


def test_a_word_after_two_dashes_is_also_written_as_one_and_a_symbol_is_a_term() -> None:
    assert "dryrun" in AUTO.tokens("Every script must support `--dry-run` first.")
    assert "bcd" not in AUTO.tokens("a-b-c-d-e") and "dryrun" in AUTO.tokens("--dry-run--")
    assert AUTO.query_terms("🔥") == ["🔥"] and "🔥" in AUTO.tokens("🔥 Prod is down: the ingest queue is stuck")
    assert AUTO.tokens("├── src │ └── main.py") == AUTO.tokens("src main.py")  # a tree's lines are no terms


def _seconds(text: str) -> float:
    """The best of two: the time to analyse `text` as a note and as a query, with its loose numbers."""
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        AUTO.tokens(text), AUTO.query_terms(text), loose_numbers(text)
        best = min(best, time.perf_counter() - started)
    return best


def _blob(size: int) -> str:
    letters = random.Random(0).choices(string.ascii_letters + string.digits + "-_", k=size)
    return "".join(letters)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "line",
    [
        "see x.y!" + "a-" * 32768,  # a hyphen chain after a dotted word, no space between
        "config.yaml?token=" + _blob(65536),  # a pasted token, base64url
        "x.y!" + "-a" * 32768,
    ],
    ids=["hyphen-chain", "base64url", "dash-words"],
)
def test_a_long_line_of_hyphen_joined_words_after_a_dotted_one_is_analysed_in_linear_time(line: str) -> None:
    """The identifier's pattern was tried from each word of a hyphen chain to the chain's end: a 32 KB line took 17 s
    to analyse (0.02 s before analysis v7) and `index` of its file four times as long; a 1 MiB paste would take
    hours. 64 KB of it takes about what 64 KB of prose does (a generous bound: the machine may be loaded)."""
    ordinary = _seconds(("The replica at 10.0.3.17 runs app-v2.conf; see x.y for on-call notes. " * 1000)[: len(line)])
    took = _seconds(line)
    assert took < 10 * ordinary + 0.5, f"{took:.2f} s for {len(line)} characters, {ordinary:.3f} s for prose"
