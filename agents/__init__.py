"""hear2act_agents: policies for hear2act-env (rule baselines; with extras, LLM and RL agents).

The repository keeps these in its ``agents/`` folder; they install as ``hear2act_agents``.
"""

from hear2act_agents.registry import AGENT_KINDS, BASELINES, AgentFactory, make_agent

__all__ = ["AGENT_KINDS", "BASELINES", "AgentFactory", "make_agent"]
