"""The words of the languages a team's memory is written in, as compaction reads them: the words that tell a fact's
kind in Portuguese, Spanish, German, French and Chinese (`cues(kind)`: per kind, one line of each Latin-script
language and one of Chinese), the noise said in them (`NOISE`), English stop words, and how Chinese counts its
words and prints a label (`words`, `with_colon`).

core/compact/rules.py and facts.py add each kind's cues to its English rule, so "Decidimos usar Redis", "Die
Ursache war ..." and "修复：把超时改成 120 秒" are found like "We decided", "The cause was" and "Fix: ...". Words of a
Latin-script language match as whole words (case-insensitive); Chinese ones anywhere (it has no spaces).
"""

from __future__ import annotations

import re

_HAN = "[\u3400-\u9fff]"
HAN = re.compile(_HAN)  # a Chinese character

# English words that say little on their own: a rare word of a sentence weighs more (core/compact/extractive.py)
STOPWORDS = frozenset(
    re.findall(
        r"\S+",
        """
    a an the and or but if so of to in on at by for with from as is are was were be been being am it its this that
    these those there here i me my we our you your he she his her they them their what which who whom when where why
    how do does did done have has had not no yes just really very too also much many more most some any all can could
    would should will shall may might must get got about into over than then out up down off again only own same such
    both each few other like well still even ever""",
    )
)

