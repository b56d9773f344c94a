"""`tacocat train`: MaskablePPO against a pool of ladder agents (and snapshots of itself).

Reads top to bottom: config -> seeding -> run directory -> vectorised envs -> model ->
callbacks (checkpoints, duplicate-format evaluation, self-play snapshots, progress bar) ->
learn -> final model and learning curve. `--resume RUN_DIR` continues an interrupted run
from its last checkpoint, in the same run directory.

    python -m experiments.train --config experiments/configs/smoke.yaml --seed 1 --set n_envs=2
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

from experiments.config import ExperimentConfig, load_experiment
from experiments.gym_env import make_env_fn

if TYPE_CHECKING:
    from experiments.callbacks import EvaluationListener

CHECKPOINTS = "checkpoints"


# ---------------------------------------------------------------------------------------
# run directory and metadata
# ---------------------------------------------------------------------------------------
def new_run_dir(config: ExperimentConfig) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_dir = Path(config.run_root) / f"{config.name}_s{config.seed}_{stamp}"
    suffix = 1
    while run_dir.exists():
        run_dir = Path(config.run_root) / f"{config.name}_s{config.seed}_{stamp}-{suffix}"
        suffix += 1
    run_dir.mkdir(parents=True)
    return run_dir


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_metadata(config: ExperimentConfig) -> dict[str, Any]:
    """What reruns the run: the command line that started it, seed, versions, commit, rules."""
    import gymnasium
    import pettingzoo
    import sb3_contrib
    import stable_baselines3
    import torch

    return {
        "command": shlex.join(sys.argv),
        "seed": config.seed,
        "ruleset_hash": config.rules_config.ruleset_hash(),
        "git_commit": _git_commit(),
        "started": datetime.now(timezone.utc).isoformat(),
        "python": platform.python_version(),
        "versions": {
            "numpy": np.__version__, "torch": torch.__version__, "gymnasium": gymnasium.__version__,
            "pettingzoo": pettingzoo.__version__, "stable_baselines3": stable_baselines3.__version__,
            "sb3_contrib": sb3_contrib.__version__,
        },
    }


def model_metadata(config: ExperimentConfig, timesteps: int) -> dict[str, Any]:
    from tacocat_env.observation import ObservationLayout
    from tacocat_env.ruleset import compile_rules

    rules = compile_rules(config.rules_config)
    return {
        "ruleset_hash": rules.hash,
        "rules": config.rules_config.canonical_dict(),
        "observation_size": ObservationLayout(rules).size,
        "n_actions": rules.codec.size,
        "algorithm": "MaskablePPO",
        "experiment": config.name,
        "seed": config.seed,
        "timesteps": timesteps,
    }


def save_model(model: Any, path: Path, config: ExperimentConfig) -> None:
    from agents.trained import write_metadata

    model.save(path)
    write_metadata(path, model_metadata(config, int(model.num_timesteps)))


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint (its .json, written last, marks it complete)."""
    found = sorted((p for p in (run_dir / CHECKPOINTS).glob("ckpt_*.zip") if p.with_suffix(".json").exists()),
                   key=lambda p: int(p.stem.split("_")[1]))
    return found[-1] if found else None


