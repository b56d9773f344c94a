"""`tacocat train`: MaskablePPO against a pool of ladder agents (and snapshots of itself).

Reads top to bottom: config -> seeding -> run directory -> vectorised envs -> model ->
callbacks (checkpoints, duplicate-format evaluation, self-play snapshots, progress bar) ->
learn -> final model and learning curve. `--resume RUN_DIR` continues an interrupted run
from its last checkpoint, in the same run directory.

    tacocat train --config experiments/configs/smoke.yaml --seed 1 --set n_envs=2
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from experiments.config import ExperimentConfig
from experiments.gym_env import make_env_fn
from experiments.run_dir import (
    RunDirError,
    latest_checkpoint,
    load_run_config,
    new_run_dir,
    run_metadata,
    save_model,
)

if TYPE_CHECKING:
    from experiments.callbacks import EvaluationListener

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
        run_dir = Path(resume).resolve()
        config = load_run_config(run_dir)
        if (run_dir / "final.json").exists():
            raise RunDirError(
                f"{run_dir} is a finished run (final.json exists, {config.total_timesteps} timesteps); "
                "nothing to resume. Start a new run to train longer."
            )
    elif config is None:
        raise ValueError("train() needs a config or resume=RUN_DIR")
    else:
        run_dir = new_run_dir(config)
        (run_dir / "config.yaml").write_text(config.to_yaml())
        (run_dir / "run.json").write_text(json.dumps(run_metadata(config), indent=2))

    if config.backend != "sb3":
        raise ValueError(f"{config.name}: backend {config.backend!r} trains with experiments.rllib_train.train_rllib "
                         "(`tacocat train` picks it)")
    seed_everything(config.seed, config.torch_threads)
    env = make_vec_env(config)
    checkpoint = latest_checkpoint(run_dir) if resume is not None else None
    if resume is not None and checkpoint is None:  # killed before the first checkpoint: start over
        (run_dir / "eval.csv").unlink(missing_ok=True)
    if checkpoint is not None:
        model = load_checkpoint(checkpoint, config, env)
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


def load_checkpoint(checkpoint: Path, config: ExperimentConfig, env: Any) -> Any:
    """A model rebuilt from the run's config with a checkpoint's weights and optimizer state.

    Nothing is unpickled (docs/SECURITY.md): SB3's `set_parameters` reads only the `.pth`
    members, with `torch.load(weights_only=True)`; the step count and the generator states
    come from the checkpoint's JSON.
    """
    from agents.trained import ModelFileError, check_metadata, read_metadata
    from tacocat_env.observation import ObservationLayout
    from tacocat_env.ruleset import compile_rules

    rules = compile_rules(config.rules_config)
    check_metadata(checkpoint, read_metadata(checkpoint), rules.hash, ObservationLayout(rules).size)
    model = make_model(config, env)
    try:
        model.set_parameters(str(checkpoint), exact_match=True, device=config.device)
    except Exception as err:  # torch refuses pickled objects; SB3 refuses missing parameters
        raise ModelFileError(f"checkpoint {checkpoint} could not be loaded: {str(err).splitlines()[0]}") from None
    state = json.loads(checkpoint.with_suffix(".json").read_text())
    model.num_timesteps = int(state["timesteps"])
    model._n_updates = int(state.get("n_updates", 0))
    if "envs" in state:  # the games in progress, so that the run continues exactly
        _restore_envs(model, env, state)
    _restore_rng_state(model, state)
    return model


def _restore_envs(model: Any, env: Any, state: dict[str, Any]) -> None:
    """Put the vectorised envs, the monitor and SB3's rollout bookkeeping back as they were at
    the checkpoint (learn() then continues without resetting the envs)."""
    from collections import deque

    if len(state["envs"]) != env.num_envs:
        raise RunDirError(f"the checkpoint holds {len(state['envs'])} envs, the config makes {env.num_envs}")
    for index, saved in enumerate(state["envs"]):
        env.env_method("restore_state", saved, indices=[index])
    monitor = state["monitor"]
    env.episode_returns = np.array(monitor["returns"], dtype=np.float32)
    env.episode_lengths = np.array(monitor["lengths"], dtype=np.int32)
    env.episode_count = int(monitor["count"])
    model._last_obs = np.array(state["last_obs"], dtype=np.float32)
    model._last_episode_starts = np.array(state["last_episode_starts"], dtype=bool)
    episodes = [{**info, "r": np.float32(info["r"]), "l": np.int32(info["l"])} for info in state["ep_info_buffer"]]
    model.ep_info_buffer = deque(episodes, maxlen=model._stats_window_size)  # VecMonitor's dtypes
    model.ep_success_buffer = deque(maxlen=model._stats_window_size)  # (no success infos here)


def _restore_rng_state(model: Any, state: dict[str, Any]) -> None:
    """Torch and numpy global generator states saved with a checkpoint."""
    import torch

    torch.set_rng_state(torch.tensor(state["torch_rng"], dtype=torch.uint8))
    np.random.set_state(tuple(state["numpy_rng"]))  # type: ignore[arg-type]
