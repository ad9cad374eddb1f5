"""hear2act view: action traces in records, replays that reproduce what the agent saw and heard,
the static site, and the site in a real browser."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

from hear2act_agents.registry import make_agent
from hear2act_cli import main
from hear2act_env.config import EnvConfig
from hear2act_env.env import Hear2ActEnv
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.agent_logs import log_line, log_path
from hear2act_env.evaluation.records import EpisodeRecord
from hear2act_env.evaluation.rollout import wrap_for
from hear2act_env.evaluation.runner import GridConfig, load_records, run_grid
from hear2act_env.listen.view.replay import ReplayError, RunSettings, replay_episode
from hear2act_env.listen.view.site import build_site, outcome_of
from tests.listen.browser import SCREENSHOTS, media_state

SCENARIOS = ("airport-rides-09", "city-hotels-09", "dentists-09")
CONDITIONS = ("T", "T+S", "A+T", "T+S/shuffled", "A+T/inferred")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A small grid: three agents, five conditions, both realizations, 3 test scenarios."""
    out = tmp_path_factory.mktemp("view") / "results.jsonl"
    config = GridConfig(
        agents=("prober", "state-aware", "random"),
        conditions=CONDITIONS,
        scenarios=SCENARIOS,
        env=EnvConfig(split="test", turn_cost=0.05),
    )
    run_grid(config, out, make_agent, progress=False)
    return out


def _records(results: Path) -> list[EpisodeRecord]:
    return sorted(load_records(results), key=lambda r: r.key.id())


# -- records and replays ---------------------------------------------------------------------
def test_records_keep_the_action_trace(results):
    records = _records(results)
    assert len(records) == 3 * 5 * 2 * 3
    for r in records:
        assert r.error is None
        assert len(r.steps) == r.actions == sum(r.counts.values())
        assert sum(step[0] == 2 for step in r.steps) == r.counts["recommend"]
        assert all(len(step) == 3 for step in r.steps)


@pytest.mark.parametrize("bad", ['"x"', "[[0, 1]]", '[[0, 1, "2"]]', "[[true, 0, 0]]"])
def test_a_malformed_trace_is_refused_on_load(results, bad):
    line = results.read_text().splitlines()[0]
    data = json.loads(line)
    data["steps"] = json.loads(bad)
    with pytest.raises(ValueError, match="steps"):
        EpisodeRecord.from_json(json.dumps(data))


def test_replay_reproduces_every_record(results):
    settings = RunSettings.of_results(results)
    assert settings.env == EnvConfig(split="test", turn_cost=0.05) and settings.split == "test"
    for r in _records(results):
        replay = replay_episode(r, settings)
        assert replay.final_option == r.final_option
        agent_turns = [t for t in replay.turns if t.action is not None]
        assert [list(t.action) for t in agent_turns] == r.steps


def _direct(record: EpisodeRecord) -> tuple[list[str], list[np.ndarray], list[int | None]]:
    """Play the record's agent again in the record's own condition: the transcript lines,
    audio and state tag it got at every turn."""
    condition = record.key.as_condition()
    env = Hear2ActEnv(
        realization=record.key.realization,
        access=str(condition.access),
        state_fidelity=condition.fidelity,
        split="test",
        turn_cost=0.05,
    )
    if condition.perception == "reference":
        from hear2act_env.wrappers.inferred_state import InferredState

        env = InferredState(env, keep_audio=True)
    policy = make_agent(record.key.agent)
    env = wrap_for(env, policy)
    obs, _ = env.reset(seed=record.seed, options={"scenario": record.key.scenario})
    policy.reset(obs, seed=record.seed)
    audio, tags = [], []

    def keep(o):
        if "audio" in o:
            audio.append(np.array(o["audio"][: int(o["audio_length"])]))
        tags.append(int(o["state"]) if "state" in o else None)

    keep(obs)
    while True:
        obs, _, term, trunc, _ = env.step(policy.act(obs))
        if term or trunc:
            return obs["transcript"].splitlines(), audio, tags
        keep(obs)


@pytest.mark.parametrize("condition", CONDITIONS)
def test_replay_shows_what_the_agent_saw_and_heard(results, condition):
    names = {0: "withheld", 1: "resolved", 2: "reluctant", 3: "concern", 4: "rejection"}
    picked = [r for r in _records(results) if r.key.condition == condition][:6]
    assert picked
    for r in picked:
        replay = replay_episode(r, RunSettings.of_results(results))
        lines, audio, tags = _direct(r)
        shown = [
            f"{'User' if t.speaker == 'user' else 'Assistant'}: {t.shown}" for t in replay.turns
        ]
        assert shown[-len(lines) :] == lines  # the transcript the agent had at the end
        spoken = [t for t in replay.turns if t.audio is not None]
        assert all(t.heard == ("A" in condition) for t in spoken)
        if "A" in condition:  # bit for bit the clips the agent got
            assert len(spoken) == len(audio)
            for t, heard in zip(spoken, audio):
                np.testing.assert_array_equal(t.audio, heard)
        given = [t.tag_shown for t in spoken]
        assert given == [None if tag is None else names[tag] for tag in tags]
        if "A" not in condition:
            assert all(t.text and t.shown == t.text for t in spoken)
        assert all(t.state in names.values() and t.delivery for t in spoken)


