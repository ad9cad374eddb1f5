"""The ``hear2act`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import gymnasium as gym

from hear2act_env.errors import Hear2ActError
from hear2act_env.registration import ENV_IDS


def _demo(args: argparse.Namespace) -> int:
    from agents.registry import make_agent
    from hear2act_env.evaluation.rollout import play, wrap_for

    policy = make_agent(args.agent)
    env = wrap_for(gym.make(args.env, render_mode="ansi", disable_env_checker=True), policy)
    rollout = play(env, policy, seed=args.seed, scenario=args.scenario)
    last = rollout.infos[-1]
    print(f"# {args.env}  scenario {last['scenario_id']}  agent {policy.name}  seed {args.seed}")
    print(env.render())
    final = last["final_option"]
    print(
        f"final option: {final + 1 if final is not None else None}  "
        f"best: {last['truth']['best'] + 1}  success: {last['is_success']}  "
        f"actions: {last['actions']}  revealed: {', '.join(last['revealed']) or 'none'}"
    )
    return 0


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="play one seeded episode and print the transcript with state tags"
    )
    p.add_argument("--env", default="Hear2Act-Prosody-Text-v0", choices=sorted(ENV_IDS))
    p.add_argument("--agent", default="prober", help="a baseline agent name (default: prober)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scenario", default=None, help="a scenario id (default: drawn with the seed)")
    p.set_defaults(func=_demo)


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (_add_demo,)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``hear2act``."""
    parser = argparse.ArgumentParser(
        prog="hear2act", description="Hear2Act benchmark environment tools"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hear2act`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except Hear2ActError as exc:
        print(f"hear2act: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
