"""Packaging: the wheel installs ``hear2act_env`` and ``hear2act_agents``, never a top-level
``agents`` (that import name belongs to the OpenAI Agents SDK and other distributions).

The wheel is built from a copy of the repository's sources (building in place would write
``build/`` and the egg-info into the checkout), then installed with a distribution that owns
``agents`` into a fresh virtual environment; both must import, and uninstalling the other one
must leave ``hear2act_agents`` working. Offline: ``--no-index`` and ``--no-build-isolation``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Repository folder -> import package it installs as (pyproject.toml [tool.setuptools]).
SOURCE_PACKAGES = {
    "hear2act_env": "hear2act_env",
    "agents": "hear2act_agents",
    "cli": "hear2act_cli",
}
# Ignored at the repository root only (checkout state, caches, outputs).
_ROOT_SKIP = {".git", ".venv", "venv", "build", "dist", "runs", "out"}
_SKIP_ANYWHERE = {"__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", ".mypy_cache"}


def _version(distribution: str) -> tuple[int, ...]:
    """The installed version's leading numbers, () when not installed."""
    try:
        text = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ()
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


# The wheels are built offline with the running interpreter's setuptools (pyproject: >=68), and
# installed into the fresh environment with ``pip --python`` (pip 22.3+).
pytestmark = [
    pytest.mark.skipif(_version("setuptools") < (68,), reason="needs setuptools>=68 installed"),
    pytest.mark.skipif(_version("pip") < (22, 3), reason="needs pip>=22.3 (pip --python)"),
]


def _pip_env() -> dict[str, str]:
    """The environment for every subprocess: no user pip config, no index, no PYTHONPATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PIP_") and k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}
    }
    env.update(
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INDEX="1",
        PIP_NO_INPUT="1",
        PIP_CONFIG_FILE=os.devnull,
        PYTHONNOUSERSITE="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def _run(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=_pip_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, (
        f"{' '.join(map(str, args))} exited {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    )
    return proc


def _copy_sources(dest: Path) -> Path:
    def ignore(folder: str, names: list[str]) -> set[str]:
        skip = {n for n in names if n in _SKIP_ANYWHERE or n.endswith(".egg-info")}
        if Path(folder) == ROOT:
            skip |= _ROOT_SKIP & set(names)
        return skip

    shutil.copytree(ROOT, dest, ignore=ignore)
    return dest


def _write_dummy_agents_owner(dest: Path) -> Path:
    (dest / "agents").mkdir(parents=True)
    (dest / "agents" / "__init__.py").write_text('OWNER = "dummy"\n')
    (dest / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [build-system]
            requires = ["setuptools>=68"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "dummy-agents-owner"
            version = "1.0"

            [tool.setuptools]
            packages = ["agents"]
            """
        )
    )
    return dest


def _source_package_dirs(src: Path) -> dict[str, Path]:
    """Import name -> folder, for every folder with an ``__init__.py`` in the source packages."""
    found = {}
    for folder, import_name in SOURCE_PACKAGES.items():
        for init in sorted((src / folder).rglob("__init__.py")):
            if _SKIP_ANYWHERE.intersection(init.relative_to(src).parts):
                continue
            rel = init.parent.relative_to(src / folder).parts
            found[".".join((import_name, *rel))] = init.parent
    return found


def _shipped_models(src: Path) -> set[str]:
    return {p.parent.name for p in (src / "agents" / "rl" / "models").glob("*/model.zip")}


# Run by the fresh environment's interpreter; prints one JSON object.
_PROBE_BOTH = textwrap.dedent(
    """\
    import json
    import agents
    import hear2act_env
    import hear2act_agents
    import hear2act_agents.registry
    import hear2act_agents.rl

    assert agents.OWNER == "dummy", agents.OWNER
    print(json.dumps({
        "agents": agents.__file__,
        "owner": agents.OWNER,
        "hear2act_env": hear2act_env.__file__,
        "hear2act_agents": hear2act_agents.__file__,
        "registry": hear2act_agents.registry.__file__,
        "pretrained": {k: str(v) for k, v in hear2act_agents.rl.pretrained().items()},
    }))
    """
)
_PROBE_AFTER_UNINSTALL = textwrap.dedent(
    """\
    import importlib.util
    import json
    import hear2act_agents
    import hear2act_agents.registry
    import hear2act_agents.rl

    spec = importlib.util.find_spec("agents")
    print(json.dumps({
        "agents": None if spec is None else (spec.origin or str(list(spec.submodule_search_locations or []))),
        "hear2act_agents": hear2act_agents.__file__,
        "pretrained": sorted(hear2act_agents.rl.pretrained()),
    }))
    """
)


