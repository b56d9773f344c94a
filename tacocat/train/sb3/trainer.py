"""`backend: sb3` (the default): MaskablePPO (sb3-contrib) against a pool of ladder agents and,
with `sb3.selfplay`, snapshots of itself.

Reads top to bottom: seeding -> vectorised envs -> model -> one iteration = one rollout and
one update (`MaskablePPO.learn` for one rollout: the same update as a single long `learn`,
the schedules being constant) -> checkpoints (the model's weights and optimizer, the
generators, the games in progress, the last observations and the self-play pool: a resumed
run continues bit for bit) -> the final model, `final_model.zip`, played by the ladder agent
`ppo:path=RUN/final_model.zip`. The run loop around it is `tacocat.train.loop`.
"""

from __future__ import annotations

import json
import random
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from tacocat.agents.base import Agent
from tacocat.train.checkpoints import CheckpointMarker
from tacocat.train.gym_env import make_env_fn
from tacocat.train.loop import no_session
from tacocat.train.policy import ExportedPolicy
from tacocat.train.run_dir import RunDirError
from tacocat.train.sb3.config import SB3Experiment
from tacocat.train.sb3.model_files import save_model

MODEL = "model.zip"
STATE = "state.json"
#: a checkpoint's state.json is read only up to this size (it holds every env's game in progress)
MAX_STATE_BYTES = 256 << 20

session = no_session