def test_a_record_that_does_not_match_is_refused(results):
    r = next(x for x in _records(results) if x.success and len(x.steps) >= 3)
    with pytest.raises(ReplayError, match="does not reproduce"):
        replay_episode(dataclasses.replace(r, final_option=(r.final_option + 1) % 11))
    with pytest.raises(ReplayError, match="no action trace"):
        replay_episode(dataclasses.replace(r, steps=[]))
    with pytest.raises(ReplayError, match="ended at action"):
        replay_episode(dataclasses.replace(r, steps=[*r.steps, [0, 0, 0]]))
    wrong = dataclasses.replace(r, steps=[[3, 0, 0]])  # confirm the opening at once
    with pytest.raises(ReplayError):
        replay_episode(wrong, RunSettings.of_results(results))


def test_outcome_classes(results):
    records = _records(results)
    for r in records:
        o = outcome_of(r)
        assert (o == "success") == r.success
        if o == "premature closure":
            assert r.terminated and r.final_option != r.best
    assert outcome_of(dataclasses.replace(records[0], error="boom")) == "error"


# -- the site --------------------------------------------------------------------------------
def _episode_rows(site: Path) -> list[dict]:
    text = (site / "static" / "episodes.js").read_text()
    return json.loads(text.removeprefix("window.HEAR2ACT_EPISODES = ").rstrip().rstrip(";"))


def test_site_lists_every_episode_and_builds_whole_scenarios(results, tmp_path):
    site = tmp_path / "site"
    summary = build_site([results], site, max_pages=40, plots=False)
    rows = _episode_rows(site)
    assert len(rows) == summary.episodes == 90
    paged = [r for r in rows if r["page"]]
    assert summary.pages == len(paged) <= 40 and summary.skipped == ()
    per = {}
    for r in rows:
        per.setdefault(r["scenario"], []).append(r["page"])
    assert all(all(v) or not any(v) for v in per.values())  # a scenario's pages all or none
    for r in paged:
        html = (site / "episodes" / f"{r['slug']}.html").read_text()
        assert r["agent"] in html and r["condition"].replace("+", "+") in html
    clips = list((site / "audio").iterdir())
    assert clips and summary.clips == len(clips) and all(p.suffix == ".ogg" for p in clips)
    index = (site / "index.html").read_text()
    assert index.count("Success / Accept / FullFit") == 1
    # the leaderboard: a table per realization, Prosody-mediated first, a row per agent
    board = index[index.index('<div id="leaderboard">') : index.index("<h2>Summary</h2>")]
    assert 0 < board.index("<h3>Prosody-mediated</h3>") < board.index("<h3>Explicit lexical</h3>")
    assert board.count("<td>prober</td>") == board.count("<td>random</td>") == 2
    assert board.count("<table") == 2 and "in percent" in board
    with (site / "report" / "leaderboard.csv").open() as fh:
        lines = list(csv.DictReader(fh))
    assert [r["realization"] for r in lines] == ["prosody"] * 3 + ["explicit"] * 3
    assert (
        {r["model"] for r in lines[:3]}
        == {r["model"] for r in lines[3:]}
        == {
            "prober",
            "state-aware",
            "random",
        }
    )
    assert all(r["success_t_n"] == "3" for r in lines)  # 3 scenarios, 1 run each
    # no remote asset anywhere
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "http://" not in text and "https://" not in text, page


def test_site_pages_say_what_the_agent_could_not_see(results, tmp_path):
    site = tmp_path / "site"
    build_site([results], site, scenarios=["dentists-09"], plots=False)
    r = next(
        x
        for x in _records(results)
        if x.key.scenario == "dentists-09" and x.key.condition == "A+T" and x.key.agent == "prober"
    )
    replay = replay_episode(r, RunSettings.of_results(results))

    def page(condition: str) -> Path:
        (row,) = (
            x
            for x in _episode_rows(site)
            if (x["agent"], x["realization"], x["condition"], x["scenario"])
            == ("prober", r.key.realization, condition, "dentists-09")
        )
        assert row["slug"].startswith(f"prober-{r.key.realization}-{condition.replace('+', '_')}-")
        return site / "episodes" / f"{row['slug']}.html"

    text = page("A+T").read_text()
    assert text.count("<audio") == sum(t.audio is not None for t in replay.turns)
    assert 'class="tag hidden-info state-tag"' in text  # state tags behind the toggle
    assert "the agent heard this" in text
    assert text.count('class="hidden-info">best<') == 1  # roles behind the toggle
    t_page = page("T").read_text()
    assert "the agent heard this" not in t_page and "gave the agent no audio" in t_page


