"""Compaction reads a team's memory in its own language: the fact rules, the people, the noise and the promoted
facts of Portuguese, Spanish, German, French and Chinese logs (core/compact/languages.py)."""

from __future__ import annotations

import pytest

from memsearch_lsp.core.compact.extractive import choose, parse_log
from memsearch_lsp.core.compact.facts import classify, people, people_line, rules_for
from memsearch_lsp.core.compact.promote import durable_facts
from tests.helpers import log_text


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("Decidimos usar o RabbitMQ em vez do SQS para as filas internas.", "decision"),
        ("Nos quedamos con Postgres en lugar de MongoDB.", "decision"),
        ("Wir haben entschieden: Keycloak ersetzt das alte LDAP-Login.", "decision"),
        ("On garde Vue au lieu de passer à React.", "decision"),
        ("最后决定改用 gRPC，而不是继续用 REST。", "decision"),
        ("A causa raiz era um índice faltando na tabela orders.", "cause"),
        ("El problema era un timeout de 5 s en el balanceador.", "cause"),
        ("Die Ursache war ein falsch gesetztes Limit im Ingress.", "cause"),
        ("根本原因是连接池只有 50 个连接。", "cause"),
        ("O backup noturno falhou porque o disco do servidor estava cheio.", "cause"),
        ("La copia nocturna falló porque el disco estaba lleno.", "cause"),
        ("Die Sicherung ist fehlgeschlagen, weil die Festplatte voll war.", "cause"),
        ("La sauvegarde a échoué parce que le disque était plein.", "cause"),
        ("Corrigimos o erro aumentando o pool para 200.", "fix"),
        ("Lo arreglamos con un índice nuevo en customer_id.", "fix"),
        ("Der Fehler ist behoben, seit das Limit bei 512 MB liegt.", "fix"),
        ("修复：把超时改成 120 秒。", "fix"),
        ("A Júlia prefere revisões pequenas, sempre com testes.", "preference"),
        ("Regla del equipo: nunca desplegar los viernes.", "preference"),
        ("Kein Merge ohne zweites Review.", "preference"),
        ("On ne déploie jamais le vendredi.", "preference"),
        ("所有金额一律用分存储，不要用浮点数。", "preference"),
        ("O relatório precisa estar pronto até sexta-feira.", "todo"),
        ("Tenemos que migrar los logs antes del 15 de marzo.", "todo"),
        ("Der Bericht muss bis Mittwoch fertig sein.", "todo"),
        ("待办：更新 runbook。", "todo"),
        ("Das Release ist für den 15.04.2027 geplant.", "date"),
        ("新版本 4月15日 上线。", "date"),
        ("每个分区的 lag 都在 6.3万左右，等待时间 41秒。", "number"),
    ],
)
def test_a_rule_finds_each_kind_of_fact_in_the_team_s_language(sentence: str, kind: str) -> None:
    facts = classify(sentence, first=False)
    if kind == "date":  # a date alone is no fact, in any language: the rule finds it all the same
        assert "date" in rules_for(sentence), (sentence, rules_for(sentence))
    else:
        assert kind in facts.kinds and facts.factual, (sentence, facts, rules_for(sentence))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("今天我（王磊，后端工程师）值班。", {"王磊": "后端工程师"}),
        ("陈静（反作弊负责人）提醒我们补跑。", {"陈静": "反作弊负责人"}),
        ("周会上张伟（产品经理）说要先上线。", {"张伟": "产品经理"}),  # "周会上" is no name
        ("Jonas Weber (Tech Lead) leitet das Meeting.", {"Jonas Weber": "Tech Lead"}),
        ("Café con Diego (científico de datos).", {"Diego": "científico de datos"}),
        ("Klaus ist unser Teamleiter.", {"Klaus": "Teamleiter"}),
        ("Marta é nossa gerente de produto.", {"Marta": "gerente de produto"}),
        ("Lucía es nuestra diseñadora.", {"Lucía": "diseñadora"}),
        ("Redis（缓存）和 Kafka（消息队列）都在一台机器上。", {}),  # a thing and what it is: no person
    ],
)
def test_people_are_found_with_their_role_in_other_languages(text: str, expected: dict[str, str]) -> None:
    assert people([text]) == expected


