"""Vectorized training envs: SB3 SubprocVecEnv/DummyVecEnv and Gymnasium's vector API."""

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from hear2act_agents.rl.actions import N_ACTIONS
from hear2act_agents.rl.envs import env_thunks
from tests.rl.stubs import ToneRenderer


def drive(venv, steps=40):
    venv.seed(7)
    obs = venv.reset()
    for _ in range(steps):
        masks = np.stack(venv.env_method("action_masks"))
        assert masks.shape == (venv.num_envs, N_ACTIONS) and masks.any(axis=1).all()
        actions = [np.flatnonzero(m)[0] for m in masks]
        obs, rewards, dones, infos = venv.step(np.array(actions))
    return obs


def test_sb3_subproc_matches_dummy():
    thunks = env_thunks(2, access="T+S", split="train")
    sub = SubprocVecEnv(thunks)
    try:
        a = drive(sub)
    finally:
        sub.close()
    b = drive(DummyVecEnv(thunks))
    assert np.array_equal(a, b)


def test_sb3_subproc_with_audio():
    thunks = env_thunks(2, access="A+T", split="train", renderer=ToneRenderer())
    sub = SubprocVecEnv(thunks)
    try:
        obs = drive(sub, steps=10)
    finally:
        sub.close()
    assert obs.shape[0] == 2 and np.isfinite(obs).all()


def test_gymnasium_vector_envs():
    thunks = env_thunks(3, access="T", split="train")
    results = []
    for cls in (gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv):
        venv = cls(thunks)
        try:
            obs, _ = venv.reset(seed=11)
            total = np.zeros(3)
            for _ in range(30):
                obs, reward, term, trunc, info = venv.step(np.full(3, 0))  # open questions
                total += reward
            results.append((obs, total))
        finally:
            venv.close()
    assert np.array_equal(results[0][0], results[1][0])
    assert np.array_equal(results[0][1], results[1][1])
