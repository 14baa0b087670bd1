"""Rewrite imports and dotted module names in the given files after a move of modules.

    python scripts/apply_moves.py [--table docs/moves-issue-30.txt] [--prose] FILE...

The table holds one `old.dotted.path new.dotted.path` per line. Rewritten: `from old import x`,
`import old`, `from parent import old_leaf` (as `from new_parent import new_leaf as old_leaf` when the
leaf is renamed, so code using the name is unchanged) and every dotted `old` or `old.attr` in strings
(`monkeypatch.setattr("old.f", ...)`). With `--prose`, the short forms in docs and docstrings too:
`core/old.py` paths and `core.old` names. Idempotent: names already in the new layout are left alone,
so it can run on a merge that mixes both. Prints each file it changed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def read_table(path: Path) -> dict[str, str]:
    moves: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            old, new = line.split()
            moves[old] = new
    return moves


def _already_new(text: str, at: int, news: list[str]) -> bool:
    """True when the dotted name starting at `at` is one of the new module paths (or inside one)."""
    return any(
        text.startswith(new, at) and not re.match(r"[\w]", text[at + len(new) : at + len(new) + 1]) for new in news
    )


def _split_off(moves: dict[str, str]) -> list[str]:
    """Modules of the new layout under an old name's package that the table does not list (store.schema,
    compact.types: split out of a module, not moved), in the table's own form (full or short names)."""
    full = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "memsearch_lsp").rglob("*.py")}
    short = next(iter(moves), "").startswith("memsearch_lsp.") is False
    names = {n.removeprefix("memsearch_lsp.") for n in full} if short else full
    return [n for n in names if n not in moves and any(n.startswith(old + ".") for old in moves)]


def rewrite_dotted(text: str, moves: dict[str, str]) -> str:
    news = sorted([*moves.values(), *_split_off(moves)], key=len, reverse=True)
    # longest old names first, so `core.embed_openai` is not read as `core.embed` + `_openai`
    pattern = re.compile(
        r"(?<![\w.])(" + "|".join(re.escape(o) for o in sorted(moves, key=len, reverse=True)) + r")(?![\w])"
    )

    modules = set(news)

    def sub(match: re.Match[str]) -> str:
        if _already_new(match.string, match.start(), news):
            return match.group(0)
        leaf = re.match(r"[ \t]+import[ \t]+\(?[ \t]*(\w+)", match.string[match.end() :])
        if leaf and f"{match.group(1)}.{leaf.group(1)}" in modules:  # `from new_package import new_module`
            return match.group(0)
        return moves[match.group(1)]

    return pattern.sub(sub, text)


_FROM_PARENT = re.compile(
    r"^(?P<indent>[ \t]*)from (?P<parent>[\w.]+) import (?P<names>\([^)]*\)|[^\n#]+?)"
    r"(?P<tail>[ \t]*(#[^\n]*)?)$",
    re.MULTILINE,
)


def rewrite_from_parent(text: str, moves: dict[str, str]) -> str:
    """`from memsearch_lsp.core import lite, clock` -> one line per new parent, aliased to the old leaf."""

    def sub(match: re.Match[str]) -> str:
        parent, indent = match.group("parent"), match.group("indent")
        raw = match.group("names").strip().strip("()")
        items = [n.strip() for n in raw.replace("\n", " ").split(",") if n.strip()]
        if not any(f"{parent}.{item.split(' as ')[0].strip()}" in moves for item in items):
            return match.group(0)
        kept: list[str] = []
        moved: list[str] = []
        for item in items:
            name, _, alias = (part.strip() for part in item.partition(" as "))
            new = moves.get(f"{parent}.{name}")
            if new is None:
                kept.append(item)
                continue
            new_parent, _, leaf = new.rpartition(".")
            local = alias or name
            moved.append(f"{indent}from {new_parent} import {leaf}" + ("" if leaf == local else f" as {local}"))
        lines = ([f"{indent}from {parent} import {', '.join(kept)}"] if kept else []) + moved
        return "\n".join(lines) + match.group("tail")

    return _FROM_PARENT.sub(sub, text)


def rewrite_prose(text: str, moves: dict[str, str]) -> str:
    """`core/store.py` and `core.store` in docs and docstrings."""
    short = {o.removeprefix("memsearch_lsp."): n.removeprefix("memsearch_lsp.") for o, n in moves.items()}
    text = rewrite_dotted(text, short)
    paths = {o.replace(".", "/") + ".py": n.replace(".", "/") + ".py" for o, n in short.items()}
    pattern = re.compile(r"(?<![\w/])(" + "|".join(re.escape(p) for p in sorted(paths, key=len, reverse=True)) + r")")
    return pattern.sub(lambda m: paths[m.group(1)], text)


def rewrite(text: str, moves: dict[str, str], prose: bool = False) -> str:
    text = rewrite_from_parent(text, moves)
    text = rewrite_dotted(text, moves)
    return rewrite_prose(text, moves) if prose else text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=ROOT / "docs" / "moves-issue-30.txt")
    parser.add_argument("--prose", action="store_true", help="also rewrite core/x.py paths and core.x names")
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    moves = read_table(args.table)
    for path in args.files:
        text = path.read_text()
        new = rewrite(text, moves, args.prose)
        if new != text:
            path.write_text(new)
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
