"""The `rllib` section of an experiment config and `RllibExperiment` (backend: rllib)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from tacocat.train.settings import MAX_N_ENVS, MAX_ROLLOUT_STEPS, MAX_WORKERS, ExperimentBase, _Strict


class RllibConfig(_Strict):
    """Ray RLlib backend (PPO on RLlib's current API stack): resources and batch sizes.

    The PPO hyperparameters come from `algo` (same names as the SB3 backend); `n_steps`,
    `n_envs` and `vec_env` do not apply. docs/SCALING.md explains what scales.
    """

    address: str | None = Field(
        default=None,
        description="Ray cluster to join (host:port or 'auto'); "
        "None starts a local Ray runtime. --address and RAY_ADDRESS override it",
    )
    num_cpus: int | None = Field(
        default=None, gt=0, le=MAX_N_ENVS, description="CPUs of the local Ray runtime (default: all)"
    )
    env_runners: int = Field(default=2, ge=0, le=MAX_WORKERS, description="env runner actors (0: sample in the driver)")
    envs_per_env_runner: int = Field(default=1, gt=0, le=MAX_N_ENVS)
    cpus_per_env_runner: float = Field(default=1.0, gt=0, le=MAX_WORKERS)
    learners: int = Field(default=0, ge=0, le=MAX_WORKERS, description="learner actors (0: learn in the driver)")
    gpus_per_learner: float = Field(default=0.0, ge=0, le=MAX_WORKERS)
    train_batch_size: int = Field(
        default=4000, gt=0, le=MAX_ROLLOUT_STEPS, description="env steps per training iteration"
    )
    torch_threads: int = Field(default=1, gt=0, le=MAX_WORKERS, description="torch threads of the driver")
    selfplay_fraction: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="share of episodes in which the learner plays both seats; the others are against `opponents`",
    )


class RllibExperiment(ExperimentBase):
    backend: Literal["rllib"] = Field(description="PPO on Ray RLlib")
    rllib: RllibConfig

    @model_validator(mode="after")
    def _fits(self) -> RllibExperiment:
        self._needs_an_opponent()
        if self.algo.batch_size > self.rllib.train_batch_size:
            raise ValueError(
                f"algo.batch_size ({self.algo.batch_size}) is the PPO minibatch and must not exceed "
                f"rllib.train_batch_size ({self.rllib.train_batch_size})"
            )
        return self