# kind -> (the Latin-script words, pt / es / de / fr in turn; the Chinese ones)
_WORDS: dict[str, tuple[str, str]] = {
    "decision": (
        r"decidi\w*|decisão|optamos|escolhemos|vamos (?:usar|manter|ficar com|trocar|migrar)|ficamos com|em vez de|"
        r"decisión|elegimos|vamos a (?:usar|mantener|quedarnos|cambiar|migrar)|nos quedamos con|en (?:lugar|vez) de|"
        r"entschieden|entscheid\w*|beschlossen|bleibt (?:bei|für|auf)|(?:an)?statt|stattdessen|umgestellt|vereinbart|"
        r"décid\w+|on garde|on passe à|au lieu de|plutôt que|"
        r"substitu(?:ir|iu|ímos|í|ído|ída)|sustitu\w+|reemplaz\w+|ersetz\w+|remplac\w+|migr\w+|acordamos|acordado|combinado",
        r"决定|决策|结论|定了|选用|改用|换成|替换|取代|保留|继续使用|而不是|不再|迁移到|那就",
    ),
    # labels whose lines a summary always keeps ("Decisão:", "Regel:", "待办："), and the sections they name
    "decision-label": (r"decisão|decisión|entscheidung|décision|combinado|acordado|vereinbart|convenu", r"决定|结论"),
    "rule-label": (r"regras?|reglas?|regeln?|règles?", r"规则|约定"),
    "label": (
        r"causa(?: raiz| raíz)?|ursache|correção|corrección|solução|solución|lösung|correctif|pendentes?|"
        r"pendientes?|offen|prazo|plazo|frist",
        r"原因|根因|修复|解决|待办|截止",
    ),
    # a decision not (yet) taken: "nada decidido", "nichts entschieden", "没有结论" (status, never a decision)
    "undecided": (
        # (the verbs' own forms: "decid\w*" would take English "no single team decides ..." for one)
        r"nada (?:\w+ )?(?:decidido|resolvido|definido|combinado)|"
        r"não (?:\w+ ){0,2}decid(?:[ií]|imos|iu|iram|ido|ida|idos|idas|e|em)\b|sem (?:decisão|conclusão)|"
        r"nada (?:\w+ )?(?:resuelto|acordado)|"
        r"no (?:\w+ ){0,2}(?:decid(?:[ií]|imos|i[oó]|ieron|ido|ida|idos|idas)\b|acordamos|hay decisión)|"
        r"sin (?:decisión|conclusión|acuerdo)|indecis\w*|"
        r"nichts (?:\w+ )?(?:entschieden|beschlossen|vereinbart|festgelegt)|keine (?:Entscheidung|Einigung)|"
        r"nicht (?:\w+ )?(?:entschieden|beschlossen|geeinigt|festgelegt)|unentschieden|bleibt offen|"
        r"ohne (?:Ergebnis|Entscheidung|Einigung)|"
        r"rien (?:de |n'a été )?(?:décidé|tranché|conclu)|pas (?:encore )?(?:de décision|décidé|tranché)|"
        r"aucune décision|sans (?:décision|conclusion)",
        r"没有?(?:结论|定论|决定|定下来)|还没有?(?:决定|定下来)|尚未决定|未作?决定|待定|悬而未决|没有?达成(?:一致|共识)",
    ),
    # a decision told as one, which compaction may propose for MEMORY.md (core/compact/promote.py)
    "decision-told": (
        r"decidimos|decidido|optamos|escolhemos|ficamos com|elegimos|nos quedamos con|entschieden|beschlossen|"
        r"wir bleiben bei|décidé|on garde",
        r"决定|定了|改用|那就",
    ),
    # what holds only for a while (a wish with a deadline is a task, not a lasting preference)
    "time-bound": (
        r"hoje|amanhã|ontem|esta semana|até|hoy|mañana|ayer|esta semana|hasta|heute|morgen|gestern|diese Woche|bis|"
        r"aujourd'hui|demain|hier|cette semaine|jusqu'à",
        r"今天|明天|昨天|本周|这周|下周|之前|(?<!每)[周星期][一二三四五六日天]|\d{1,2} ?月 ?\d{1,2} ?[日号]",
    ),
    "cause": (
        r"causa(?: raiz| raíz)?|causad[oa] por|por causa d[eoa]|o problema (?:era|é)|devido a|"
        r"debido a|por culpa de|el problema (?:era|es)|"
        r"Ursache|verursacht|lag an|liegt an|das Problem (?:war|ist)|"
        r"à cause de|le problème (?:était|est)|causé par",
        r"原因|根因|导致|由于|因为|造成|问题出在",
    ),
    # a failure, and the word that gives its reason: "falhou porque", "fehlgeschlagen, weil", "a échoué parce que"
    "failure": (
        r"falh\w+|erros?|travou|trava|caiu|quebr\w+|duplicad[oa]s?|"
        r"fall(?:ó|a|an|aron|ido|ida)|errores|se colgó|colgad[oa]|roto|"
        r"fehlgeschlagen|schlägt fehl|schlug fehl|Fehler\w*|abgestürzt|stürzt|hängt|hing|doppelt|"
        r"échou\w*|erreurs?|plant\w*|bloqué\w*|en panne|dupliqu\w+",
        r"失败|报错|崩溃|卡住|超时|宕机",
    ),
    # a sentence that opens by naming a failure's cause ("Causa raíz: ...", "Die Ursache war ...", "根本原因是 ..."):
    # what happened, never a rule to keep (core/compact/promote.py)
    "cause-label": (
        r"(?:[ao] )?(?:verdadeira |real )?causa(?: raiz)?|o motivo|o problema (?:era|foi)|"
        r"(?:la )?(?:verdadera )?causa(?: raíz)?|el motivo|el problema (?:era|fue)|"
        r"(?:die )?(?:eigentliche )?Ursache|der Grund|das Problem (?:war|lag)|"
        r"(?:la )?(?:vraie )?cause(?: racine| première)?|le problème (?:était|venait)",
        r"(?:根本|真正的?|主要)?原因|根因|问题出在",
    ),
    "because": (r"porque|pois|weil|denn|parce que|parce qu'|puisque", r"因为|由于"),
    "fix": (
        r"corrigi\w*|correção|resolv(?:ido|ida|emos|eu)|solução|consert\w+|"
        r"correg\w+|corrección|arregl\w+|solucion\w+|solución|resuelt\w+|parche|"
        r"behoben|beheb\w+|gefixt|fixt|Lösung|gelöst|repariert|"
        r"corrigé|correctif|résolu|contournement",
        r"修复|修好|修正|解决|临时方案|回滚|改成|调到|调成",
    ),
    "preference": (
        r"prefer(?:e|em|imos|iu|ência|encia)|gostaria|prefier\w+|le gustaría|bevorzug\w+|lieber|möchte|"
        r"préf[éè]r\w+|voudrait",
        r"希望|喜欢|偏好|倾向",
    ),
    # a standing rule (also a preference): "sempre", "por defecto", "kein Deploy am Freitag", "一律"
    "rule": (
        r"sempre|nunca|regra|convenção|por padrão|obrigatóri\w+|siempre|regla|convención|por defecto|obligatori\w+|"
        r"immer|nie(?:mals)?|Regel|Konvention|standardmäßig|kein(?:e|en)? \w+ (?:am|nach|ohne|vor)|"
        r"toujours|jamais|règle|par défaut|obligatoire",
        r"必须|一律|总是|一定要|永远|(?<!要)不要|不能|不允许|禁止|规则|约定|规范|默认",  # (not 要不要: "whether to")
    ),
    "todo": (
        r"prazo|precisa(?:mos)?|pendente|tem(?:os)? que|"
        r"plazo|fecha límite|hay que|tenemos que|pendiente|"
        r"Frist|muss|müssen|noch zu|soll bis|"
        r"d'ici|échéance|il faut|à faire",
        r"截止|需要|待办|要做|还没做|搞定",
    ),
    "date": (
        r"(?:segunda|terça|quarta|quinta|sexta)(?:-feira)?|sábado|domingo|lunes|martes|miércoles|jueves|viernes|"
        r"Montag|Dienstag|Mittwoch|Donnerstag|Freitag|Samstag|Sonntag|lundi|mardi|mercredi|jeudi|vendredi|"
        r"janeiro|fevereiro|março|abril|maio|junho|julho|agosto|setembro|outubro|novembro|dezembro|"
        r"enero|febrero|marzo|mayo|junio|julio|septiembre|octubre|noviembre|diciembre|"
        r"Januar|Februar|März|Juni|Juli|Oktober|Dezember|janvier|février|avril|juin|juillet|août|"
        r"\d{1,2}\.\d{1,2}\.\d{4}|(?:até|hasta|bis|avant)(?: (?:o|a|el|la|le|zum|zur))? \d",
        r"\d{1,2} ?月 ?\d{1,2} ?[日号]|[周星期][一二三四五六日天]|下周|本周|月底|年底",
    ),
}


