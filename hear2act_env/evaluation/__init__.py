"""Evaluation: rollouts, episode records, metrics, statistics, runner and reports."""
