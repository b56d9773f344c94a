"""Rudolph et al.'s reference PPO and MMD (nathanlct/IIG-RL-Benchmark) valued by OpenSpiel's exact
NashConv, for the calibration in docs/EXPLOITABILITY.md ("Against the paper").

This is the checkout's main.py with one change: its exploitability tool (exp-a-spiel) supports
only phantom tic-tac-toe and dark hex, so the callback tabulates the shared actor's softmax over
the legal actions at every information state and calls OpenSpiel's `nash_conv`. Their training
code (`algorithms/`, RunPPO / RunMMD) and configs are used unchanged. To rerun:

    git clone https://github.com/nathanlct/IIG-RL-Benchmark ref && cd ref
    git checkout 591d35dadf243df846534c9df9f77759f7441814
    mkdir -p tools && cp <this repo>/benchmarks/iig_reference/run_os_expl.py tools/
    pip install hydra-core psutil      # beside torch 2.13.0 (CPU) and open_spiel 2.0.2
    TORCH_THREADS=1 python tools/run_os_expl.py algorithm=ppo game=leduc_poker seed=0 \
        max_steps=1000000 compute_exploitability_every=100000 save_dir=/tmp/iigres group_name=main

A step is one decision of either player; the CSV (`<save_dir>/main/<alg>/<game>/seed<S>/
exploitability.csv`) has NashConv and NashConv / 2 (their "exploitability"). The results of
2026-12-03 are in docs/results/iig_reference/.
"""

import csv
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import hydra
import numpy as np
import pyspiel
import torch
from algorithms.runner import get_runner_cls
from omegaconf import DictConfig, OmegaConf
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import exploitability as os_expl

OPENSPIEL_GAMES = {"kuhn_poker": "kuhn_poker(players=2)", "leduc_poker": "leduc_poker(players=2)"}


def set_seed(seed):
    import random

    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


@hydra.main(version_base=None, config_path="../configs", config_name="experiment")
def main(cfg: DictConfig):
    nthreads = int(os.environ.get("TORCH_THREADS", "1"))
    torch.set_num_threads(nthreads)
    set_seed(cfg.seed)
    exp_dir = os.path.join(cfg.save_dir, cfg.group_name, cfg.algorithm.algorithm_name, cfg.game, f"seed{cfg.seed}")
    os.makedirs(exp_dir, exist_ok=True)
    cfg.experiment_dir = exp_dir
    OmegaConf.save(cfg, os.path.join(exp_dir, "config.yaml"))
    game = pyspiel.load_game(OPENSPIEL_GAMES[cfg.game])
    tab = os_policy.TabularPolicy(game)
    tensors = torch.tensor(np.array([s.information_state_tensor() for s in tab.states]), dtype=torch.float32)
    masks = torch.tensor(np.array([s.legal_actions_mask() for s in tab.states]), dtype=torch.bool)
    log_file = os.path.join(exp_dir, "exploitability.csv")
    if os.path.exists(log_file):
        os.remove(log_file)
    t0 = [None]
    expl_time = [0.0]

    def cb(model_p0, model_p1, step, **kw):
        t1 = time.time()
        with torch.no_grad():
            logits = model_p0(tensors)
            logits = torch.where(masks, logits, torch.tensor(-1e9))
            probs = torch.softmax(logits, dim=-1).double().numpy()
        tab.action_probability_array[:] = probs
        nc = os_expl.nash_conv(game, tab, return_only_nash_conv=False)
        dt = time.time() - t1
        expl_time[0] += dt
        wall = time.time() - t0[0]
        row = {
            "global_step": step,
            "nash_conv": nc.nash_conv,
            "expl_nashconv_over_2": nc.nash_conv / 2,
            "br0": nc.player_improvements[0],
            "br1": nc.player_improvements[1],
            "wall_s": wall,
            "train_wall_s": wall - expl_time[0],
            "expl_compute_s": dt,
        }
        new = not os.path.exists(log_file)
        with open(log_file, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=row.keys())
            if new:
                w.writeheader()
            w.writerow(row)
        print(json.dumps(row), flush=True)

    runner = get_runner_cls(cfg.algorithm.algorithm_name)(cfg, game, cb)
    print(
        f"Training {cfg.algorithm.algorithm_name} on {cfg.game} for {cfg.max_steps} steps, threads={nthreads}",
        flush=True,
    )
    t0[0] = time.time()
    runner.run()
    tot = time.time() - t0[0]
    print(
        json.dumps(
            {
                "done": True,
                "total_wall_s": tot,
                "train_wall_s": tot - expl_time[0],
                "steps": runner.current_step(),
                "steps_per_s_train": runner.current_step() / (tot - expl_time[0]),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
