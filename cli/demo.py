"""``hear2act demo``: run one seeded episode of an agent and print its transcript."""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym

from hear2act_cli import options
from hear2act_cli.outputs import writable_dir
from hear2act_env.registration import ENV_IDS


def run(args: argparse.Namespace) -> int:
    from hear2act_agents.registry import make_agent
    from hear2act_env.evaluation.rollout import run_episode, wrap_for

    options.refuse_blank_paths(args, ("save_audio",))
    folder = writable_dir("--save-audio", args.save_audio) if args.save_audio else None
    policy = make_agent(args.agent)
    env = wrap_for(gym.make(args.env, render_mode="ansi", disable_env_checker=True), policy)
    rollout = run_episode(env, policy, seed=args.seed, scenario=args.scenario)
    last = rollout.infos[-1]
    print(f"# {args.env}  scenario {last['scenario_id']}  agent {policy.name}  seed {args.seed}")
    print(env.render())
    final = last["final_option"]
    print(
        f"final option: {final + 1 if final >= 0 else None}  "
        f"best: {last['truth']['best'] + 1}  success: {last['is_success']}  "
        f"actions: {last['actions']}  revealed: {', '.join(last['truth']['revealed']) or 'none'}"
    )
    if folder is not None:
        save_examples(folder, args.seed)
    return 0


def save_examples(folder: Path, seed: int) -> None:
    """A few WAVs per delivery label: one accepting line in two voices and two variations."""
    from hear2act_env.protocol.delivery import DELIVERIES
    from hear2act_env.protocol.realizer import ACCEPTANCE_POOL
    from hear2act_env.protocol.scenario import PERSONAS
    from hear2act_env.speech.cache import AudioCache
    from hear2act_env.speech.espeak import EspeakRenderer
    from hear2act_env.speech.utterance import Utterance
    from hear2act_env.speech.wav import write_wav

    renderer, cache = EspeakRenderer(), AudioCache()
    line = ACCEPTANCE_POOL[seed % len(ACCEPTANCE_POOL)]
    n = 0
    for label in DELIVERIES:
        for persona, variation in ((PERSONAS[0], 0), (PERSONAS[3], 1)):
            audio = cache.render(renderer, Utterance(line, label, persona, variation))
            write_wav(folder / f"{label}_{persona}_v{variation}.wav", audio)
            n += 1
    print(f"saved {n} WAVs of {line!r} ({len(DELIVERIES)} labels x 2 voices) to {folder}/")


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="run one seeded episode of an agent and print the transcript with state tags"
    )
    p.add_argument(
        "--env",
        default="Hear2Act-Prosody-Text-v0",
        choices=sorted(ENV_IDS),
        help="registered env id (default: Hear2Act-Prosody-Text-v0)",
    )
    p.add_argument("--agent", default="prober", help="an agent name or spec (default: prober)")
    p.add_argument(
        "--seed", type=options.int_at_least(0), default=0, help="episode seed (default: 0)"
    )
    p.add_argument("--scenario", default=None, help="a scenario id (default: drawn with the seed)")
    p.add_argument(
        "--save-audio",
        default=None,
        metavar="DIR",
        help="also save example WAVs per delivery label",
    )
    p.set_defaults(func=run)