# ---------------------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------------------
def seed_everything(seed: int, torch_threads: int) -> None:
    """All global generators in one visible place (the env and agents use their own)."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(torch_threads)


def make_vec_env(config: ExperimentConfig) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor

    pool = [(o.agent, o.weight) for o in config.opponents]
    fns = [make_env_fn(pool, config.rules, config.learner_seat) for _ in range(config.n_envs)]
    vec = DummyVecEnv(fns) if config.vec_env == "dummy" else SubprocVecEnv(fns, start_method="spawn")
    vec.seed(config.seed)
    return VecMonitor(vec)


def make_model(config: ExperimentConfig, env: Any) -> Any:
    import torch
    from sb3_contrib import MaskablePPO

    algo = config.algo
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[algo.activation]
    return MaskablePPO(
        "MlpPolicy", env,
        learning_rate=algo.learning_rate, n_steps=algo.n_steps, batch_size=algo.batch_size,
        n_epochs=algo.n_epochs, gamma=algo.gamma, gae_lambda=algo.gae_lambda, clip_range=algo.clip_range,
        ent_coef=algo.ent_coef, vf_coef=algo.vf_coef, max_grad_norm=algo.max_grad_norm,
        policy_kwargs={"net_arch": list(algo.net_arch), "activation_fn": activation},
        seed=config.seed, device=config.device, verbose=0,
    )


def configure_logger(model: Any, run_dir: Path, resumed_at: int | None) -> None:
    from stable_baselines3.common.logger import CSVOutputFormat, Logger, TensorBoardOutputFormat

    # SB3's CSV writer truncates its file, so a resumed segment logs to its own file
    name = "progress.csv" if resumed_at is None else f"progress_resumed_{resumed_at}.csv"
    formats = [CSVOutputFormat(str(run_dir / name)), TensorBoardOutputFormat(str(run_dir / "tb"))]
    model.set_logger(Logger(str(run_dir), formats))


# ---------------------------------------------------------------------------------------
# train
# ---------------------------------------------------------------------------------------
def train(
    config: ExperimentConfig | None = None,
    *,
    resume: Path | None = None,
    progress: bool = True,
    listener: EvaluationListener | None = None,
) -> Path:
    """Train (or resume) a run and return its directory.

    `listener` hears every training-time evaluation and may stop training early (the run
    directory is still complete: final model, curve).
    """
    from experiments.callbacks import build_callbacks
    from experiments.curves import plot_learning_curve

    if resume is not None:
        run_dir = Path(resume)
        config = ExperimentConfig(**yaml.safe_load((run_dir / "config.yaml").read_text()))
    elif config is None:
        raise ValueError("train() needs a config or resume=RUN_DIR")
    else:
        run_dir = new_run_dir(config)
        (run_dir / "config.yaml").write_text(config.to_yaml())
        (run_dir / "run.json").write_text(json.dumps(run_metadata(config), indent=2))

    seed_everything(config.seed, config.torch_threads)
    env = make_vec_env(config)
    checkpoint = latest_checkpoint(run_dir) if resume is not None else None
    if resume is not None and checkpoint is None:  # killed before the first checkpoint: start over
        (run_dir / "eval.csv").unlink(missing_ok=True)
    if checkpoint is not None:
        from sb3_contrib import MaskablePPO

        model = MaskablePPO.load(checkpoint, env=env, device=config.device)
        state = json.loads(checkpoint.with_suffix(".json").read_text())
        _restore_rng_state(model, state)
    else:
        model = make_model(config, env)
    start = int(model.num_timesteps)
    configure_logger(model, run_dir, start if checkpoint is not None else None)
    callbacks = build_callbacks(config, run_dir, resumed_at=start if checkpoint is not None else None,
                                progress=progress, listener=listener)
    started = time.perf_counter()
    model.learn(total_timesteps=config.total_timesteps - start, callback=callbacks,
                reset_num_timesteps=checkpoint is None)
    save_model(model, run_dir / "final_model.zip", config)
    summary = {"timesteps": int(model.num_timesteps), "wall_s_this_segment": time.perf_counter() - started}
    (run_dir / "final.json").write_text(json.dumps(summary, indent=2))
    plot_learning_curve(run_dir)
    env.close()
    return run_dir


def _restore_rng_state(model: Any, state: dict[str, Any]) -> None:
    """Torch and numpy global generator states saved with a checkpoint."""
    import torch

    torch.set_rng_state(torch.tensor(state["torch_rng"], dtype=torch.uint8))
    np.random.set_state(tuple(state["numpy_rng"]))  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog="tacocat train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="experiment YAML (experiments/configs/*.yaml)")
    parser.add_argument("--seed", type=int, default=None, help="overrides the config's seed")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config field, dotted for nested ones (repeatable)")
    parser.add_argument("--resume", type=Path, default=None, help="continue the run in RUN_DIR")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.resume is None and args.config is None:
        parser.error("give --config FILE (or --resume RUN_DIR)")
    config = None if args.resume else load_experiment(args.config, args.seed, args.overrides)
    run_dir = train(config, resume=args.resume, progress=not args.no_progress)
    print(f"run directory: {run_dir}")
    return run_dir


if __name__ == "__main__":
    main()
