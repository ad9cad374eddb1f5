"""The runner's progress line: a pure function of counts and elapsed time, and its drawing."""

from __future__ import annotations

import io

from hear2act_env.evaluation.progress import (
    Counts,
    Progress,
    format_duration,
    format_progress,
    format_rate,
)
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord


def _record(scenario: str, error: str | None = None, **stats: int) -> EpisodeRecord:
    key = EpisodeKey("a", "prosody", "T", "correct", scenario, 0)
    return EpisodeRecord(key=key, seed=0, error=error, agent_stats=stats)


def test_rates_keep_two_digits_below_10_and_never_read_0():
    rates = (0.3, 0.314, 0.0042, 2.54, 9.4, 12.6, 340.2, 999.4, 999.6, 45_612.0)
    assert [format_rate(x) for x in rates] == [
        "0.30",
        "0.31",
        "0.0042",
        "2.5",
        "9.4",
        "13",
        "340",
        "999",
        "1.0k",
        "45.6k",
    ]
    assert format_rate(0.0) == "0" and format_rate(float("inf")) == "0"


def test_durations_read_h_mm_ss():
    assert [format_duration(s) for s in (0, 59.6, 61, 3599, 3600, 36_000 + 62)] == [
        "0:00:00",
        "0:01:00",
        "0:01:01",
        "0:59:59",
        "1:00:00",
        "10:01:02",
    ]


def test_nothing_done_or_no_time_elapsed_gives_no_rate_and_no_eta():
    for counts, elapsed in [(Counts(total=48), 0.0), (Counts(total=48), 12.0)]:
        line = format_progress(counts, elapsed, bar=10)
        assert line == "[          ] 0/48 episodes, --/s, ETA --"
    # done in no time (a first chunk the moment the run starts): still nothing to divide by
    assert format_progress(Counts(total=48, done=4), 0.0, bar=10).endswith("--/s, ETA --")


def test_a_slow_run_shows_its_rate_eta_and_model_usage():
    counts = Counts(total=48, done=12, calls=240, tokens=18_300, errors=1)
    line = format_progress(counts, 40.0, bar=8)
    # 12 episodes in 40 s: 0.30/s; 36 left: 120 s
    assert line == (
        "[##      ] 12/48 episodes, 0.30/s, ETA 0:02:00 | 240 calls (6.0/s), "
        "18.3k tokens (458/s), 1 error"
    )
    counts.errors = 3
    assert format_progress(counts, 40.0).endswith(", 3 errors")


def test_resumed_episodes_fill_the_bar_but_not_the_rate():
    # 40 were recorded by an earlier run; this one has run 2 in 10 s; 8 are left
    counts = Counts(total=50, done=42, resumed=40)
    assert (
        format_progress(counts, 10.0, bar=10) == "[########  ] 42/50 episodes, 0.20/s, ETA 0:00:40"
    )
    resumed_only = Counts(total=50, done=40, resumed=40)
    assert format_progress(resumed_only, 10.0, bar=10).endswith("40/50 episodes, --/s, ETA --")
    finished = Counts(total=50, done=50, resumed=50)
    assert format_progress(finished, 0.0, bar=10).endswith("ETA 0:00:00")


def test_big_counts_are_shortened_and_an_empty_grid_is_full():
    counts = Counts(total=10_000, done=5_000, calls=123_456, tokens=45_600_000)
    line = format_progress(counts, 1000.0, bar=4)
    assert line == (
        "[##  ] 5000/10000 episodes, 5.0/s, ETA 0:16:40 | 123k calls (123/s), "
        "45.6M tokens (45.6k/s)"
    )
    assert format_progress(counts, 1000.0, bar=0).startswith("5000/10000 episodes, 5.0/s")
    assert format_progress(Counts(total=0), 0.0, bar=4) == "[####] 0/0 episodes, --/s, ETA 0:00:00"


def test_counts_come_from_records_and_the_line_is_redrawn_in_place():
    stream = io.StringIO()
    bar = Progress(total=3, done=0, enabled=True, stream=stream)
    bar.update([_record("s1", calls=4, prompt_tokens=100, completion_tokens=20)])
    bar.update([_record("s2", calls=2, prompt_tokens=50, completion_tokens=5)])
    bar.update([_record("s3", error="InfrastructureError: down")])
    bar.close()
    c = bar.counts
    assert (c.done, c.calls, c.tokens, c.errors) == (3, 6, 175, 1)
    lines = stream.getvalue().split("\r")
    assert lines[0] == "" and lines[-1].startswith("[") and lines[-1].endswith("\n")
    # the first record draws at once; the last always draws (the second falls within 0.5 s)
    assert "3/3 episodes" in lines[-1] and "6 calls" in lines[-1] and "1 error" in lines[-1]
    assert all("\n" not in x for x in lines[:-1])
    # rule agents report no calls: no calls part; a disabled bar writes nothing
    quiet = io.StringIO()
    off = Progress(total=1, done=0, enabled=False, stream=quiet)
    off.update([_record("s1")])
    off.close()
    assert quiet.getvalue() == "" and off.counts.calls is None
    rule = io.StringIO()
    on = Progress(total=1, done=0, enabled=True, stream=rule)
    on.update([_record("s1")])
    assert "calls" not in rule.getvalue()
    # a narrow terminal: the bar goes first, so that the counts still fit on one line
    narrow = io.StringIO()
    small = Progress(total=3, done=0, enabled=True, stream=narrow)
    small.columns = 60
    small.update([_record("s1", calls=4, prompt_tokens=100, completion_tokens=20)])
    drawn = narrow.getvalue()
    assert drawn.startswith("\r1/3 episodes, ") and len(drawn) == 60 and "[" not in drawn
