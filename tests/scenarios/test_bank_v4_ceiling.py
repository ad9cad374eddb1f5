"""``tools.bank_v4.ceiling``: the idealized column design it reports is the generator's own."""

from __future__ import annotations

import pytest

from tools.bank_v4.ceiling import ceiling


@pytest.mark.parametrize("n_open", [6, 7])
def test_the_idealized_design_reports_shares_a_table_can_have(n_open):
    row = ceiling(n_open, 0.5, designs=2, steps=300)
    assert row["designs"] == 2 and row["chance"] == round(3 / n_open, 4)
    assert 1 / 7 - 1e-9 <= row["best_posterior"] <= 1.0  # 7 options can be best at most
    for level in ("l1_top3", "l2_top3", "l3_top3"):
        assert 3 / n_open - 1e-9 <= row[level] <= 1.0  # the top 3 of n hold at least 3/n
    assert row["l1_top3"] == row["l2_top3"]  # the pattern code is symmetric in L1 and L2
    assert row["valid_triples"] > 0


def test_the_level_weight_is_restored_after_a_run():
    from hear2act_env.scenarios import design

    before = design.LEVEL_WEIGHT
    ceiling(6, 2.0, designs=1, steps=50)
    assert design.LEVEL_WEIGHT == before
