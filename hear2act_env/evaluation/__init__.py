"""Evaluation: rollouts, episode tallies and records, metrics, statistics, runner and reports.

``summarize`` and ``write_records`` turn the episodes of any loop (the
``wrappers.RecordHear2ActMetrics`` dicts) into the report's tables and result files.
"""

from hear2act_env.evaluation.summary import Summary, summarize, write_records

__all__ = ["Summary", "summarize", "write_records"]
