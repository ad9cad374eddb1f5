"""``hear2act play``: a person plays the assistant in the browser (``hear2act_env.listen.play.app``).

    hear2act play --name ada [--realization prosody] [--access A+T] [--split test]
        [--episodes 10] [--out runs/human/ada/results.jsonl] [--host 127.0.0.1] [--port 0]

The episodes are recorded as agent ``human:NAME`` through the grid runner; running the same
command again resumes after the last finished episode. Ctrl-C (SIGINT) or SIGTERM stops the
server with exit status 130; the episode in progress is then not recorded (it is played again
on resume).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hear2act_cli import options
from hear2act_env.conditions import ACCESS
from hear2act_env.listen.play.app import DEFAULT_EPISODES
from hear2act_env.protocol.engine import REALIZATIONS


def run(args: argparse.Namespace) -> int:
    from hear2act_env.config import EnvConfig
    from hear2act_env.interrupts import Interrupted
    from hear2act_env.listen.play.app import PlaySession, default_output, play_app, play_config
    from hear2act_env.listen.server import allowed_hosts_for, serve

    options.refuse_blank_paths(args, ("out", "scenario_file"))
    config = play_config(
        args.name,
        realization=args.realization,
        access=args.access,
        episodes=args.episodes,
        env=EnvConfig(split=args.split, turn_cost=args.turn_cost, scenarios=args.scenario_file),
    )
    out = Path(args.out) if args.out else default_output(args.name)
    session = PlaySession(config, out, log=lambda message: print(f"play: {message}", flush=True))
    allowed = allowed_hosts_for(args.host)
    if allowed is None:
        print(
            f"play: warning: listening on {args.host}: anyone who can reach it can play as "
            f"{config.agents[0]} (the page has no login)",
            file=sys.stderr,
        )
    app = play_app(session, allowed_hosts=allowed)
    resume = (
        f"finished episodes are saved in {out}; run the same command again to continue (the "
        "episode in progress starts over)"
    )
    try:
        session.start()
        serve(
            app,
            host=args.host,
            port=args.port,
            label=f"hear2act play ({config.agents[0]})",
            resume=resume,
        )
    except Interrupted as exc:
        raise Interrupted(str(exc), resume=resume) from None
    finally:
        session.stop()
    state = session.state()
    print(
        f"play: {state['recorded']} of {state['total']} episodes recorded in {out}"
        + ("" if state["recorded"] == state["total"] else "; run the same command to go on")
    )
    return 0


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "play",
        help="play the assistant yourself in the browser (recorded as agent human:NAME)",
    )
    p.add_argument(
        "--name",
        required=True,
        help="your name in the records: letters, digits, '-', '_', '.' (the agent is human:NAME)",
    )
    p.add_argument(
        "--realization",
        default="prosody",
        choices=REALIZATIONS,
        help="prosody (the unmet need is heard in the voice) or explicit (default: prosody)",
    )
    p.add_argument(
        "--access",
        default="A+T",
        choices=ACCESS,
        help="what the page shows: T transcript, A audio, S state tag (default: A+T)",
    )
    options.add_split(p, "test")
    p.add_argument(
        "--episodes",
        type=options.int_at_least(1),
        default=DEFAULT_EPISODES,
        help=f"episodes to play: a fixed subset of the split, the same for everyone "
        f"(default: {DEFAULT_EPISODES})",
    )
    options.add_scenario_file(p)
    p.add_argument(
        "--turn-cost",
        type=options.env_number("turn_cost"),
        default=0.0,
        help="reward subtracted per action (default: 0)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="results file, resumed if present (default: runs/human/NAME/results.jsonl)",
    )
    options.add_listen(p, "play as NAME")
    p.set_defaults(func=run)
