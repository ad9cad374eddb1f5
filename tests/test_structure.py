"""Structure: access and conditions as values, the env's lexical view, the CLI's flags, imports."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from hear2act_cli import build_parser
from hear2act_env import Hear2ActEnv
from hear2act_env.conditions import ACCESS, Access, Condition
from hear2act_env.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


# -- access and conditions -----------------------------------------------------------------
@pytest.mark.parametrize("name", ACCESS)
def test_access_round_trips_and_says_its_channels(name):
    access = Access.parse(name)
    assert str(access) == name and Access.parse(access) is access
    assert (access.text, access.audio, access.state) == ("T" in name, "A" in name, "S" in name)


@pytest.mark.parametrize("bad", ["", "S", "T+A", "a+t", "A+S", "T+S+A", None, 3])
def test_access_rejects_anything_else_naming_the_field(bad):
    with pytest.raises(ConfigError, match="access: got"):
        Access.parse(bad)  # type: ignore[arg-type]


def test_condition_labels_and_stored_pairs():
    inferred = Condition.parse("A+T/inferred")
    assert inferred.perception == "reference" and inferred.fidelity == "correct"
    assert inferred.pair() == ("A+T", "inferred") and str(inferred) == "A+T/inferred"
    shuffled = Condition.parse(("T+S", "shuffled"))
    assert shuffled.is_intervention and str(shuffled) == "T+S/shuffled"
    assert Condition.parse("T") == Condition.of("T", "correct") and str(Condition.of("T")) == "T"
    assert not inferred.is_intervention
    with pytest.raises(ConfigError, match="access must include A"):
        Condition.parse("T+S/inferred")
    with pytest.raises(ConfigError, match="fidelity: got"):
        Condition.parse("T+S/sometimes")


def test_env_parses_access_once():
    env = Hear2ActEnv(access="T+S")
    assert env.channels == Access(text=True, audio=False, state=True) and env.access == "T+S"
    assert "state" in env.observation_space.spaces
    assert Hear2ActEnv(access=Access.parse("T")).access == "T"


# -- the env's lexical view -----------------------------------------------------------------
def test_lexical_view_is_public_and_follows_the_words():
    env = Hear2ActEnv(realization="explicit", scenario="city-hotels-09")
    with pytest.raises(gym.error.ResetNeeded):
        env.lexical_view()
    env.reset(seed=0)
    view = env.lexical_view()
    assert view.current == env.unwrapped.scenario.candidates.index(
        next(c for c in env.scenario.candidates if c.role == "attractive")
    )
    assert view.actions == 0 and view.asked == frozenset()
    before = set(view.known_needs)
    env.step(np.array([0, 0, 0]))  # an open question
    after = env.lexical_view()
    assert after.actions == 1 and after.asked == frozenset({0})
    assert set(after.known_needs) >= before and after.surface in {"need_stated", "nothing_else"}


def test_no_wrapper_reads_a_private_attribute_of_the_env():
    for path in (ROOT / "hear2act_env" / "wrappers").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                owner = node.value
                is_self = isinstance(owner, ast.Name) and owner.id in ("self", "cls")
                assert is_self or node.attr.startswith("__"), f"{path.name}: .{node.attr}"


def test_render_before_reset_is_a_clear_error():
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        Hear2ActEnv(render_mode="ansi").render()
    assert Hear2ActEnv().render() is None  # no render mode: nothing to render


# -- CLI ------------------------------------------------------------------------------------
def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:  # noqa: SLF001 - argparse has no public walk
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                yield name, sub
                for inner, subsub in _subparsers(sub):
                    yield f"{name} {inner}", subsub


def test_every_flag_of_every_command_has_help():
    missing = [
        f"{name} {'/'.join(a.option_strings) or a.dest}"
        for name, sub in _subparsers(build_parser())
        for a in sub._actions  # noqa: SLF001
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)  # noqa: SLF001
        and not a.help
    ]
    assert not missing


def test_flag_names_mean_one_thing_across_commands():
    """A flag spelled the same way takes the same kind of value everywhere."""
    seen: dict[str, tuple] = {}
    for name, sub in _subparsers(build_parser()):
        for a in sub._actions:  # noqa: SLF001
            for flag in a.option_strings:
                if flag in ("-h", "--help"):
                    continue
                choices = tuple(a.choices) if a.choices else None
                shape = (a.type, choices, a.nargs not in (None, "?"))
                if flag == "--access":  # one condition in train, several elsewhere
                    shape = (a.type, choices)
                previous = seen.setdefault(flag, shape)
                assert previous == shape, f"{flag} differs in '{name}'"
    assert seen["--agent"][2] is False and seen["--agents"][2] is True  # one agent vs a list
    assert "--scenarios" in seen and "--scenario-file" in seen and "--path" not in seen


def _flags() -> dict[str, dict[str, argparse.Action]]:
    """Every command's options: {command: {flag: action}}."""
    return {
        name: {f: a for a in sub._actions for f in a.option_strings}  # noqa: SLF001
        for name, sub in _subparsers(build_parser())
    }


