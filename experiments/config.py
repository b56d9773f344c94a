"""The typed experiment config of `tacocat train` (one YAML file per experiment).

Precedence: the YAML file < `--seed` < `--set key=value` overrides (dotted keys reach nested
fields: `--set algo.learning_rate=1e-3`). Unknown keys and wrong types are errors that name
the key. The resolved config is saved in every run directory, so a run reruns from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from tacocat_env.config import RulesConfig


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OpponentConfig(_Strict):
    agent: str = Field(description="agent spec for make_agent, e.g. 'counter' or 'search:simulations=32'")
    weight: float = Field(default=1.0, gt=0, description="relative sampling weight in the pool")


class AlgoConfig(_Strict):
    """MaskablePPO hyperparameters (sb3-contrib names)."""

    learning_rate: float = Field(default=3e-4, gt=0)
    n_steps: int = Field(default=512, gt=0, description="rollout length per env")
    batch_size: int = Field(default=256, gt=0)
    n_epochs: int = Field(default=10, gt=0)
    gamma: float = Field(default=0.99, gt=0, le=1)
    gae_lambda: float = Field(default=0.95, gt=0, le=1)
    clip_range: float = Field(default=0.2, gt=0)
    ent_coef: float = Field(default=0.01, ge=0)
    vf_coef: float = Field(default=0.5, ge=0)
    max_grad_norm: float = Field(default=0.5, gt=0)
    net_arch: list[int] = Field(default_factory=lambda: [128, 128], description="hidden layer sizes (pi and vf)")
    activation: Literal["tanh", "relu"] = "tanh"


class SelfPlayConfig(_Strict):
    snapshot_every: int = Field(gt=0, description="timesteps between snapshots of the learner")
    keep_latest: int = Field(default=5, gt=0, description="the pool keeps the latest K snapshots")
    weight: float = Field(default=1.0, gt=0, description="pool weight of each snapshot")


class FinalOpponent(_Strict):
    agent: str
    deal_pairs: int = Field(default=2000, gt=0, description="duplicate deal pairs against this agent")


class EvalConfig(_Strict):
    every: int = Field(default=50_000, gt=0, description="timesteps between evaluations during training")
    deal_pairs: int = Field(default=100, gt=0, description="duplicate deal pairs per opponent per evaluation")
    opponents: list[str] = Field(default_factory=lambda: ["random", "highcard", "planner", "counter"])
    seed: int = Field(default=12345, description="deal seed of every evaluation (same deals each time)")
    final: list[FinalOpponent] = Field(
        default_factory=lambda: [FinalOpponent(agent=a) for a in ("random", "highcard", "planner", "counter")]
        + [FinalOpponent(agent="search", deal_pairs=300)],
        description="the evaluation after training (main job), against the whole ladder")
    workers: int = Field(default=2, gt=0, description="worker processes of the final evaluation")


class ExperimentConfig(_Strict):
    name: str = Field(description="experiment name, used in the run directory")
    seed: int = 0
    total_timesteps: int = Field(gt=0)
    n_envs: int = Field(default=4, gt=0)
    vec_env: Literal["dummy", "subproc"] = "dummy"
    device: str = "cpu"
    torch_threads: int = Field(default=1, gt=0)
    learner_seat: Literal["alternate", "random"] = "alternate"
    rules: dict[str, Any] = Field(default_factory=dict, description="RulesConfig overrides")
    opponents: list[OpponentConfig] = Field(min_length=1)
    selfplay: SelfPlayConfig | None = None
    algo: AlgoConfig = Field(default_factory=AlgoConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    checkpoint_every: int = Field(default=50_000, gt=0)
    run_root: str = "runs"

    @field_validator("rules")
    @classmethod
    def _valid_rules(cls, rules: dict[str, Any]) -> dict[str, Any]:
        RulesConfig(**rules)  # raises a ValidationError naming the rules field
        return rules

    @property
    def rules_config(self) -> RulesConfig:
        return RulesConfig(**self.rules)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)


def parse_override(item: str) -> tuple[list[str], Any]:
    """'algo.learning_rate=1e-3' -> (['algo', 'learning_rate'], 0.001); values are YAML."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"override {item!r} must look like key=value (e.g. algo.learning_rate=1e-3)")
    return key.strip().split("."), yaml.safe_load(value)


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """A copy of `data` with dotted-key overrides applied (validation happens afterwards)."""
    out = yaml.safe_load(yaml.safe_dump(data))  # deep copy of plain data
    for item in overrides:
        path, value = parse_override(item)
        set_field(out, path, value, f"override {item!r}")
    return out


def set_field(data: dict[str, Any], path: list[str], value: Any, what: str) -> None:
    """Set the field at a dotted `path` of plain config data in place (sections are created);
    `what` names the setting in the error when a part of the path is not a section."""
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ValueError(f"{what}: {part!r} is not a section")
        node = child
    node[path[-1]] = value


def load_experiment(path: str | Path, seed: int | None = None, overrides: list[str] | None = None) -> ExperimentConfig:
    """Read a YAML experiment, then apply `seed` and `--set` overrides, then validate."""
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an experiment config must be a YAML mapping")
    if seed is not None:
        data["seed"] = seed
    return ExperimentConfig(**apply_overrides(data, overrides or []))
