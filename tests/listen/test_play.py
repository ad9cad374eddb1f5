"""``hear2act play``: a person's episodes through the JSON API and in a real browser, recorded by
the runner as agent ``human:NAME``; the page never shows what the condition withholds."""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from hear2act_cli import play as play_cli  # noqa: E402
from hear2act_env.conditions import Access  # noqa: E402
from hear2act_env.env import Hear2ActEnv  # noqa: E402
from hear2act_env.errors import ConfigError  # noqa: E402
from hear2act_env.evaluation.runner import load_records  # noqa: E402
from hear2act_env.listen.play import app as play_mod  # noqa: E402
from hear2act_env.listen.play.app import (  # noqa: E402
    LOCAL_HOSTS,
    PLAY_ENV,
    PlaySession,
    play_app,
    play_config,
    scenario_subset,
)
from hear2act_env.protocol.delivery import DELIVERIES  # noqa: E402
from tests.listen.browser import SCREENSHOTS, media_state  # noqa: E402

QUIET = PLAY_ENV.replace(audio_cache=False)
AUDIO_URL = re.compile(r"^/audio/\d+/\d+\.(ogg|wav)$")


def config_of(access: str = "T", episodes: int = 2, name: str = "ada", **kw: Any):
    return play_config(name, access=access, episodes=episodes, env=QUIET, **kw)


@contextmanager
def playing(out: Path, access: str = "T", episodes: int = 2, **kw: Any) -> Iterator[tuple]:
    """A started session and a test client of its app; stopped on exit."""
    session = PlaySession(config_of(access, episodes, **kw), out)
    session.start(timeout=60)
    try:
        yield session, TestClient(play_app(session))
    finally:
        session.stop()


def twin(session: PlaySession, number: int, access: str = "T") -> tuple[Hear2ActEnv, dict]:
    """An env at the start of the session's episode ``number`` (for the test's own truth)."""
    key = session.keys[number - 1]
    env = Hear2ActEnv(QUIET.replace(realization=key.realization, access=access))
    _, info = env.reset(seed=key.seed, options={"scenario": key.scenario})
    return env, info


