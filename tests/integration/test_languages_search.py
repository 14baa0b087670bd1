"""Search across languages through a real index: each candidate's detected language and what the fusion and the
relevance floor do with it (core/search/language.py candidate_languages, core/search/rank.py Languages)."""

from __future__ import annotations

from pathlib import Path

from memsearch_lsp.config import SearchConfig
from memsearch_lsp.core.search.analyzer import Analyzer, fold
from memsearch_lsp.core.search.bm25 import query_ids
from memsearch_lsp.core.search.detection import detect
from memsearch_lsp.core.search.function_words import function_terms
from memsearch_lsp.core.search.hybrid import query_weights
from memsearch_lsp.core.search.language import QUERY_SURE, candidate_languages, query_language, sure_language
from tests.fakes import FakeEmbedder

PORTUGUESE = """# 2026-01-05

## Cache da API

O endpoint antigo de agenda criava chaves no cache sem prazo de validade, e a memória do servidor encheu
durante a madrugada. Trocamos a política de remoção para que as chaves mais antigas saiam primeiro e
colocamos um prazo de uma hora em todas as chaves novas. O time de plantão conferiu os gráficos depois.
"""

ENGLISH = """# 2026-01-06

## Release notes

We shipped the new onboarding screens to every clinic today and wrote the changelog for the mobile app.
"""


class EnglishEmbedder(FakeEmbedder):
    """The fake embedder declared as the bundled model is: reading English only."""

    languages = ("en",)


def _workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "2026-01-05.md").write_text(PORTUGUESE, encoding="utf-8")
    (root / "memory" / "2026-01-06.md").write_text(ENGLISH, encoding="utf-8")
    return root


TABLE = """| Field | Type | Null | Key |
|---|---|---|---|
| id | mediumint(8) | NO | PRI |
| email | varchar(80) | NO | UNI |
| name | varchar(80) | NO | |
"""


def test_a_chunk_has_a_language_only_when_the_detection_is_sure() -> None:
    """A table: `detect` calls it Portuguese for one "não" (BM25 stems it so, harmlessly); the fusion, which would
    take away its cosine or hand a question to the other leg, does not count on it. Its "NO"s are English as much
    as Portuguese: no evidence of either."""
    table = TABLE.replace("| NO | |", "| não | |")
    assert detect(Analyzer.words(table), table.lower()) == "pt" and sure_language(table) == ""
    assert detect(Analyzer.words(TABLE), TABLE.lower()) == "en" and sure_language(TABLE) == ""
    assert sure_language(PORTUGUESE) == "pt" and sure_language(ENGLISH) == "en"
    assert sure_language("断网的情况下，手机端能显示几天内的看诊安排") == "zh"
    # A question holds two function words of its language or more; a few keywords say nothing of theirs.
    assert sure_language("Which legacy endpoint kept creating cache keys that never expired?", QUERY_SURE) == "en"
    assert sure_language("¿Qué porcentaje de mensajes falló?", QUERY_SURE) == "es"
    assert sure_language("deploy staging cache", QUERY_SURE) == ""


TERSE = """# 2026-03-10

## Storage

Use Postgres as a DB, no Mongo. Do a backup at 2 a.m. via cron; a TTL of 30 min as default.
"""


def test_terse_english_notes_and_questions_are_english(tmp_path: Path, make_memory) -> None:
    """ "a", "as", "no", "do" are English as much as Portuguese: a terse English note and a question holding them
    were read as Portuguese for sure, and the English model's cosine was taken for noise on them (every such note
    scored the same 0.240, and a question in other words found nothing)."""
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "2026-03-10.md").write_text(TERSE, encoding="utf-8")
    memory = make_memory(root)
    memory.index()
    rows = [r for r in memory.store.rows([r["id"] for r in memory.store.scan(["id"])]) if "##" in r.content]
    assert rows and set(candidate_languages(Analyzer("auto"), rows).values()) == {"en"}
    for question in ("how do I do a release", "a list of no-go items", "Do we back up the DB at 2 a.m. or no?"):
        assert sure_language(question, QUERY_SURE) == "en", question


def test_each_candidate_is_detected_in_its_own_language(tmp_path: Path, make_memory) -> None:
    memory = make_memory(_workspace(tmp_path / "ws"))
    memory.index()
    rows = [r for r in memory.store.rows([r["id"] for r in memory.store.scan(["id"])]) if "##" in r.content]
    found = candidate_languages(Analyzer("auto"), rows)
    assert {r.source: found[r.id] for r in rows} == {"memory/2026-01-05.md": "pt", "memory/2026-01-06.md": "en"}
    assert candidate_languages(Analyzer("auto"), rows) == found  # again: from the process's memory
    assert candidate_languages(Analyzer("pt"), rows) == {}  # a set language: every text is read so


