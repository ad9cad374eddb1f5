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
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.scenarios.domain import load_domain

DOMAINS = Path(__file__).resolve().parents[1] / "hear2act_env" / "scenarios" / "domains"


@pytest.fixture(scope="session")
def flights_domain():
    return load_domain(DOMAINS / "domestic-flights.json")


# The scenarios below are read from the shipped bank, which holds what the generator makes
# (generate_scenario(domain, i) for profile i): generating these ten takes about 15 s, loading
# them well under one. The slow test_bank rebuild compares the whole bank with the generator,
# test_bank_v3 one scenario of it in the default run.


@pytest.fixture(scope="session")
def scenario(flights_scenarios) -> Scenario:
    """A valid scenario (domestic-flights-01)."""
    return flights_scenarios[0]


@pytest.fixture(scope="session")
def flights_scenarios(flights_domain) -> list[Scenario]:
    """The ten domestic-flights scenarios (profiles 0 to 9, in order)."""
    mine = [s for s in load_bank() if s.domain == flights_domain.id]
    assert [s.id for s in mine] == [f"{flights_domain.id}-{i:02d}" for i in range(1, 11)]
    return mine