def act(client: TestClient, **body: int) -> dict:
    response = client.post("/api/act", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def win(client: TestClient, session: PlaySession) -> tuple[dict, list[list[int]], int]:
    """Ask about the first attribute, recommend the best option, confirm: the final state,
    the steps posted and the best option."""
    state = client.get("/api/state").json()
    assert state["phase"] == "waiting"
    best = twin(session, state["episode"]["number"])[1]["truth"]["best"]
    act(client, act=0, topic=1)
    act(client, act=2, option=best)
    final = act(client, act=3)
    return final, [[0, 0, 1], [2, best, 0], [3, 0, 0]], best


def records_of(path: Path) -> list:
    return [r for r in load_records(path) if r.error is None]


# -- names and the fixed subset ------------------------------------------------------------
@pytest.mark.parametrize("bad", ["", "a b", "../x", ".hidden", "x" * 65, "ada:1", "é"])
def test_a_bad_name_is_a_config_error_naming_the_field(bad):
    with pytest.raises(ConfigError, match="name: got"):
        play_config(bad, access="T", episodes=1)


def test_the_subset_is_fixed_and_the_same_for_everyone():
    five = scenario_subset("test", 5)
    assert five == scenario_subset("test", 5) == scenario_subset("test", 12)[:5]
    assert len(set(five)) == 5 and all(s.endswith(("-09", "-10")) for s in five)
    assert config_of(name="ada").scenarios == config_of(name="bob").scenarios
    assert config_of(name="ada").agents == ("human:ada",)
    with pytest.raises(ConfigError, match="episodes: got 10000"):
        scenario_subset("test", 10000)


# -- a whole episode through the API -----------------------------------------------------------
def test_episodes_played_through_the_api_are_recorded_as_the_human_agent(tmp_path):
    from hear2act_env.evaluation.leaderboard import leaderboard_rows
    from hear2act_env.evaluation.report import report

    out = tmp_path / "runs" / "results.jsonl"
    with playing(out, "T", episodes=2) as (session, client):
        final, steps, best = win(client, session)
        assert final["phase"] == "ended"
        outcome = final["outcome"]
        assert outcome["success"] is True and outcome["best"]["number"] == best + 1
        assert outcome["final"] == outcome["best"] and outcome["remaining"] == 1
        [record] = records_of(out)
        assert record.key.agent == "human:ada" and record.key.access == "T"
        assert record.success and record.steps == steps and record.actions == 3
        assert record.agent_stats["seconds"] >= 0
        # the next episode waits, from its start
        state = client.post("/api/next", json={}).json()
        assert state["phase"] == "waiting" and state["episode"]["number"] == 2
        assert state["episode"]["turn"] == 0 and state["recorded"] == 1
        final, steps2, _ = win(client, session)
        done = client.post("/api/next", json={}).json()
        assert done["phase"] == "done" and done["summary"]["episodes"] == 2
        assert done["summary"]["successes"] == 2 and done["summary"]["results"] == str(out)
    records = records_of(out)
    assert {r.key.scenario for r in records} == set(session.config.scenarios)
    assert sorted(r.steps for r in records) == sorted([steps, steps2])
    assert "human:ada" in report(records, None, plots=False)
    [row] = leaderboard_rows(records)
    assert row.model == "human:ada" and row.success_t is not None
    assert row.success_t.value == 100.0 and row.success_t.n == 2


def test_the_page_is_served_with_local_assets_only(tmp_path):
    with playing(tmp_path / "r.jsonl", "A+T", episodes=1) as (_, client):
        page = client.get("/")
        assert page.status_code == 200 and 'id="latest-audio"' in page.text
        assert "/static/play.js" in page.text and "/static/style.css" in page.text
        assert not re.search(r"(src|href)=\"(https?:)?//", page.text)
        for asset in ("/static/play.js", "/static/style.css"):
            response = client.get(asset)
            assert response.status_code == 200 and response.content
            assert "http://" not in response.text and "https://" not in response.text
    with playing(tmp_path / "t.jsonl", "T", episodes=1) as (_, client):
        assert 'id="latest-audio"' not in client.get("/").text  # no audio without A


# -- nothing the condition withholds ------------------------------------------------------------
HIDDEN_KEYS = {
    "truth",
    "best",
    "attractive",
    "patterns",
    "pattern",
    "delivery",
    "scenario",
    "scenario_id",
    "seed",
    "revealed",
    "realization",
    "needs",
    "final_option",
    "is_success",
}


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


@pytest.mark.parametrize("access", ["T", "T+S", "A", "A+T"])
def test_the_state_json_holds_only_what_the_condition_shows(tmp_path, access):
    channels = Access.parse(access)
    with playing(tmp_path / "r.jsonl", access, episodes=1) as (session, client):
        key = session.keys[0]
        env, info = twin(session, 1, "T+S")  # the same episode, with every text and state
        attractive = info["truth"]["attractive"]
        states, deliveries = [], []
        seen = [client.get("/api/state").json()]
        for action in ([0, 0, 0], [0, 0, 2], [2, (attractive + 1) % 11, 0], [1, 0, 0]):
            obs, *_, info = env.step(action)
            states.append(obs["state"])
            deliveries.append(info["truth"]["delivery"])
            seen.append(act(client, act=action[0], option=action[1], topic=action[2]))
        lines = obs["transcript"].split("\n")[1:]  # after the request
        texts = [t[len("User: ") :] for t in lines if t.startswith("User: ") and len(t) > 18]
        assert texts, "the twin heard user turns"
        for state in seen:
            assert state["phase"] == "waiting"
            dump = json.dumps(state)
            assert not _keys(state) & HIDDEN_KEYS, _keys(state) & HIDDEN_KEYS
            assert key.scenario not in dump and str(key.seed) not in dump
            assert ("state" in _keys(state)) == channels.state
            assert ("audio" in _keys(state)) == channels.audio
        last = seen[-1]["episode"]
        dump = json.dumps(seen[-1])
        user_lines = [t for t in last["turns"] if t["who"] == "user"][1:]  # after the request
        assert len(user_lines) == 5  # the opening's reaction and one per action
        for text in texts:  # the words of the user's reactions: only with T
            assert (json.dumps(text)[1:-1] in dump) == channels.text, text
        if not channels.text:
            assert {t["text"] for t in user_lines} == {"[user audio]"}
        if channels.state:  # the state tag as the observation gives it, per reaction
            words = [t["state"] for t in user_lines[1:]]
            assert words == [play_mod.STATE_WORDS[s] for s in states]
            assert last["state"] == play_mod.STATE_WORDS[states[-1]]
        if channels.audio:
            urls = [t["audio"] for t in user_lines]
            assert all(AUDIO_URL.match(u) for u in urls) and len(set(urls)) == len(urls)
            assert last["audio"] == urls[-1]
            for url in urls:
                assert not any(d in url for d in DELIVERIES)
                clip = client.get(url)
                assert clip.status_code == 200
                assert clip.headers["content-type"].startswith(("audio/ogg", "audio/wav"))
                assert clip.content[:4] in (b"OggS", b"RIFF") and len(clip.content) > 1000
                assert not any(d.encode() in clip.content for d in set(deliveries))
            assert client.get("/audio/1/99.ogg").status_code == 404


# -- bad input -----------------------------------------------------------------------------------
BAD_BODIES = [
    (b"not json", "not valid JSON"),
    (b"[0, 1, 2]", "JSON object"),
    (b'{"act": 9}', "act: got 9"),
    (b'{"act": -1}', "act: got -1"),
    (b'{"act": true}', "act: got True"),
    (b'{"act": "2", "option": 1}', "act: got '2'"),
    (b'{"act": 2}', "option: missing"),
    (b'{"act": 2, "option": 11}', "option: got 11"),
    (b'{"act": 0}', "topic: missing"),
    (b'{"act": 0, "topic": 9}', "topic: got 9"),
    (b'{"act": 0, "topic": 1.0}', "topic: got 1.0"),
    (b'{"act": 3, "whatever": 1}', "unknown fields"),
    (b'{"act": 3, "turn": 5}', "out of date"),
    (b'{"act": 3, "episode": 2}', "out of date"),
]


def test_bad_input_is_a_400_with_a_message_and_changes_nothing(tmp_path):
    with playing(tmp_path / "r.jsonl", "T", episodes=2) as (session, client):
        before = client.get("/api/state").json()
        for body, message in BAD_BODIES:
            response = client.post(
                "/api/act", content=body, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 400, body
            assert message in response.json()["error"], (body, response.json())
        response = client.post(
            "/api/act", content=b'{"act": 3}', headers={"Content-Type": "text/plain"}
        )
        assert response.status_code == 415 and "Content-Type" in response.json()["error"]
        response = client.post(
            "/api/act", content=b"{" * 5000, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 413 and "too large" in response.json()["error"]
        response = client.post("/api/next", json={})
        assert response.status_code == 400 and "phase: waiting" in response.json()["error"]
        assert client.get("/api/act").status_code == 405
        after = client.get("/api/state").json()
        assert after["episode"] == before["episode"] and after["phase"] == "waiting"
        assert not (tmp_path / "r.jsonl").read_text()
        win(client, session)
        response = client.post("/api/act", json={"act": 3})  # the episode has ended
        assert response.status_code == 400 and "phase: ended" in response.json()["error"]
        session.stop()
        response = client.post("/api/act", json={"act": 3})
        assert response.status_code == 400 and "phase: stopped" in response.json()["error"]


def test_a_local_server_refuses_other_host_names(tmp_path):
    with playing(tmp_path / "r.jsonl", "T", episodes=1) as (session, _):
        app = play_app(session, allowed_hosts=LOCAL_HOSTS)
        assert TestClient(app, base_url="http://127.0.0.1").get("/api/state").status_code == 200
        assert TestClient(app, base_url="http://evil.example").get("/api/state").status_code == 400


# -- stop and resume -------------------------------------------------------------------------
def test_a_stopped_session_resumes_with_the_episode_in_progress(tmp_path):
    out = tmp_path / "results.jsonl"
    with playing(out, "T", episodes=2) as (session, client):
        with pytest.raises(ConfigError, match="being written by another run"):
            PlaySession(config_of("T", 2), out).start(timeout=60)
        win(client, session)
        state = client.post("/api/next", json={}).json()
        second = state["episode"]["number"]
        assert second == 2
        act(client, act=0, topic=0)  # episode 2 is under way when the server stops
    assert not session.running and session.state()["phase"] == "stopped"
    lines = out.read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["error"] is None  # no record of episode 2

    with playing(out, "T", episodes=2) as (session, client):
        state = client.get("/api/state").json()
        assert state["recorded"] == 1 and state["episode"]["number"] == second
        assert state["episode"]["turn"] == 0  # played again from its start
        win(client, session)
        assert client.post("/api/next", json={}).json()["phase"] == "done"
    records = records_of(out)
    assert len(out.read_text().splitlines()) == 2 and len(records) == 2
    assert {r.key.scenario for r in records} == set(config_of("T", 2).scenarios)

    with pytest.raises(ConfigError, match=r"different grid configuration \(changed: conditions"):
        PlaySession(config_of("T+S", 2), out).start(timeout=60)
    with pytest.raises(ConfigError, match=r"changed: scenarios"):
        PlaySession(config_of("T", 3), out).start(timeout=60)
    with playing(out, "T", episodes=2) as (session, client):  # all done: the summary at once
        state = client.get("/api/state").json()
        assert state["phase"] == "done" and state["summary"]["episodes"] == 2


# -- the command -----------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hear2act")
    play_cli.add(parser.add_subparsers(dest="command", required=True))
    return parser


def test_the_command_defaults_and_its_errors(tmp_path, monkeypatch, capsys):
    args = _parser().parse_args(["play", "--name", "ada"])
    assert (args.realization, args.access, args.split, args.episodes) == (
        "prosody",
        "A+T",
        "test",
        10,
    )
    assert (args.host, args.port, args.out, args.turn_cost) == ("127.0.0.1", 0, None, 0.0)
    with pytest.raises(SystemExit):
        _parser().parse_args(["play", "--name", "ada", "--access", "S"])
    with pytest.raises(ConfigError, match="name: got 'a b'"):
        play_cli.run(_parser().parse_args(["play", "--name", "a b"]))

    served = {}

    def fake_serve(app, host, port, label, resume=None):  # the page answers; then "Ctrl-C"
        client = TestClient(app, base_url="http://127.0.0.1")
        served.update(host=host, port=port, state=client.get("/api/state").json())
        assert TestClient(app).get("/api/state").status_code == 400  # Host: testserver

    monkeypatch.setattr("hear2act_env.listen.server.serve", fake_serve)
    monkeypatch.chdir(tmp_path)
    argv = ["play", "--name", "ada", "--access", "T", "--episodes", "2", "--port", "0"]
    assert play_cli.run(_parser().parse_args(argv)) == 0
    assert served["host"] == "127.0.0.1" and served["state"]["phase"] == "waiting"
    assert served["state"]["agent"] == "human:ada" and served["state"]["total"] == 2
    assert "0 of 2 episodes recorded in runs/human/ada/results.jsonl" in capsys.readouterr().out
    manifest = tmp_path / "runs" / "human" / "ada" / "results.manifest.json"
    assert json.loads(manifest.read_text())["config"]["agents"] == ["human:ada"]


# -- in a real browser -----------------------------------------------------------------------
def test_an_episode_played_by_clicks_in_the_browser_is_recorded(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from hear2act_env.listen.server import background_server

    out = tmp_path / "results.jsonl"
    session = PlaySession(config_of("A+T", 1), out)
    session.start(timeout=60)
    find = browser.find_element
    wait = WebDriverWait(browser, 30)

    def turns() -> int:
        return len(browser.find_elements(By.CSS_SELECTOR, "#transcript .turn"))

    def ready(n: int) -> None:
        wait.until(lambda d: turns() == n and find(By.ID, "ask").is_enabled())

    try:
        with background_server(play_app(session)) as url:
            browser.get(url + "/")
            inner = browser.execute_script("return [window.innerWidth, window.innerHeight]")
            browser.set_window_size(1280 * 2 - inner[0], 900 * 2 - inner[1])  # a 1280x900 page
            ready(3)
            media = media_state(browser, find(By.ID, "latest-audio"))
            assert media["error"] is None and media["duration"] > 0, media
            assert len(browser.find_elements(By.CSS_SELECTOR, "#options tbody tr")) == 11
            assert "[user audio]" not in find(By.ID, "transcript").text  # A+T: words shown
            best = twin(session, 1)[1]["truth"]["best"]
            Select(find(By.ID, "topic")).select_by_value("1")
            find(By.ID, "ask").click()
            ready(5)
            Select(find(By.ID, "option")).select_by_value(str(best))
            find(By.ID, "recommend").click()
            ready(7)
            assert f"option {best + 1}" in find(By.ID, "transcript").text
            browser.execute_script("window.scrollTo(0, 0)")
            shot = tmp_path / "play.png"
            assert browser.save_screenshot(str(shot))
            data = shot.read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
            if os.environ.get("HEAR2ACT_SCREENSHOTS") == "1":
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                (SCREENSHOTS / "play.png").write_bytes(data)
            find(By.ID, "confirm").click()
            wait.until(lambda d: find(By.ID, "outcome").is_displayed())
            assert "success" in find(By.ID, "outcome-title").text
            assert f"option {best + 1}" in find(By.ID, "outcome-text").text
            [record] = records_of(out)
            assert record.key.agent == "human:ada" and record.key.access == "A+T"
            assert record.success and record.steps == [[0, 0, 1], [2, best, 0], [3, 0, 0]]
            find(By.ID, "next").click()
            wait.until(lambda d: find(By.ID, "summary").is_displayed())
            assert str(out) in find(By.ID, "summary-results").text
            assert "1 episodes, 1 successful" in find(By.ID, "summary-text").text
    finally:
        session.stop()