# ---------------------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------------------
def seed_everything(seed: int, torch_threads: int) -> None:
    """All global generators in one visible place (the env and agents use their own)."""
    import torch

    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 (stable-baselines3 draws from numpy's global RNG)
    torch.manual_seed(seed)
    torch.set_num_threads(torch_threads)


def make_vec_env(config: SB3Experiment) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor

    pool = [(o.agent, o.weight) for o in config.opponents]
    fns = [make_env_fn(pool, config.rules, config.learner_seat) for _ in range(config.n_envs)]
    vec = DummyVecEnv(fns) if config.sb3.vec_env == "dummy" else SubprocVecEnv(fns, start_method="spawn")
    vec.seed(config.seed)
    return VecMonitor(vec)


def make_model(config: SB3Experiment, env: Any) -> Any:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import Logger

    algo = config.algo
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[algo.activation]
    model = MaskablePPO(
        "MlpPolicy",
        env,
        learning_rate=algo.learning_rate,
        n_steps=algo.n_steps,
        batch_size=algo.batch_size,
        n_epochs=algo.n_epochs,
        gamma=algo.gamma,
        gae_lambda=algo.gae_lambda,
        clip_range=algo.clip_range,
        ent_coef=algo.ent_coef,
        vf_coef=algo.vf_coef,
        max_grad_norm=algo.max_grad_norm,
        policy_kwargs={"net_arch": list(algo.net_arch), "activation_fn": activation},
        seed=config.seed,
        device=config.sb3.device,
        verbose=0,
    )
    model.set_logger(Logger(None, []))  # the run loop logs; SB3's logger only collects the update's values
    return model


# ---------------------------------------------------------------------------------------
# the trainer
# ---------------------------------------------------------------------------------------
class SB3Trainer:
    progress_fields = (
        "episodes",
        "ep_rew_mean",
        "ep_len_mean",
        "policy_loss",
        "value_loss",
        "entropy",
        "approx_kl",
        "clip_fraction",
    )

    def __init__(self, config: SB3Experiment, run_dir: Path) -> None:
        from tacocat.train.sb3.selfplay import SelfPlayCallback

        self.config = config
        seed_everything(config.seed, config.sb3.torch_threads)
        self.env = make_vec_env(config)
        self.model = make_model(config, self.env)
        self.rollout = config.algo.n_steps * config.n_envs
        self.selfplay = SelfPlayCallback(config, run_dir) if config.sb3.selfplay else None
        self._started = False  # the first `learn` resets the envs; later ones continue their games

    @property
    def timesteps(self) -> int:
        return int(self.model.num_timesteps)

    def iterate(self) -> dict[str, Any]:
        self.model.learn(
            total_timesteps=self.rollout,
            callback=self.selfplay,
            log_interval=None,
            reset_num_timesteps=not self._started,
        )
        self._started = True
        logged = dict(self.model.logger.name_to_value)
        self.model.logger.dump(self.timesteps)  # (no output formats: just clears)
        episodes = list(self.model.ep_info_buffer or [])
        return {
            "episodes": int(self.env.episode_count),
            "ep_rew_mean": float(np.mean([e["r"] for e in episodes])) if episodes else None,
            "ep_len_mean": float(np.mean([e["l"] for e in episodes])) if episodes else None,
            "policy_loss": logged.get("train/policy_gradient_loss"),
            "value_loss": logged.get("train/value_loss"),
            "entropy": -logged["train/entropy_loss"] if "train/entropy_loss" in logged else None,
            "approx_kl": logged.get("train/approx_kl"),
            "clip_fraction": logged.get("train/clip_fraction"),
        }

    # -- checkpoints ----------------------------------------------------------------------
    def save(self, folder: Path) -> dict[str, Any]:
        import torch

        save_model(self.model, folder / MODEL, self.config)
        numpy_rng = np.random.get_state(legacy=True)  # noqa: NPY002 (SB3's global RNG, saved with the run)
        assert isinstance(numpy_rng, tuple)  # the legacy form: (kind, keys, pos, has_gauss, cached)
        kind, keys, pos, has_gauss, cached = numpy_rng
        model, env = self.model, self.env
        state = {
            "torch_rng": torch.get_rng_state().tolist(),
            "numpy_rng": [kind, keys.tolist(), pos, has_gauss, cached],
            "n_updates": int(getattr(model, "_n_updates", 0)),
            "envs": env.env_method("resume_state"),
            "monitor": {
                "returns": env.episode_returns.tolist(),
                "lengths": env.episode_lengths.tolist(),
                "count": int(env.episode_count),
            },
            "last_obs": model._last_obs.tolist(),
            "last_episode_starts": model._last_episode_starts.tolist(),
            "ep_info_buffer": [
                {k: (v.item() if isinstance(v, np.generic) else v) for k, v in info.items()}
                for info in model.ep_info_buffer or []
            ],
        }
        (folder / STATE).write_text(json.dumps(state))
        # snapshot files relative to the run directory: a run resumes from any working directory
        return {"snapshots": self.selfplay.snapshots if self.selfplay else []}

    def restore(self, folder: Path, marker: CheckpointMarker) -> None:
        """The model rebuilt from the run's config with the checkpoint's weights and optimizer
        state, then the games, generators and pool as they were. Nothing is unpickled
        (docs/SECURITY.md): SB3's `set_parameters` reads only the `.pth` members, with
        `torch.load(weights_only=True)`; everything else comes from JSON."""
        from tacocat.agents.trained import ModelFileError, check_metadata, read_metadata
        from tacocat.game.observation import ObservationLayout
        from tacocat.game.ruleset import compile_rules
        from tacocat.train.config_files import read_small_file

        path = folder / MODEL
        rules = compile_rules(self.config.rules_config)
        check_metadata(path, read_metadata(path), rules.hash, ObservationLayout(rules).size)
        try:
            self.model.set_parameters(str(path), exact_match=True, device=self.config.sb3.device)
        except Exception as err:  # torch refuses pickled objects; SB3 refuses missing parameters
            raise ModelFileError(f"checkpoint {path} could not be loaded: {str(err).splitlines()[0]}") from None
        try:
            state = json.loads(read_small_file(folder / STATE, MAX_STATE_BYTES, "a checkpoint's state", RunDirError))
            self._restore_state(state, marker)
        except (KeyError, TypeError, ValueError) as err:
            if isinstance(err, RunDirError):
                raise
            raise RunDirError(
                f"{folder / STATE}: not a checkpoint state of this run ({type(err).__name__}: {str(err)[:200]})"
            ) from None
        self._started = True

    def _restore_state(self, state: dict[str, Any], marker: CheckpointMarker) -> None:
        import torch

        model, env = self.model, self.env
        if marker.timesteps != marker.iteration * self.rollout:
            raise RunDirError(
                f"timesteps {marker.timesteps} at iteration {marker.iteration} is not a point of this "
                f"run ({self.rollout} env steps per iteration)"
            )
        model.num_timesteps = marker.timesteps
        model._n_updates = int(state["n_updates"])
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
        torch.set_rng_state(torch.tensor(state["torch_rng"], dtype=torch.uint8))
        np.random.set_state(tuple(state["numpy_rng"]))  # noqa: NPY002 (SB3's global RNG, restored)
        if self.selfplay is not None:
            self.selfplay.restore(list(marker.trainer.get("snapshots", [])), env, marker.timesteps)

    # -- the policy -----------------------------------------------------------------------
    def evaluation_agent(self, run_dir: Path) -> Agent:
        from tacocat.agents.trained import PPOAgent

        return PPOAgent(model=self.model)

    def export(self, run_dir: Path, best: bool = False) -> ExportedPolicy:
        name = "best_model.zip" if best else "final_model.zip"
        save_model(self.model, run_dir / name, self.config)
        return ExportedPolicy("ppo", name, {"torch_threads": 1})

    def close(self) -> None:
        self.env.close()


def make_trainer(config: SB3Experiment, run_dir: Path) -> SB3Trainer:
    return SB3Trainer(config, run_dir)
