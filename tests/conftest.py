"""Shared fixtures."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Rendered audio of the test session goes to a throwaway cache, never the user's, removed at
# the end of the session (a full suite renders gigabytes into it).
if "HEAR2ACT_CACHE_DIR" not in os.environ:
    os.environ["HEAR2ACT_CACHE_DIR"] = tempfile.mkdtemp(prefix="hear2act-test-cache-")
    atexit.register(shutil.rmtree, os.environ["HEAR2ACT_CACHE_DIR"], ignore_errors=True)

from hear2act_env.protocol.scenario import Scenario
from hear2act_env.scenarios.domain import load_domain
from hear2act_env.scenarios.generator import generate_scenario

DOMAINS = Path(__file__).resolve().parents[1] / "hear2act_env" / "scenarios" / "domains"


@pytest.fixture(scope="session")
def flights_domain():
    return load_domain(DOMAINS / "domestic-flights.json")


@pytest.fixture(scope="session")
def scenario(flights_domain) -> Scenario:
    """A valid scenario (domestic-flights-01)."""
    return generate_scenario(flights_domain, 0)


@pytest.fixture(scope="session")
def flights_scenarios(flights_domain) -> list[Scenario]:
    return [generate_scenario(flights_domain, i) for i in range(10)]