def test_site_shows_an_agent_log_and_skips_unreplayable_records(results, tmp_path):
    copy = tmp_path / "results.jsonl"
    records = _records(results)
    target = next(r for r in records if r.key.scenario == "city-hotels-09")
    broken = next(
        r for r in records if r.key.scenario == "city-hotels-09" and r is not target and r.steps
    )
    lines = []
    for r in records:
        if r is broken:
            r = dataclasses.replace(r, steps=[])
        lines.append(r.to_json())
    copy.write_text("\n".join(lines) + "\n")
    copy.with_suffix(".manifest.json").write_text(results.with_suffix(".manifest.json").read_text())
    log = {"prompts": {}, "turns": [{"calls": [], "action": "ask 0", "parse": "ok"}]}
    log_path(copy).write_text(log_line(target, log) + "\n")
    site = tmp_path / "site"
    summary = build_site([copy], site, scenarios=["city-hotels-09"], plots=False)
    assert len(summary.skipped) == 1 and "no action trace" in summary.skipped[0]
    page = next(r for r in _episode_rows(site) if r["agent"] == target.key.agent and r["page"])
    assert page
    with_log = [p for p in (site / "episodes").iterdir() if 'id="agent-log"' in p.read_text()]
    assert len(with_log) == 1


def test_site_refuses_odd_inputs(results, tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        build_site([tmp_path / "missing.jsonl"], tmp_path / "s")
    with pytest.raises(ConfigError, match="no results"):
        build_site([tmp_path], tmp_path / "s")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        build_site([results], tmp_path / "file")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match="holds no site"):
        build_site([results], tmp_path / "busy")
    with pytest.raises(ConfigError, match="scenario"):
        build_site([results], tmp_path / "s2", scenarios=["no-such-01"])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ConfigError, match="no records"):
        build_site([empty], tmp_path / "s3")


def test_view_cli(results, tmp_path, capsys):
    site = tmp_path / "site"
    argv = ["view", str(results), "--out", str(site), "--scenarios", "dentists-09", "--no-plots"]
    assert main(argv) == 0
    assert "episode pages" in capsys.readouterr().out
    assert main(argv + ["--wav"]) == 0  # rebuilds its own site
    assert all(p.suffix == ".wav" for p in (site / "audio").iterdir())
    for bad in (["--max-pages", "0"], ["--max-pages", "many"]):
        with pytest.raises(SystemExit) as exc:
            main(["view", str(results), "--out", str(tmp_path / "x"), *bad])
        assert exc.value.code == 2
    assert main(["view", str(tmp_path / "nothing.jsonl"), "--out", str(tmp_path / "y")]) == 2
    assert "does not exist" in capsys.readouterr().err


# -- in a real browser -----------------------------------------------------------------------
def test_viewer_in_chromium(results, tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    site = tmp_path / "site"
    build_site([results], site, scenarios=list(SCENARIOS[:2]))
    browser.get((site / "index.html").as_uri())
    assert browser.find_element(By.ID, "count").text.startswith("90 of 90")
    Select(browser.find_element(By.ID, "filter-agent")).select_by_visible_text("prober")
    Select(browser.find_element(By.ID, "filter-condition")).select_by_visible_text("A+T")
    browser.find_element(By.ID, "filter-scenario").send_keys("airport")
    rows = browser.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")
    assert len(rows) == 2 and browser.find_element(By.ID, "count").text.startswith("2 of 90")
    assert all("prober" in r.text and "A+T" in r.text for r in rows)
    rows[0].find_element(By.CSS_SELECTOR, "a.open").click()
    assert "prober · A+T · airport-rides-09" in browser.title
    audio = browser.find_elements(By.TAG_NAME, "audio")[0]
    state = media_state(browser, audio)
    assert state["error"] is None and state["duration"] > 0.3 and state["played"], state
    tag = browser.find_elements(By.CSS_SELECTOR, ".state-tag")[0]
    assert not tag.is_displayed()
    browser.find_element(By.ID, "toggle-hidden").click()
    assert tag.is_displayed()
    shot = tmp_path / "view.png"
    browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("HEAR2ACT_SCREENSHOTS") == "1":
        browser.save_screenshot(str(SCREENSHOTS / "view_episode.png"))
    # side by side: prober and random part somewhere, and the page outlines it
    browser.find_element(By.ID, "compare-link").click()
    left, right = (Select(browser.find_element(By.ID, n)) for n in ("left", "right"))
    options = [o.text for o in left.options]
    left.select_by_visible_text(next(o for o in options if o.startswith("prober · A+T ")))
    right.select_by_visible_text(next(o for o in options if o.startswith("random · A+T ")))
    note = browser.find_element(By.ID, "divergence").text
    assert note.startswith("they part at action")
    assert len(browser.find_elements(By.CSS_SELECTOR, ".column:not([hidden]) .diverged")) == 2
    if os.environ.get("HEAR2ACT_SCREENSHOTS") == "1":
        browser.save_screenshot(str(SCREENSHOTS / "view_compare.png"))