def test_an_english_question_finds_a_portuguese_note_it_shares_terms_with(tmp_path: Path, make_memory) -> None:
    """The English model's cosine with the Portuguese note is noise (low here): the floor judges the note by the
    terms it shares with the question instead, so it is found; a question sharing nothing still finds nothing."""
    memory = make_memory(_workspace(tmp_path / "ws"), EnglishEmbedder(), search={"min_score": SearchConfig().min_score})
    memory.index()
    hits = memory.search("Which legacy endpoint kept creating cache keys that never expired?", top_k=3)
    assert hits and hits[0].source == "memory/2026-01-05.md"
    assert memory.search("flibber wonk grizzle snorp", top_k=3) == []


FRENCH = """# 2026-01-07

## Déploiements

Les déploiements se font le mardi après-midi, jamais le vendredi. Élodie (SRE) valide chaque mise en production.
"""


def test_a_short_query_meets_a_note_in_another_form_of_its_word(tmp_path: Path, make_memory) -> None:
    """ "quand déployer" is too short to be told French, so it is read as English: its terms ("deployer") are in no
    chunk; its words' forms in the other languages are, and stand in for them ("deploi", the French stem of both
    "déployer" and "déploiements"). A query whose words the index holds is weighed as before."""
    root = _workspace(tmp_path / "ws")
    (root / "memory" / "2026-01-07.md").write_text(FRENCH, encoding="utf-8")
    memory = make_memory(root, EnglishEmbedder(), search={"min_score": SearchConfig().min_score})
    memory.index()
    own = memory.store.idf(query_ids("quand déployer"))
    assert not memory.store.sparse_leg({t: w for t, w in own.items()}, 5)  # its own terms meet nothing
    hits = memory.search("quand déployer", top_k=3)
    assert hits and hits[0].source == "memory/2026-01-07.md"
    analyzer = Analyzer("auto")
    held = "Which legacy endpoint kept creating cache keys that never expired?"
    assert query_weights(memory.store, held, analyzer) == memory.store.idf(query_ids(held, analyzer))
    assert memory.search("flibber wonk grizzle snorp plugh", top_k=3) == []  # short stems ("plug") are not tried


SPANISH = """# 2026-01-08

## Despliegue del servicio de pagos

El despliegue del servicio de pagos se hará con Kubernetes en el clúster de producción, con dos réplicas por zona.
"""


def test_function_words_of_the_query_language_make_no_note_relevant(tmp_path: Path, make_memory) -> None:
    """An unrelated question in Spanish or German shares only "de", "für", "der" with the notes: nothing passes the
    floor, as for the same question in English. A question that shares its content words still finds its note,
    and the function words still rank (the floor alone leaves them out)."""
    root = _workspace(tmp_path / "ws")
    (root / "memory" / "2026-01-08.md").write_text(SPANISH, encoding="utf-8")
    memory = make_memory(root, EnglishEmbedder(), search={"min_score": SearchConfig().min_score})
    memory.index()
    for unrelated in ("recipe for lemon drizzle cake", "receta de pastel de limón", "receita de bolo de cenoura"):
        assert memory.search(unrelated, top_k=3) == [], unrelated
    hits = memory.search("¿Cómo se hará el despliegue del servicio de pagos?", top_k=3)
    assert hits and hits[0].source == "memory/2026-01-08.md"
    assert function_terms(Analyzer("auto"), "receta de pastel de limón") == {"de"}
    assert function_terms(Analyzer("auto"), "recipe for lemon cake") == set()  # English ones are never asked


MIXED = """# 2026-12-01

## 09:45

新同事李娜下周一入职，负责数据分析，需要开通 Metabase 和只读数据库账号。

## 14:30

王伟（运维负责人）说，生产环境的日志保留 14 天，之后自动删除。

## 15:10

讨论了搜索功能：用 Elasticsearch 的 ik_max_word 分词器处理中文。

## 16:00

La API de pagos devuelve error 422 cuando el monto tiene más de dos decimales.

## 16:30

Neue Konvention: Feature-Flags werden nach spätestens 90 Tagen entfernt.
"""