@pytest.mark.parametrize(
    ("sentence", "noise"),
    [
        ("Vou olhar o código do scheduler antes de mexer.", "narration"),
        ("Voy a revisar los logs del balanceador.", "narration"),
        ("Ich schaue mir die Metriken an.", "narration"),
        ("我先看一下 Redis 的内存。", "narration"),
        ("PR #88 aberto, ainda esperando review da Ana.", "status"),
        ("还在等 Jonas review 这个 PR。", "status"),
        ("Reiniciamos el pod 3 veces, no ayudó.", "dead_end"),
        ("Neustart des Pods hat nicht geholfen.", "dead_end"),
        ("重启了 redis-queue-1，但是没有用。", "dead_end"),
        ("Almoço no restaurante da esquina.", "chatter"),
        ("中午和同事去吃了拉面。", "chatter"),
    ],
)
def test_noise_is_noise_in_other_languages(sentence: str, noise: str) -> None:
    assert noise in classify(sentence).noise


def test_a_summary_of_a_german_and_a_chinese_day_keeps_the_facts_not_the_narration() -> None:
    logs = [
        log_text(
            "2027-04-07",
            "# 2027-04-07\n\nIch schaue mir zuerst die Dashboards an.\n"
            "Die Ursache war ein Limit von 100 Verbindungen im PgBouncer; behoben mit 400 Verbindungen.\n"
            "Mittagessen beim Italiener, sehr lecker.\n",
        ),
        log_text(
            "2027-04-08",
            "# 2027-04-08\n\n我先看一下告警。重启了网关，但是没有用。原因是 Redis 连接池被耗尽了。"
            "修复：把连接池调到 200。中午和同事去吃了拉面。\n",
        ),
    ]
    text = choose([item for log in logs for item in parse_log(log)], budget=330)
    assert "Die Ursache war ein Limit von 100 Verbindungen" in text and "原因是 Redis 连接池被耗尽了。" in text
    assert "Ich schaue" not in text and "Mittagessen" not in text and "拉面" not in text and "重启" not in text


def test_a_failure_and_its_reason_are_kept_as_one_sentence_in_every_language() -> None:
    """German puts a comma before "weil": the sentence is not cut there, so its cause is kept with its failure."""
    day = (
        "# 2027-04-09\n\nKaffee mit dem Team getrunken, nettes Gespräch über das Wochenende.\n"
        "Die nächtliche Sicherung ist fehlgeschlagen, weil die Festplatte des Backupservers voll war.\n"
        "Danach noch eine lange Runde über das Wetter und die Bahn, nichts Neues.\n"
    )
    text = choose(parse_log(log_text("2027-04-09", day)), budget=160)
    assert "fehlgeschlagen, weil die Festplatte des Backupservers voll war" in text
    assert "Kaffee" not in text and "Wetter" not in text


def test_the_people_line_writes_a_chinese_name_as_its_writer_does() -> None:
    line = people_line(["今天我（王磊，后端工程师）值班。", "Ana (gerente de produto) abriu a sprint."], 200)
    assert line == "People: 王磊（后端工程师）, Ana (gerente de produto).\n\n"


def test_lasting_facts_are_proposed_for_memory_in_the_team_s_language() -> None:
    log = log_text(
        "2027-04-05",
        "# 2027-04-05\n\n"
        "Combinado no time: toda migração de banco vai num PR separado.\n"
        "Decidimos manter o Redis 7 como fila de jobs.\n"
        "A Ana quer o relatório de custos até sexta-feira.\n"
        "所有金额一律用分存储，不要用浮点数。\n"
        "周四先把开关开到50%。\n"
        "缓存服务：一律用 Redis 7，不要再用 Memcached。\n",
    )
    proposed = {text: kind for kind, text, _, _ in durable_facts([log])}
    assert "缓存服务：一律用 Redis 7，不要再用 Memcached。" in proposed  # its label with its own colon, word for word
    assert proposed.get("toda migração de banco vai num PR separado.") == "decision"  # what was agreed
    assert proposed.get("Decidimos manter o Redis 7 como fila de jobs.") == "decision"
    assert proposed.get("所有金额一律用分存储，不要用浮点数。") == "preference"
    assert not any("relatório" in t or "周四" in t for t in proposed)  # a wish with a deadline, a plan for Thursday


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("It will resolve to null if the value is missing.", "fix"),  # "resolv..." is Portuguese only as resolvido
        ("Open System Preferences to change the shortcut.", "preference"),  # "prefere" is Portuguese, not this
        ("Use a command substitution to tie it together.", "decision"),  # "substituímos", not "substitution"
        ("Tagged v0.1.0 and wrote the release notes.", "setting"),  # a version, not a dotted key
        ("See the docs at https://docs.github.com/en/actions for more.", "setting"),  # a web address's host
    ],
)
def test_english_is_not_read_as_another_language(sentence: str, kind: str) -> None:
    assert kind not in classify(sentence, first=False).kinds, (sentence, rules_for(sentence))


