"""The `sb3` section of an experiment config and `SB3Experiment` (backend: sb3, the default)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from tacocat.train.settings import MAX_ROLLOUT_STEPS, MAX_SNAPSHOTS, MAX_WORKERS, ExperimentBase, _Strict


class SelfPlayConfig(_Strict):
    snapshot_every: int = Field(gt=0, description="timesteps between snapshots of the learner")
    keep_latest: int = Field(default=5, gt=0, le=MAX_SNAPSHOTS, description="the pool keeps the latest K snapshots")
    weight: float = Field(default=1.0, gt=0, description="pool weight of each snapshot")


class SB3Config(_Strict):
    """MaskablePPO in one process: how the env copies run, where the network lives, the
    learner's snapshots (self-play)."""

    vec_env: Literal["dummy", "subproc"] = "dummy"
    device: str = "cpu"
    torch_threads: int = Field(default=1, gt=0, le=MAX_WORKERS)
    selfplay: SelfPlayConfig | None = None


class SB3Experiment(ExperimentBase):
    backend: Literal["sb3"] = Field(default="sb3", description="MaskablePPO (sb3-contrib) in one process")
    sb3: SB3Config = Field(default_factory=SB3Config)

    @model_validator(mode="after")
    def _fits(self) -> SB3Experiment:
        self._needs_an_opponent()
        rollout = self.n_envs * self.algo.n_steps
        if rollout > MAX_ROLLOUT_STEPS:
            raise ValueError(
                f"n_envs x algo.n_steps = {rollout:,} env steps per rollout is over the limit of {MAX_ROLLOUT_STEPS:,}"
            )
        if rollout % self.algo.batch_size == 1:
            raise ValueError(
                f"algo.batch_size: a rollout of n_steps x n_envs = {rollout} steps leaves a last minibatch "
                f"of one step with batch_size {self.algo.batch_size} (its normalised advantage is NaN)"
            )
        return self
