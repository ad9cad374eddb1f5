"""``EpisodeTally``: the one definition of an episode's metric parts.

It reads what any loop has at hand (the ``info`` of ``reset`` and of each ``step``, and the
rewards) and yields the parts every metric of the paper is computed from
(docs/protocol.md#metrics): success, the agent's recommendation patterns (for Accept and
FullFit), needs revealed, premature closure, actions by kind, and the confirm-after-reluctant
counts. The runner's records, the ``RecordHear2ActMetrics`` wrapper and the SB3 callback all
use it, so a metric is defined once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ACTION_COUNTS", "STEP_ACTS", "EpisodeTally"]

#: Keys of the per-episode action counts.
ACTION_COUNTS = ("ask_targeted", "ask_open", "clarify", "recommend", "confirm", "invalid")
#: Act index of each ``last_turn["act"]`` name in an episode's action trace (``steps``); an
#: invalid action is stored as -1, which the env answers as it answers any invalid action.
STEP_ACTS = {"ask": 0, "clarify": 1, "recommend": 2, "confirm": 3}


@dataclass
class EpisodeTally:
    """Accumulates one episode; ``reset`` with the reset ``info``, ``step`` with each step's."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTION_COUNTS, 0))
    recommend_patterns: list[str] = field(default_factory=list)
    steps: list[list[int]] = field(default_factory=list)  # (act, option, topic) per action
    reluctant_turns: int = 0  # user turns in state "reluctant" that the agent answered
    confirm_after_reluctant: int = 0  # of those, answered by an immediate CONFIRM
    total_reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    last_info: dict[str, Any] = field(default_factory=dict)
    _previous_state: str | None = None

    @classmethod
    def start(cls, info: dict[str, Any]) -> EpisodeTally:
        """A tally for the episode that ``reset`` just began."""
        return cls(last_info=info, _previous_state=info["truth"]["state"])

    def step(self, info: dict[str, Any], reward: float, terminated: bool, truncated: bool) -> None:
        """Count one agent action from its step's ``info``."""
        turn = info["last_turn"]
        act = turn["act"]
        self.steps.append([STEP_ACTS.get(act, -1), int(turn["option"]), int(turn["topic"])])
        if act == "ask":
            self.counts["ask_open" if turn["topic"] == 0 else "ask_targeted"] += 1
        elif act in self.counts:
            self.counts[act] += 1
        if act == "recommend":
            self.recommend_patterns.append(info["truth"]["pattern"])
        if self._previous_state == "reluctant":
            self.reluctant_turns += 1
            self.confirm_after_reluctant += act == "confirm"
        self._previous_state = info["truth"]["state"]
        self.total_reward += float(reward)
        self.terminated, self.truncated = bool(terminated), bool(truncated)
        self.last_info = info

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def parts(self) -> dict[str, Any]:
        """The episode's metric parts (JSON-ready); call once the episode has ended."""
        last = self.last_info
        best = last["truth"]["best"]
        final = last["final_option"]
        patterns = list(self.recommend_patterns)
        return {
            "success": bool(last["is_success"]),
            "final_option": final,
            "best": best,
            "reward": self.total_reward,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "actions": int(last["actions"]),
            "counts": dict(self.counts),
            "recommend_patterns": patterns,
            "steps": [list(step) for step in self.steps],
            "accepted": sum(p[:3] == "r11" for p in patterns),
            "fullfit": patterns.count("r111"),
            "revealed": list(last["truth"]["revealed"]),
            "full_disclosure": len(last["truth"]["revealed"]) == 3,
            "premature_closure": self.terminated and final != best,
            "reluctant_turns": self.reluctant_turns,
            "confirm_after_reluctant": self.confirm_after_reluctant,
            "scenario_id": last["scenario_id"],
        }
