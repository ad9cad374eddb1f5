"""Policies for hear2act-env: rule baselines (and, with extras, LLM and RL agents)."""

from agents.registry import AGENTS, make_agent

__all__ = ["AGENTS", "make_agent"]
