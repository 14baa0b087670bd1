"""House rules that keep the design honest: a pure core, lazy heavy imports, docs that match."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memsearch_lsp"


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_core_never_imports_the_lsp_stack() -> None:
    for path in (PACKAGE / "core").rglob("*.py"):
        assert not imports(path) & {"pygls", "lsprotocol"}, path.name


def test_heavy_libraries_have_one_home() -> None:
    homes = {"fastembed": {"core/embedding/onnx.py"}, "pymilvus": {"core/store/milvus.py"},
             "milvus_lite": {"core/store/lite.py"}, "grpc": set(), "mcp": {"mcp_server.py"}}
    for path in PACKAGE.rglob("*.py"):
        for lib, allowed in homes.items():
            if lib in imports(path):
                assert path.relative_to(PACKAGE).as_posix() in allowed, f"{path} imports {lib}"


def test_initialize_path_imports_nothing_heavy() -> None:
    code = ("import sys\nfrom memsearch_lsp.lsp.setup import create_server\ncreate_server()\n"
            "heavy = [m for m in ('fastembed', 'pymilvus', 'onnxruntime', 'milvus_lite', 'mcp') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_readme_documents_every_cli_command_and_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    from memsearch_lsp.cli import COMMANDS

    for command in COMMANDS:
        assert re.search(rf"memsearch-lsp {command}\b", readme), f"README lacks `memsearch-lsp {command}`"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/test.sh" in ci and "bash scripts/test.sh" in readme


def test_changelog_follows_keep_a_changelog() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in text and "Keep a Changelog" in text


def test_bundled_tokenizer_ships_with_its_notice() -> None:
    folder = PACKAGE / "models" / "all-MiniLM-L6-v2"
    assert {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json",
            "NOTICE"} <= {p.name for p in folder.iterdir()}
    assert "Apache" in (folder / "NOTICE").read_text()


def test_the_mcp_command_without_the_extra_says_how_to_get_it(tmp_path: Path) -> None:
    code = ("import sys\nsys.modules['mcp'] = None  # as if `memsearch-lsp[mcp]` were not installed\n"
            "from memsearch_lsp.cli import main\nsys.exit(main(['mcp', '--workspace', sys.argv[1]]))\n")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert "pip install 'memsearch-lsp[mcp]'" in result.stderr


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node that runs: all but the bodies of `if TYPE_CHECKING:` (annotations only)."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def import_graph() -> dict[str, set[str]]:
    """Every import between the package's modules that runs, at the top or inside functions (lazy ones too)."""
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            deps.update(t for t in targets if t in modules and t != name)
        graph[name] = deps
    return graph


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = import_graph()
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for dep in sorted(graph[node]):
            if seen.get(dep) == 1:
                cycles.append([*path[path.index(dep):], dep] if dep in path else [node, dep])
            elif dep not in seen:
                visit(dep, [*path, dep])
        seen[node] = 2

    for module in sorted(graph):
        if module not in seen:
            visit(module, [module])
    assert not cycles, cycles


def test_layers_only_import_downwards() -> None:
    """core knows nothing of lsp, the CLI or MCP; lsp/server.py knows no feature; features know no setup."""
    graph = import_graph()
    for module, deps in graph.items():
        if module.startswith("memsearch_lsp.core."):
            assert not {d for d in deps if d.startswith(("memsearch_lsp.lsp", "memsearch_lsp.cli",
                                                         "memsearch_lsp.mcp_server"))}, module
    assert not {d for d in graph["memsearch_lsp.lsp.server"] if d.startswith("memsearch_lsp.lsp.features")}
    for module, deps in graph.items():
        if module.startswith("memsearch_lsp.lsp.features."):
            assert "memsearch_lsp.lsp.setup" not in deps, module
