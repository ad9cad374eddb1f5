"""Which of several whole drawings of a scenario to keep: the one whose eligible options look
most alike in everything the audit's attackers count.

The construction (``construction``) leaves ``best`` with small, role-driven regularities:
it sits on the opening's side of two needs and on safe's side of all three, so on average it
shares a few more values with them than an option that meets fewer needs does. Each is far too
weak for one heuristic to use, but the audit's learned rankers add them up. Drawing a profile's
scenario several times and keeping the drawing whose eligible options are the least spread in
those counts shrinks what is left to add up, and the choice reads no role: it cannot favor or
disfavor ``best``, only make every eligible option look like every other one. The option that
is last on the favored attribute is left out of the comparison, since anyone can tell it apart
(and it is never best). Measured with ``hear2act scenarios audit`` in docs/protocol.md.
"""

from __future__ import annotations

import numpy as np

from hear2act_env.protocol.scenario import Scenario
from hear2act_env.scenarios.audit.features import OPTION_FEATURES, option_features
from hear2act_env.scenarios.audit.view import view_of

__all__ = ["ALIKE_FEATURES", "NOT_JUDGED", "TWIN_WEIGHT", "option_spread"]

#: Option features a drawing is not judged by: rank, position and length are left to the
#: construction itself, and the domain-knowledge counts are even by the domain rules (``hiding``).
NOT_JUDGED: tuple[str, ...] = (
    "favored_rank",
    "position",
    "description_length",
    "desirable_values",
    "desirability",
    "level_index",
)
#: Option counts whose spread over the eligible options a drawing is judged by.
ALIKE_FEATURES: tuple[str, ...] = tuple(n for n in OPTION_FEATURES if n not in NOT_JUDGED)
#: Extra weight on the two "twin" counts (values shared with the option last on the favored
#: attribute and with the most alike option behind): best and safe meet the same needs, so
#: these carry the construction's strongest residual regularity once distractors copy the
#: need they imitate level for level (docs/domains.md, "The most alike drawing").
TWIN_WEIGHT = 3.0
_COLUMNS = [OPTION_FEATURES.index(name) for name in ALIKE_FEATURES]
_WEIGHTS = np.array(
    [
        TWIN_WEIGHT if name in ("shared_with_last_on_favored", "shared_with_closest_ahead") else 1.0
        for name in ALIKE_FEATURES
    ]
)


def option_spread(scenario: Scenario) -> float:
    """Weighted sum of the variances of ``ALIKE_FEATURES`` over the eligible options, the one
    last on the favored attribute left out (0: they all look the same)."""
    view, _ = view_of(scenario, with_desirability=False)
    features = option_features(view)[:, _COLUMNS]
    rank = view.favored_rank[view.eligible]
    keep = rank < rank.max()
    return float((features[keep].var(axis=0) * _WEIGHTS).sum())
