"""One direction between the three packages: ``hear2act_env`` <- ``hear2act_agents`` <-
``hear2act_cli``. The environment needs no agent and no command line to exist; the agents need
no command line; the command line (which runs agents in the environment) may import both.
Every import statement counts, at module level or inside a function, and so does a module
named as a string to ``importlib.import_module``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Each package, its folder in the repository and its layer (an import may only go down).
PACKAGES = {
    "hear2act_env": (ROOT / "hear2act_env", 0),
    "hear2act_agents": (ROOT / "agents", 1),
    "hear2act_cli": (ROOT / "cli", 2),
}


def imported_packages(source: str) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import in ``source``, and of every string
    constant passed to ``importlib.import_module`` / ``__import__``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arg = node.args[0]
            if name in ("import_module", "__import__") and isinstance(arg, ast.Constant):
                if isinstance(arg.value, str):
                    found.append((node.lineno, arg.value.split(".")[0]))
    return found


def upward_imports(package: str, folder: Path) -> list[str]:
    """``file:line: imports X`` for each import in ``folder`` of a package above ``package``."""
    layer = PACKAGES[package][1]
    bad = []
    for path in sorted(folder.rglob("*.py")):
        for line, name in imported_packages(path.read_text(encoding="utf-8")):
            if name in PACKAGES and PACKAGES[name][1] > layer:
                bad.append(f"{path.relative_to(folder.parent)}:{line}: imports {name}")
    return bad


@pytest.mark.parametrize("package", list(PACKAGES))
def test_no_package_imports_one_above_it(package):
    folder, _ = PACKAGES[package]
    assert folder.is_dir()
    assert upward_imports(package, folder) == []


def test_the_check_sees_every_form_of_an_upward_import(tmp_path):
    folder = tmp_path / "hear2act_env"
    folder.mkdir()
    (folder / "a.py").write_text(
        "import hear2act_agents\n"
        "def f():\n"
        "    from hear2act_cli.evaluate import x\n"
        "    import importlib\n"
        "    importlib.import_module('hear2act_agents.registry')\n"
        "from hear2act_env import config\n"
        "from . import b\n"
    )
    assert upward_imports("hear2act_env", folder) == [
        "hear2act_env/a.py:1: imports hear2act_agents",
        "hear2act_env/a.py:3: imports hear2act_cli",
        "hear2act_env/a.py:5: imports hear2act_agents",
    ]


def test_the_command_line_is_installed_from_its_own_package():
    import hear2act_cli

    assert Path(hear2act_cli.__file__).resolve().parent == ROOT / "cli"
    assert callable(hear2act_cli.console_main)