def _inside(path: str, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_wheel_has_no_top_level_agents_and_coexists_with_an_agents_owner(tmp_path: Path) -> None:
    python = sys.executable
    src = _copy_sources(tmp_path / "src")
    dummy = _write_dummy_agents_owner(tmp_path / "dummy")
    wheels = tmp_path / "wheels"
    neutral = tmp_path / "cwd"  # no repository folder (agents/, hear2act_env/) on sys.path
    neutral.mkdir()

    # 1. Build both wheels offline, with the running interpreter's setuptools.
    _run(
        [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", wheels]
        + [src, dummy],
        cwd=neutral,
    )
    (project_wheel,) = wheels.glob("hear2act_env-*.whl")
    (dummy_wheel,) = wheels.glob("dummy_agents_owner-*.whl")

    # 2. The project wheel: no agents/, the renamed package, its data, every subpackage.
    with zipfile.ZipFile(project_wheel) as zf:
        names = set(zf.namelist())
        top_level_txt = next((n for n in names if n.endswith(".dist-info/top_level.txt")), None)
        top_level_declared = zf.read(top_level_txt).decode().split() if top_level_txt else []
    assert not [n for n in names if n.startswith("agents/")], "the wheel ships a top-level agents/"
    assert "agents" not in top_level_declared
    top_level = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert top_level == {"hear2act_env", "hear2act_agents", "hear2act_cli"}, top_level
    assert not [n for n in names if n.startswith("cli/")], "the wheel ships a top-level cli/"
    assert "hear2act_agents/__init__.py" in names
    assert "hear2act_env/scenarios/data/bank.jsonl" in names
    models = _shipped_models(src)
    assert models, "no shipped models under agents/rl/models"
    for model in models:
        assert f"hear2act_agents/rl/models/{model}/model.zip" in names, model
    missing = [
        package
        for package in _source_package_dirs(src)
        if package.replace(".", "/") + "/__init__.py" not in names
    ]
    assert not missing, f"packages missing from the wheel (pyproject.toml packages): {missing}"

    # 3. A fresh environment that sees the running one's dependencies through a plain .pth
    #    line (no .pth processing there, so the outer editable hear2act-env stays out).
    venv = tmp_path / "venv"
    _run([python, "-m", "venv", "--without-pip", venv], cwd=neutral)
    venv_python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(
        _run(
            [venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=neutral,
        ).stdout.strip()
    )
    # Install before the .pth exists, so pip sees only the fresh environment's distributions.
    _run(
        [python, "-m", "pip", "--python", venv_python, "install", "--no-deps", "--no-index"]
        + [project_wheel, dummy_wheel],
        cwd=neutral,
    )
    outer = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "_outer_site_packages.pth").write_text("".join(f"{p}\n" for p in outer))

    # 4. Both import, each from the fresh environment.
    probe = json.loads(_run([venv_python, "-c", _PROBE_BOTH], cwd=neutral).stdout)
    assert probe["owner"] == "dummy"
    for module in ("agents", "hear2act_env", "hear2act_agents", "registry"):
        assert _inside(probe[module], site), f"{module} imported from {probe[module]}, not {site}"
    assert set(probe["pretrained"]) == models, probe["pretrained"]
    assert all(_inside(p, site) for p in probe["pretrained"].values()), probe["pretrained"]

    # 5. Uninstalling the agents owner leaves hear2act_agents intact (and no agents behind).
    _run(
        [python, "-m", "pip", "--python", venv_python, "uninstall", "-y", "dummy-agents-owner"],
        cwd=neutral,
    )
    after = json.loads(_run([venv_python, "-c", _PROBE_AFTER_UNINSTALL], cwd=neutral).stdout)
    assert _inside(after["hear2act_agents"], site), after
    assert after["agents"] is None or not _inside(after["agents"], site), after
    assert set(after["pretrained"]) == models, after