def test_one_spelling_per_concept():
    """The spellings retired when the flags were unified stay retired, and a singular flag
    takes one value where its plural takes several (``--scenario`` / ``--scenarios``)."""
    flags = _flags()
    every = {f for by_flag in flags.values() for f in by_flag}
    retired = {
        "--cache-dir": "--audio-cache",
        "--save": "--save-perceiver",
        "--no-play": "--no-episodes",
        "--output": "--out",
        "--scenario-files": "--scenario-file",
    }
    assert {old: new for old, new in retired.items() if old in every} == {}
    assert {new for new in retired.values()} <= every
    for singular in ("--agent", "--scenario", "--realization"):
        for name, by_flag in flags.items():
            one, several = by_flag.get(singular), by_flag.get(f"{singular}s")
            if one is not None:
                assert one.nargs is None and type(one) is argparse._StoreAction, (name, singular)  # noqa: SLF001
            if several is not None:
                assert several.nargs == "+", (name, f"{singular}s")
    with_ids = {name for name, by_flag in flags.items() if "--scenarios" in by_flag}
    assert with_ids >= {"eval", "view"}


def test_each_command_name_means_one_thing():
    parser = build_parser()
    commands = dict(_subparsers(parser))
    # the bank's attacker audit is `scenarios leakage`; `audit` is the human perception audit
    assert "scenarios leakage" in commands and "scenarios audit" not in commands
    leakage = commands["scenarios leakage"]
    assert "--scenario-file" in _flags()["scenarios leakage"]
    assert not [a for a in leakage._actions if not a.option_strings]  # noqa: SLF001 - no positional
    helps = {c.dest: c.help for a in parser._actions for c in getattr(a, "_choices_actions", [])}  # noqa: SLF001
    assert "perception audit" in helps["audit"] and "leakage" in helps["scenarios"]
    # `play` is a person playing in the browser: no other command says it plays
    word = re.compile(r"\bplay(s|ed|ing)?\b", re.IGNORECASE)
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for choice in action._choices_actions:  # noqa: SLF001
                assert choice.dest == "play" or not word.search(choice.help or ""), choice.dest
    for name, sub in commands.items():
        if name == "play":
            continue
        texts = [sub.description or ""] + [a.help or "" for a in sub._actions]  # noqa: SLF001
        texts += [c.help or "" for a in sub._actions for c in getattr(a, "_choices_actions", [])]  # noqa: SLF001
        assert not [t for t in texts if word.search(t)], name