def test_a_shared_character_or_question_word_makes_no_note_relevant(tmp_path: Path, make_memory) -> None:
    """Unrelated questions in Chinese, Spanish and German that share one common character (天, 的, 周), an
    accented question word ("cuándo" of the note's "cuando") or a German "nach" read as English with a note find
    nothing; the questions those notes answer still find them."""
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "2026-12-01.md").write_text(MIXED, encoding="utf-8")
    memory = make_memory(root, EnglishEmbedder(), search={"min_score": SearchConfig().min_score})
    memory.index()
    for unrelated in (
        "天气怎么样",
        "柠檬蛋糕的做法",
        "周末去爬山吗",
        "的",
        "¿Cuándo es el cumpleaños de mi abuela?",
        "Reise nach Berlin",
    ):
        assert memory.search(unrelated, top_k=3) == [], unrelated
    for question, answer in (
        ("日志保留多久？", 7),
        ("几天后删", 7),  # in other words than the note's: several of its characters, no pair
        ("中文分词用什么", 11),
        ("李娜什么时候入职", 3),
        ("¿Cuándo devuelve error la API de pagos?", 15),
        ("Wann werden Feature-Flags entfernt?", 19),
    ):
        hits = memory.search(question, top_k=3)
        assert hits and hits[0].start_line == answer, question


def test_a_portuguese_plural_in_oes_meets_its_singular_in_ao(tmp_path: Path, make_memory) -> None:
    from memsearch_lsp.core.search.analyzer import stem

    forms = {stem(word, "pt") for word in ("migração", "migrações", "migracoes", "migracao")}
    assert len(forms) == 1
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "2026-01-09.md").write_text(
        "# 2026-01-09\n\n## Decisões\n\nA migração do banco de dados para o PostgreSQL fica para o próximo "
        "trimestre, e as conexões passam pelo pgbouncer.\n",
        encoding="utf-8",
    )
    memory = make_memory(root, EnglishEmbedder(), search={"min_score": SearchConfig().min_score})
    memory.index()
    for query in ("migrações", "migracoes", "conexão", "decisão"):
        hits = memory.search(query, top_k=3)
        assert hits and hits[0].source == "memory/2026-01-09.md", query


DENTIST = """# 2026-10-02

## 08:30 Dentist

Booked a dentist appointment with Dr. Mendes for October 15 at 10:00. The clinic is at Rua Augusta 120.
"""

VET = """# 2026-11-20

## 15:00 Clínica veterinária

Levei o gato Bolinhas à clínica veterinária. Precisa de vacina contra a raiva em janeiro; a consulta custou 65 euros.
"""


class SubwordEmbedder(EnglishEmbedder):
    """An English model reads a word it does not know by its pieces: "clínica" as the "clinic" it knows."""

    def _one(self, text: str) -> list[float]:
        return super()._one(" ".join(fold(word)[:6] for word in text.lower().split()))


def test_a_few_words_of_another_language_find_the_note_that_holds_them(tmp_path: Path, make_memory) -> None:
    """(audit Y3, 1) "clínica veterinária" has no function word to tell its language: it was read as English, and
    the English model's cosine with an English note ("The clinic is at...") outranked the Portuguese note holding
    both words (BM25 alone finds that note only). A query whose words only notes in a language the model cannot
    read hold is read in that language: BM25 ranks. Words English notes hold as well keep the query English."""
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "2026-10-02.md").write_text(DENTIST, encoding="utf-8")
    (root / "memory" / "2026-11-20.md").write_text(VET, encoding="utf-8")
    (root / "memory" / "MEMORY.md").write_text("# Memory\n\n## About me\n- I am Laura; I live in Lisbon.\n")
    memory = make_memory(root, SubwordEmbedder(), search={"min_score": 0.0})  # the order, whatever the floor
    memory.index()
    for query in ("clínica veterinária", "clinica veterinaria", "veterinário do gato", "clinica"):
        hits = memory.search(query, top_k=3)
        assert [h.source for h in hits][:1] == ["memory/2026-11-20.md"], (query, [h.source for h in hits])
    hits = memory.search("dentist clinic", top_k=3)
    assert hits and hits[0].source == "memory/2026-10-02.md"


def test_a_query_is_read_in_the_language_of_the_notes_that_alone_hold_its_words() -> None:
    english = ("en",)
    assert query_language("en", False, english, {"vet": "pt", "den": "en"}, {"vet": 1.0, "den": 0.0}) == "pt"
    assert query_language("en", False, english, {"vet": "pt", "den": "en"}, {"vet": 1.0, "den": 0.6}) == "en"
    assert query_language("en", False, english, {"vet": "pt", "den": ""}, {"vet": 1.0, "den": 0.6}) == "en"
    assert query_language("en", True, english, {"vet": "pt"}, {"vet": 1.0}) == "en"  # a sure question
    assert query_language("en", False, (), {"vet": "pt"}, {"vet": 1.0}) == "en"  # a model of every language
