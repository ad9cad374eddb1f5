"""The delivery-label prosody table, strength scaling, variation and the SSML text."""

from __future__ import annotations

import html
import re
from dataclasses import astuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hear2act_env.speech.prosody as prosody_module
from hear2act_env.protocol.delivery import DELIVERIES, DELIVERY_LABELS, State
from hear2act_env.protocol.scenario import PERSONAS
from hear2act_env.speech.espeak import build_ssml, espeak_settings
from hear2act_env.speech.prosody import (
    DELIVERY_PROSODY,
    FIELDS,
    RELATIVE_JITTER,
    Prosody,
    jitter,
    prosody_for,
)
from hear2act_env.speech.utterance import Utterance

RESOLVED = DELIVERY_LABELS[State.RESOLVED]
UNRESOLVED_POOL = DELIVERY_LABELS[State.RELUCTANT] + DELIVERY_LABELS[State.CONCERN]


def test_every_label_has_a_row():
    assert set(DELIVERY_PROSODY) == set(DELIVERIES)


def test_docstring_table_matches_the_table():
    doc = prosody_module.__doc__
    for label, p in DELIVERY_PROSODY.items():
        row = re.search(rf"^\| {label} \| \w+ \|(.*)\|$", doc, re.MULTILINE)
        assert row, label
        cells = [float(c.strip()) for c in row.group(1).split("|")]
        assert cells == pytest.approx(list(astuple(p))), label


def test_resolved_and_unresolved_pool_labels_point_opposite_ways_but_not_in_timing():
    for good in RESOLVED:
        for bad in UNRESOLVED_POOL:
            g, b = DELIVERY_PROSODY[good], DELIVERY_PROSODY[bad]
            assert g.range_pct > b.range_pct
            assert g.gain_db > b.gain_db
            assert g.pause_early_ms + g.pause_late_ms <= b.pause_early_ms + b.pause_late_ms
    # Voice v2: the clip's length must not give the state away, so resolved labels are both
    # quicker and slower than neutral (and wait longer before speaking than some unresolved
    # ones), while some unresolved labels keep the neutral rate and no wait
    rates = [DELIVERY_PROSODY[g].rate_pct for g in RESOLVED]
    assert min(rates) < 0 < max(rates)
    assert any(DELIVERY_PROSODY[b].rate_pct > min(rates) for b in UNRESOLVED_POOL)
    assert any(
        DELIVERY_PROSODY[g].lead_ms > DELIVERY_PROSODY[b].lead_ms
        for g in RESOLVED
        for b in UNRESOLVED_POOL
    )


@pytest.mark.parametrize("variation", [0, 1, 12345])
def test_strength_zero_gives_identical_settings_for_every_label(variation):
    settings_ = {
        prosody_for(Utterance("Okay, that works.", label, "amber", variation, 0.0))
        for label in DELIVERIES
    }
    assert len(settings_) == 1
    assert settings_.pop() == _apply_jitter(Prosody(), jitter(variation))


def _apply_jitter(base: Prosody, noise: Prosody) -> Prosody:
    values = []
    for name, b, n in zip(FIELDS, astuple(base), astuple(noise)):
        values.append(b * (1 + n) if name in RELATIVE_JITTER else b + n)
    return Prosody(*values)


@pytest.mark.parametrize("label", DELIVERIES)
def test_deviation_scales_linearly_with_strength(label):
    noise = jitter(7)
    for strength in (0.0, 0.5, 1.0, 2.0):
        got = prosody_for(Utterance("Fine.", label, "cedar", 7, strength))
        want = _apply_jitter(DELIVERY_PROSODY[label].scaled(strength), noise)
        assert astuple(got) == pytest.approx(astuple(want))


def test_variation_is_seeded_and_label_independent():
    assert jitter(5) == jitter(5)
    assert jitter(5) != jitter(6)
    a = prosody_for(Utterance("Fine.", "warm", "dune", 5))
    b = prosody_for(Utterance("Fine.", "warm", "dune", 5))
    assert a == b


def _strip(ssml: str) -> str:
    return html.unescape(re.sub(r"<[^>]*>", " ", ssml)).split()


TEXTS = [
    "Okay, that could work.",
    "Alright, sounds good.",
    "It has to be under $300 & close to <downtown>.",
    "Hmm... I'm not \"sure\", it's 'fine' I guess?",
    "No.",
    "Yes",
    "  spaced   out\ttext  ",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("label", DELIVERIES)
@pytest.mark.parametrize("strength", [0.0, 1.0, 2.0])
def test_ssml_contains_only_the_texts_words(text, label, strength):
    for variation in range(3):
        utt = Utterance(text, label, PERSONAS[variation], variation, strength)
        ssml = espeak_settings(utt).ssml
        assert _strip(ssml) == text.split()
        tags = re.findall(r"<[^>]*>", ssml)
        assert all(re.fullmatch(r"</?(speak|prosody|break)\b[^>]*>", t) for t in tags), tags


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(
        st.text(
            alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Z")), min_size=1, max_size=8
        ),
        min_size=1,
        max_size=12,
    ),
    pause_early=st.floats(0, 800),
    pause_late=st.floats(0, 800),
    final_rate=st.floats(-60, 60),
    final_pitch=st.floats(-6, 6),
)
def test_build_ssml_never_adds_words(words, pause_early, pause_late, final_rate, final_pitch):
    text = " ".join(words)
    p = Prosody(
        pause_early_ms=pause_early,
        pause_late_ms=pause_late,
        final_rate_pct=final_rate,
        final_pitch_st=final_pitch,
    )
    ssml = build_ssml(text, p, 50)
    assert _strip(ssml) == text.split()


def test_hesitant_gets_pauses_and_no_fillers():
    utt = Utterance("Okay, that could work.", "hesitant", "birch", 0)
    ssml = espeak_settings(utt).ssml
    assert "<break" in ssml
    lowered = _strip(ssml)
    assert not {"um", "uh", "er", "hmm"} & {w.strip(".,").lower() for w in lowered}


def test_resolved_utterances_are_louder_on_average():
    gains = {
        label: np.mean(
            [espeak_settings(Utterance("Okay.", label, "fern", v)).gain for v in range(50)]
        )
        for label in RESOLVED + UNRESOLVED_POOL
    }
    assert min(gains[g] for g in RESOLVED) > max(gains[b] for b in UNRESOLVED_POOL)