# -- imports --------------------------------------------------------------------------------
def _module_graph() -> dict[str, set[str]]:
    roots = {"hear2act_env": ROOT / "hear2act_env", "hear2act_agents": ROOT / "agents"}
    modules: dict[str, Path] = {}
    for package, folder in roots.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join([package, *parts])] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.add(node.module)
                targets.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _package(module: str) -> str:
    """The subpackage a module belongs to (``hear2act_agents.llm.policy`` -> ``...llm``)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_import_circle_between_subpackages():
    graph = _module_graph()
    edges = {(_package(a), _package(b)) for a, targets in graph.items() for b in targets}
    edges = {(a, b) for a, b in edges if a != b}
    circles = sorted((a, b) for a, b in edges if (b, a) in edges)
    allowed = {  # the top-level package re-exports what its subpackages define
        ("hear2act_env", p) for p in {b for _, b in edges}
    } | {(p, "hear2act_env") for p in {a for a, _ in edges}}
    assert [c for c in circles if c not in allowed] == []


def test_import_hear2act_env_is_free_of_torch():
    import subprocess
    import sys

    code = "import sys, hear2act_env, hear2act_agents; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


#: What the scenario layer must never reach, directly or through what it imports: the env and
#: everything built on it.
ABOVE_SCENARIOS = (
    "hear2act_env.env",
    "hear2act_env.registration",
    "hear2act_env.wrappers",
    "hear2act_env.evaluation",
    "hear2act_env.listen",
    "hear2act_cli",
)


def _top_package_imports(path: Path) -> list[str]:
    """The imports in ``path`` that load the top package for what it defines itself (``import
    hear2act_env``, ``from hear2act_env import Hear2ActEnv``), not for one of its submodules."""
    folder = ROOT / "hear2act_env"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == "hear2act_env"]
        elif isinstance(node, ast.ImportFrom) and node.module == "hear2act_env" and not node.level:
            found += [
                f"from hear2act_env import {a.name}"
                for a in node.names
                if not (folder / f"{a.name}.py").is_file() and not (folder / a.name).is_dir()
            ]
    return found


def test_scenarios_never_import_the_env_or_the_top_package():
    """The scenario layer sits below the env: neither it nor anything it imports (lazily or
    not) reaches the env, and it never imports the top package (which builds the env)."""
    graph = _module_graph()
    start = [m for m in graph if m.startswith("hear2act_env.scenarios")]
    assert "hear2act_env.scenarios.leakage" in start
    reached, todo = set(start), list(start)
    while todo:
        for target in graph[todo.pop()] - reached:
            if target != "hear2act_env":  # `from hear2act_env import x`: x is its own node
                reached.add(target)
                todo.append(target)
    above = sorted(m for m in reached if m.startswith(ABOVE_SCENARIOS))
    assert above == []
    direct = {
        str(path.relative_to(ROOT)): found
        for path in (ROOT / "hear2act_env" / "scenarios").rglob("*.py")
        if (found := _top_package_imports(path))
    }
    assert direct == {}


def test_top_package_import_check_sees_what_it_should(tmp_path):
    """The check above flags the import the audit used to make, and not a submodule import."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def build():\n"
        "    import hear2act_env  # noqa\n"
        "    from hear2act_env import Hear2ActEnv, jsonsafe, protocol\n",
        encoding="utf-8",
    )
    assert _top_package_imports(sample) == ["hear2act_env", "from hear2act_env import Hear2ActEnv"]


def test_every_wrapper_is_exported_from_the_wrappers_package():
    import importlib
    import inspect

    import hear2act_env.wrappers as package

    found = {}
    for path in sorted((ROOT / "hear2act_env" / "wrappers").glob("*.py")):
        if path.stem == "__init__":
            continue
        module = importlib.import_module(f"hear2act_env.wrappers.{path.stem}")
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, gym.Wrapper)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[name] = obj
    assert len(found) >= 8  # the eight wrapper classes of the subpackage, at least
    assert {name: getattr(package, name, None) for name in found} == found
    assert set(found) <= set(package.__all__)
    assert all(hasattr(package, name) for name in package.__all__)


def test_import_wrappers_is_free_of_torch():
    import subprocess
    import sys

    code = "import sys, hear2act_env.wrappers; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
