"""``hear2act export-results``: results JSONL files as a Hugging Face ``datasets`` folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from hear2act_cli import options
from hear2act_cli.outputs import writable_dir
from hear2act_env.errors import ConfigError


def export_results(args: argparse.Namespace) -> int:
    """Write ``data/results.parquet`` and a dataset card to ``--out``; print the paths."""
    from hear2act_env.evaluation.results_dataset import check_output
    from hear2act_env.evaluation.results_dataset import export_results as export

    options.refuse_blank_paths(args, ("out",))
    for path in args.results:
        if not str(path).strip() or not Path(path).is_file():
            raise ConfigError(f"RESULTS: {path!r} is not a file; expected a results JSONL file")
    out = writable_dir("--out", check_output(args.out, "--out"))
    for path in export(args.results, out):
        print(f"wrote {path}")
    return 0


def add_export_results(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export-results",
        help="results JSONL files as a Hugging Face datasets folder (parquet and a dataset card)",
    )
    p.add_argument(
        "results",
        nargs="+",
        metavar="RESULTS",
        help="one or more results JSONL files (an episode in several keeps the first file's "
        "record)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="the dataset folder to write: new, empty, or an earlier export-results folder",
    )
    p.set_defaults(func=export_results)
