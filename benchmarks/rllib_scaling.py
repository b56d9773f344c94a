"""RLlib scaling on one machine: env steps/s and training throughput with 1 and 2 env runners.

    nice -n 10 python benchmarks/rllib_scaling.py --runners 1 2 --batch 2000 --iterations 3
    nice -n 10 python benchmarks/rllib_scaling.py --runners 1 2 --envs-per-runner 1 4   # + batched envs

For each number of env runners (each one Ray actor with one CPU and `--envs-per-runner` envs), in
one run and one local Ray runtime: the `rllib_selfplay.yaml` experiment (PPO, masked module; `--selfplay-fraction`
sets the share of self-play episodes) is built, then
  * sampling: every env runner samples `--batch` env steps with the current policy, in parallel;
    env steps/s = all steps / wall time of that call;
  * training: one warm-up `train()` iteration, then `--iterations` timed ones;
    throughput = env steps sampled / wall time of the iterations (sampling + learning).
Anchors in the same run: the adapter alone in this process (random legal actions, no policy),
with and without the fixed opponents' choices, and PettingZoo's leduc_holdem_v4 AEC loop. The load
average (1 min) is printed before and after
each measurement: the machine may be shared, and other work lowers every figure.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from tacocat.stamp import describe, stamp

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "tacocat" / "train" / "configs" / "rllib_selfplay.yaml"


def load1() -> float:
    return os.getloadavg()[0]


def adapter_steps_per_s(seconds: float, opponents: tuple[str, ...] = ()) -> float:
    from tacocat.train.rllib.env import TacocatMultiAgentEnv

    env, rng = TacocatMultiAgentEnv({"opponents": list(opponents)}), np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        ((agent, ob),) = obs.items()
        obs, _, term, trunc, _ = env.step({agent: int(rng.choice(np.flatnonzero(ob["action_mask"])))})
        steps += 1
        if term["__all__"] or trunc["__all__"]:
            obs, _ = env.reset()
    return steps / (time.perf_counter() - start)


def leduc_steps_per_s(seconds: float) -> float:
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    from pettingzoo.classic import leduc_holdem_v4

    env, rng = leduc_holdem_v4.env(), np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.reset(seed=int(rng.integers(1 << 30)))
        for _ in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            steps += 1
    return steps / (time.perf_counter() - start)


def measure(runners: int, batch: int, iterations: int, fraction: float, envs: int) -> dict:
    from tacocat.train.config import load_experiment
    from tacocat.train.rllib.trainer import build_algo_config

    config = load_experiment(
        CONFIG,
        overrides=[
            f"rllib.env_runners={runners}",
            f"rllib.train_batch_size={batch}",
            f"rllib.selfplay_fraction={fraction}",
            f"rllib.envs_per_env_runner={envs}",
        ],
    )
    algo = build_algo_config(config).build_algo()
    try:
        group = algo.env_runner_group
        group.foreach_env_runner(lambda r: r.sample(num_timesteps=200), local_env_runner=False)  # warm-up
        load_before = load1()
        start = time.perf_counter()
        episodes = group.foreach_env_runner(lambda r: r.sample(num_timesteps=batch), local_env_runner=False)
        sample_s = time.perf_counter() - start
        sampled = sum(len(e) for runner in episodes for e in runner)
        algo.train()  # warm-up iteration
        steps, start = 0, time.perf_counter()
        for _ in range(iterations):
            steps += int(algo.train()["env_runners"]["num_env_steps_sampled"])
        train_s = time.perf_counter() - start
        return {
            "runners": runners,
            "envs": envs,
            "sample_steps": sampled,
            "sample_per_s": sampled / sample_s,
            "train_steps": steps,
            "train_per_s": steps / train_s,
            "load_before": load_before,
            "load_after": load1(),
        }
    finally:
        algo.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch", type=int, default=2000, help="env steps per sample call and per iteration")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--selfplay-fraction", type=float, default=0.8)
    parser.add_argument(
        "--envs-per-runner",
        type=int,
        nargs="+",
        default=[1],
        help="envs per env runner (each value measured with each --runners)",
    )
    parser.add_argument("--anchor-seconds", type=float, default=5.0)
    args = parser.parse_args()

    import ray
    import torch

    torch.set_num_threads(1)
    print(f"{describe(stamp())}, {os.cpu_count()} CPUs")
    anchors = [
        ("Tacocat adapter alone, 1 process, random legal actions", adapter_steps_per_s),
        (
            "the same, asking counter and planner at every step (fixed opponents)",
            lambda s: adapter_steps_per_s(s, ("counter", "planner")),
        ),
        ("PettingZoo leduc_holdem_v4 AEC loop, 1 process", leduc_steps_per_s),
    ]
    for name, fn in anchors:
        before = load1()
        print(f"anchor: {name}: {fn(args.anchor_seconds):,.0f} env steps/s (load {before:.2f} -> {load1():.2f})")
    ray.init(num_cpus=max(args.runners), include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    rows = []
    try:
        for envs in args.envs_per_runner:
            for runners in args.runners:
                rows.append(measure(runners, args.batch, args.iterations, args.selfplay_fraction, envs))
    finally:
        ray.shutdown()
    base = rows[0]
    print(
        f"\nRLlib PPO, rllib_selfplay.yaml (selfplay_fraction {args.selfplay_fraction}), batch {args.batch}, "
        f"{args.iterations} timed iterations"
    )
    print(
        "| env runners | envs per runner | sampling env steps/s | speed-up | training env steps/s | speed-up "
        "| load avg (1 min) |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['runners']} | {r['envs']} | {r['sample_per_s']:,.0f} | "
            f"{r['sample_per_s'] / base['sample_per_s']:.2f}x | "
            f"{r['train_per_s']:,.0f} | {r['train_per_s'] / base['train_per_s']:.2f}x | "
            f"{r['load_before']:.2f} -> {r['load_after']:.2f} |"
        )


if __name__ == "__main__":
    main()