# a Chinese name (a common surname and one or two characters) and a role: 王磊（后端工程师）, （王磊，技术负责人）
ZH_NAME = (
    r"(?P<name>[王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈"
    r"姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵钱严武戴莫孔汤]"
    + _HAN
    + r"{1,2})"
)
ZH_ROLE = (
    r"(?P<role>[^（）()，,。]{0,10}(?:负责人|经理|工程师|主管|总监|架构师|设计师|测试|运维|产品|开发|组长|专家|顾问|"
    r"科学家|分析师|[A-Z]{2,4}))"
)


def words(text: str) -> int:
    """How many words `text` says: its runs of letters or digits, and a word for every two Chinese characters (which
    have no spaces between words)."""
    return len(re.findall(r"[^\W\u3400-\u9fff]+", text)) + len(re.findall(_HAN, text)) // 2


def with_colon(label: str) -> str:
    """A line's label as the summary prints it: "Decision: ", and a Chinese one with its own colon ("根本原因：")."""
    return "" if not label else label + ("：" if HAN.match(label[-1]) else ": ")


def cues(kind: str) -> str:
    """The regex alternatives (no flags of their own) that find a fact of `kind` in the other languages."""
    latin, han = _WORDS[kind]
    return rf"(?<![^\W\d_])(?i:{latin})(?![^\W\d_])|{han}"


# noise in the other languages: the agent narrating (at a sentence's start), status, dead ends, small talk
NOISE: dict[str, re.Pattern[str]] = {
    "narration": re.compile(
        r"^(?:vou (?:olhar|ver|verificar|checar|começar|dar uma olhada)|deixa eu|voy a|déjame|"
        r"ich (?:schaue|sehe|gucke|fange|werde)|schaue mir|je vais|je regarde|我先|我来|先看|看一下)",
        re.I,
    ),
    "status": re.compile(
        r"ainda esperando|aguardando|todavía esperando|sigo esperando|warte (?:noch )?auf|wartet noch|"
        r"j'attends|还在等|仍在等",
        re.I,
    ),
    "dead_end": re.compile(
        r"não (?:ajudou|resolveu|adiantou)|sem efeito|no (?:ayudó|sirvió|funcionó)|sin efecto|"
        r"hat nicht (?:geholfen|funktioniert)|half nicht|brachte nichts|keine Wirkung|n'a pas aidé|sans effet|"
        r"没有用|没用|没有效果|无效|不管用|白白浪费",
        re.I,
    ),
    "chatter": re.compile(
        r"^(?:almoço|almuerzo|mittag(?:essen)?|déjeuner|café|kaffee|中午|午饭|午餐|下午茶|" + _HAN + r"{0,6}(?:吃|聊))",
        re.I,
    ),
}