_STRIPE = "Wir verwenden Stripe für Kartenzahlungen."
_LAPTOP = "Never run migrations from a laptop; the last one caused an outage."
_CACHE = "Causa raíz: la caché de miniaturas nunca se vaciaba."


@pytest.mark.parametrize(
    ("lines", "proposed"),
    [
        # a labelled decision is one by its label: what follows need not use an English verb ("we use")
        (
            "Decisão: usamos Stripe para os pagamentos com cartão.",
            ("decision", "usamos Stripe para os pagamentos com cartão."),
        ),
        (
            "Decisión: usamos Stripe para los pagos con tarjeta.",
            ("decision", "usamos Stripe para los pagos con tarjeta."),
        ),
        (f"Entscheidung: {_STRIPE}", ("decision", _STRIPE)),
        ("决定：用 Stripe 处理信用卡支付。", ("decision", "用 Stripe 处理信用卡支付。")),
        (f"Nach langer Diskussion über den Zahlungsanbieter. Entscheidung: {_STRIPE}", ("decision", _STRIPE)),
        ("Decisão: depois.\n\nDecision: TBD.", None),  # ... when it says enough on its own
        # a decision not (yet) taken is none, in any language (nor a label over one)
        ("Conversamos um pouco sobre o almoço de fim de ano, nada decidido.", None),
        ("Ainda não decidimos qual fila usar para os jobs.", None),
        ("Decisão: ainda não decidimos.", None),
        ("Hablamos un poco de la cena de Navidad, nada decidido.", None),
        ("Wir haben kurz über das Weihnachtsessen gesprochen, nichts entschieden.", None),
        ("Über den neuen Message-Broker noch keine Entscheidung, wir haben uns nicht geeinigt.", None),
        ("On a parlé du repas de Noël, rien de décidé.", None),
        ("我们讨论了很久要不要换掉现在的报表工具，最后还是没有结论。", None),
        ("Eu ainda não decidi se vamos migrar para o Redis.", None),
        ("Yo no decidí nada sobre migrar a Redis; todavia no se decidio.", None),
        ("Os detalhes não estão decididos: migrar para o Redis ou não.", None),
        # ... while an English one that says "no one decides" is taken
        (
            "Decision: no single team decides the API schema alone; changes go through the API guild.",
            ("decision", "no single team decides the API schema alone; changes go through the API guild."),
        ),
        # what caused a failure is what happened (the summary keeps it), not a rule, even told with "never"
        ("Root cause of the memory leak in the image service: the size cache was never cleared.", None),
        ("The root cause was that the notifier never returned its connections.", None),
        ("Root cause: the notifier opened a connection per message and never returned it.", None),
        ("Ursache des Speicherlecks im Bildservice: der Größen-Cache wurde nie geleert.", None),
        (_CACHE, None),
        ("Causa raiz: o cache de miniaturas nunca era limpo.", None),
        ("根本原因：缩略图缓存从来没有清空过，所以总是占满内存。", None),
        # ... while a rule that gives its cause is still a rule
        (f"{_CACHE}\n\nRegla del equipo: nunca desplegar los viernes.", ("preference", "nunca desplegar los viernes.")),
        (_LAPTOP, ("preference", _LAPTOP)),
    ],
)
def test_what_a_line_proposes_for_memory_md_in_every_language(lines: str, proposed: tuple[str, str] | None) -> None:
    found = [
        (kind, text)
        for kind, text, _, _ in durable_facts([log_text("2027-04-12", f"# 2027-04-12\n\n## 10:00\n\n{lines}\n")])
    ]
    assert found == ([proposed] if proposed else []), found
    if proposed is None and ("decid" in lines or "结论" in lines):
        assert "decision" not in classify(lines).kinds
