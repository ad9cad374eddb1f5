"""hear2act-env: the Hear2Act benchmark as Gymnasium environments.

Importing this package registers the environment ids (see ``registration.ENV_IDS``). It imports
only gymnasium and numpy; speech, LLM and RL code loads lazily.
"""

from __future__ import annotations

from hear2act_env.config import EnvConfig, SpeechConfig
from hear2act_env.env import Hear2ActEnv
from hear2act_env.errors import ConfigError, Hear2ActError, ScenarioError
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.registration import ENV_IDS, register_envs

__version__ = "0.1.0"
__all__ = [
    "ENV_IDS",
    "ConfigError",
    "EnvConfig",
    "Hear2ActEnv",
    "Hear2ActError",
    "Scenario",
    "ScenarioError",
    "SpeechConfig",
    "__version__",
    "register_envs",
]

register_envs()
