"""Training throughput: MaskablePPO on Tacocat beside SB3's PPO on CartPole-v1, same settings.

    python benchmarks/train_speed.py --timesteps 40960 --n-envs 8

Both learners use the default config's hyperparameters (n_steps, batch size, epochs, network,
one torch thread) and a DummyVecEnv of `--n-envs` environments, in the same process one after
the other. FPS = timesteps / wall time of `learn` (rollouts + updates). Tacocat is measured
with the default opponent pool and with a random opponent; MaskablePPO on CartPole with an
all-true mask separates the masking algorithm's own cost from the game's.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

from tacocat.stamp import describe, stamp
from tacocat.train.config import load_experiment
from tacocat.train.gym_env import make_env_fn


class AllLegal(gym.Wrapper):
    """CartPole with an all-true action mask: MaskablePPO's own overhead, without a game."""

    def action_masks(self) -> np.ndarray:
        return np.ones(self.action_space.n, dtype=bool)


CONFIG = Path(__file__).resolve().parents[1] / "tacocat" / "train" / "configs" / "ppo_vs_heuristics.yaml"


def fps(algo_cls, env, config, timesteps: int) -> float:
    algo = config.algo
    model = algo_cls(
        "MlpPolicy",
        env,
        n_steps=algo.n_steps,
        batch_size=algo.batch_size,
        n_epochs=algo.n_epochs,
        learning_rate=algo.learning_rate,
        policy_kwargs={"net_arch": list(algo.net_arch)},
        seed=0,
        device="cpu",
        verbose=0,
    )
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps)
    return model.num_timesteps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=40960)
    parser.add_argument("--n-envs", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = load_experiment(CONFIG, overrides=[f"n_envs={args.n_envs}"])
    pool = [(o.agent, o.weight) for o in config.opponents]
    runs = {
        "PPO, CartPole-v1": (PPO, DummyVecEnv([lambda: gym.make("CartPole-v1")] * args.n_envs)),
        "MaskablePPO, CartPole-v1 (all actions legal)": (
            MaskablePPO,
            DummyVecEnv([lambda: AllLegal(gym.make("CartPole-v1"))] * args.n_envs),
        ),
        "MaskablePPO, Tacocat (default pool)": (
            MaskablePPO,
            DummyVecEnv([make_env_fn(pool, {}, "alternate") for _ in range(args.n_envs)]),
        ),
        "MaskablePPO, Tacocat (random opponent)": (
            MaskablePPO,
            DummyVecEnv([make_env_fn([("random", 1.0)], {}, "alternate") for _ in range(args.n_envs)]),
        ),
    }
    results = {}
    for name, (cls, env) in runs.items():
        env.seed(0)
        results[name] = fps(cls, env, config, args.timesteps)
        env.close()
    base = results["PPO, CartPole-v1"]
    print("| run | FPS | vs CartPole |\n|---|---|---|")
    for name, value in results.items():
        print(f"| {name} | {value:,.0f} | {value / base:.0%} |")
    print(
        f"\ntimesteps {args.timesteps}, n_envs {args.n_envs}, n_steps {config.algo.n_steps}, "
        f"batch {config.algo.batch_size}, epochs {config.algo.n_epochs}, net {config.algo.net_arch}, 1 torch thread"
    )
    print(describe(stamp(config.rules_config)))


if __name__ == "__main__":
    main()
