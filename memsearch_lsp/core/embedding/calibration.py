"""The probe that measures where a model's cosines lie (`measure`: a Calibration), cached per model name.

Sixteen questions, each with the note that answers it, on sixteen different subjects and in six languages.
`related` is the mean cosine of a question and its own note, `unrelated` the mean over a question and every
other note: the two levels the fusion needs to read any model's cosines on the bundled model's scale
(base.Calibration). A model is probed once (32 texts) and the figures kept in the user's cache
(`<cache>/memsearch-lsp/calibration.json`), so a process after the first pays nothing.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from memsearch_lsp.core.embedding.base import REFERENCE, Calibration

log = logging.getLogger(__name__)

PROBE: tuple[tuple[str, str], ...] = (
    ("How long do we keep the application logs?", "Logs are deleted after 30 days by the retention job."),
    ("Which database version does production run?", "Production was upgraded to PostgreSQL 16.4 last week."),
    ("What did the dentist say about my tooth?", "The dentist said the molar needs a crown next month."),
    ("Where are we going on holiday this summer?", "We booked two weeks in a cabin by a lake in Norway."),
    ("Why did the nightly build fail?", "The nightly build failed because the test runner ran out of memory."),
    ("What is Maria's favourite book?", "Maria keeps rereading One Hundred Years of Solitude."),
    ("Quanto tempo demora a entrega do pedido?", "A entrega do pedido leva de três a cinco dias úteis."),
    ("Qual é a senha do wi-fi do escritório?", "A rede do escritório usa a senha que está no quadro da cozinha."),
    ("¿Cuándo es la reunión con el cliente?", "La reunión con el cliente quedó para el jueves a las diez."),
    ("¿Qué receta usamos para el pan?", "Para el pan usamos harina integral, agua, sal y masa madre."),
    ("Wann wird die Heizung gewartet?", "Der Techniker kommt am Montag, um die Heizung zu warten."),
    ("Welche Farbe hat das neue Logo?", "Das neue Logo ist dunkelblau mit einem orangefarbenen Punkt."),
    ("Qui s'occupe du jardin pendant les vacances?", "Pendant les vacances, le voisin arrose le jardin."),
    ("Comment configurer l'imprimante?", "Pour l'imprimante, installez le pilote puis choisissez le port USB."),
    ("猫每天吃几次?", "我们的猫每天早上和晚上各吃一次。"),
    ("服务器的备份在哪里?", "服务器每天晚上把备份存到对象存储里。"),
)

_LOCK = threading.Lock()
_MEASURED: dict[str, Calibration] = {}


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memsearch-lsp" / "calibration.json"


def score(
    embed: Callable[[Sequence[str]], list[list[float]]], embed_query: Callable[[str], list[float]]
) -> Calibration:
    """The probe's two levels for a model (its passage and query forms)."""
    passages = embed([p for _, p in PROBE])
    queries = [embed_query(q) for q, _ in PROBE]
    related: list[float] = []
    unrelated: list[float] = []
    for i, query in enumerate(queries):
        for j, passage in enumerate(passages):
            cosine = sum(a * b for a, b in zip(query, passage))
            (related if i == j else unrelated).append(cosine)
    return Calibration(
        unrelated=round(sum(unrelated) / len(unrelated), 4), related=round(sum(related) / len(related), 4)
    )


def measure(
    model_name: str,
    embed: Callable[[Sequence[str]], list[list[float]]],
    embed_query: Callable[[str], list[float]],
) -> Calibration:
    """The model's calibration: from this process's memory, the user's cache, or the probe (then kept). A probe
    that does not separate related from unrelated text gives REFERENCE (the cosines are read as they are)."""
    with _LOCK:
        if model_name in _MEASURED:
            return _MEASURED[model_name]
        path = _cache_file()
        saved: dict[str, dict[str, float]] = {}
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            found = Calibration(**saved[model_name])
        except (OSError, ValueError, TypeError, KeyError):
            found = None
        if found is None:
            found = score(embed, embed_query)
            log.info("calibrated %s: unrelated %.3f, related %.3f", model_name, found.unrelated, found.related)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                saved = saved if isinstance(saved, dict) else {}
                saved[model_name] = {"unrelated": found.unrelated, "related": found.related}
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(saved, indent=1, sort_keys=True), encoding="utf-8")
                os.replace(tmp, path)
            except OSError as exc:  # a read-only home: measured again by the next process
                log.debug("cannot keep the calibration in %s: %s", path, exc)
        _MEASURED[model_name] = found if found.usable else REFERENCE
        return _MEASURED[model_name]
