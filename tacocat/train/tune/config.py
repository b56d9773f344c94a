"""The typed config of `tacocat tune` (one YAML file per study; no Optuna needed to read it).

A tune file names a base experiment (a `tacocat train` YAML), the overrides that set every
trial's budget, the objective, the sampler and pruner, the storage, and the search space.
Search-space keys are dotted fields of the experiment config (`algo.learning_rate`); each
range's ends and each categorical choice are checked against the experiment config's own
types and bounds when the file is loaded, so a bad search space fails before any training,
with an error that names the field. The fields `tacocat tune` sets in every trial
(`PER_TRIAL_FIELDS`) can be neither searched nor set by the trial overrides.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tacocat.game.errors import one_line
from tacocat.train.config import ExperimentConfig, parse_experiment
from tacocat.train.config_files import parse_config_file, read_experiment, set_field
from tacocat.train.settings import NAME_PATTERN

if TYPE_CHECKING:
    from tacocat.evaluation.variance import Reduction

#: experiment fields that `tacocat tune` sets in every trial (tacocat.train.tune.study's
#: `Objective.trial_config`): the trial's name, its run directory under the study's trials/
#: folder and its final evaluation (the objective's matches); a value for them in the search
#: space or the trial overrides would be overwritten, so it is refused
PER_TRIAL_FIELDS = ("name", "run_root", "eval.final", "eval.workers")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class FloatParam(_Strict):
    type: Literal["float"]
    low: float
    high: float
    log: bool = Field(default=False, description="sample uniformly in log space")
    step: float | None = Field(default=None, gt=0, description="discretisation step (not with log)")

    @model_validator(mode="after")
    def _check(self) -> FloatParam:
        _check_range(self.low, self.high, self.log)
        if self.log and self.step is not None:
            raise ValueError("log and step cannot be combined")
        return self


class IntParam(_Strict):
    type: Literal["int"]
    low: int
    high: int
    log: bool = False
    step: int = Field(default=1, gt=0)

    @model_validator(mode="after")
    def _check(self) -> IntParam:
        _check_range(self.low, self.high, self.log)
        if self.log and self.step != 1:
            raise ValueError("log and step cannot be combined")
        return self


class CategoricalParam(_Strict):
    type: Literal["categorical"]
    choices: list[Any] = Field(min_length=1, description="values of the field (lists allowed, e.g. net_arch)")

    @property
    def encoded(self) -> list[Any]:
        """Optuna's choices must be scalars: a list choice is stored as its JSON text."""
        return [
            yaml.safe_dump(c, default_flow_style=True).strip() if isinstance(c, (list, dict)) else c
            for c in self.choices
        ]

    def decode(self, value: Any) -> Any:
        return self.choices[self.encoded.index(value)]


def _check_range(low: float, high: float, log: bool) -> None:
    if not low < high:
        raise ValueError(f"low ({low}) must be below high ({high})")
    if log and low <= 0:
        raise ValueError(f"a log-scale range needs low > 0, got {low}")


Param = Annotated[FloatParam | IntParam | CategoricalParam, Field(discriminator="type")]


Measure = Literal["win_rate", "return", "reduced_return"]
#: each objective measure: the key of its figure in a final-evaluation row
#: (`tacocat.train.evaluation.evaluate_run`) and its name in the study's report
MEASURES: dict[Measure, tuple[str, str]] = {
    "win_rate": ("win_rate", "mean duplicate win rate"),
    "return": ("mean_return", "mean duplicate return per game"),
    "reduced_return": ("reduced_return", "mean variance-reduced (AIVAT) duplicate return per game"),
}


class ObjectiveConfig(_Strict):
    deal_pairs: int = Field(default=200, gt=0, description="duplicate deal pairs per opponent after training")
    workers: int = Field(default=1, gt=0, description="worker processes of that evaluation")
    measure: Measure = Field(
        default="win_rate",
        description="what is averaged over eval.opponents: the win rate, the mean return per game, or the "
        "variance-reduced (AIVAT) return per game",
    )
    value_file: str | None = Field(
        default=None,
        min_length=1,
        description="value file of reduced_return, relative to the tune file (default: the shipped one for the rules)",
    )
    rollouts: int = Field(
        default=0, ge=0, description="reduced_return: rollouts of the round past the replace phase (AIVAT.rollouts)"
    )
    playouts: int = Field(default=1, ge=1, description="reduced_return: playouts per rollout value (AIVAT.playouts)")
    stand_ins: dict[str, str] = Field(
        default_factory=dict,
        description="reduced_return: opponent spec -> the agent that plays its part in the rollouts (AIVAT.stand_ins)",
    )

    replay: bool = Field(
        default=False,
        description="reduced_return: an opponent that samples with unknown probabilities plays its rollouts from "
        "its own generator (AIVAT.replay)",
    )

    @model_validator(mode="after")
    def _check(self) -> ObjectiveConfig:
        if self.measure != "reduced_return":
            keys = ("value_file", "rollouts", "playouts", "stand_ins", "replay")
            given = [key for key in keys if key in self.model_fields_set]
            if given:
                raise ValueError(f"{given[0]} is read by measure reduced_return only, the measure is {self.measure}")
        return self

    @property
    def row_key(self) -> str:
        """The key of the measure's figure in a final-evaluation row."""
        return MEASURES[self.measure][0]

    @property
    def label(self) -> str:
        """The measure in words (the summary, the history plot, best_config.yaml)."""
        return MEASURES[self.measure][1]


class SamplerConfig(_Strict):
    kind: Literal["tpe"] = "tpe"
    seed: int = Field(default=0, description="sampler seed (worker k uses seed + k)")
    n_startup_trials: int = Field(default=5, ge=0, description="random trials before TPE takes over")
    multivariate: bool = False


class MedianPrunerConfig(_Strict):
    kind: Literal["median"]
    n_startup_trials: int = Field(default=3, ge=0, description="trials that finish before any pruning")
    n_warmup_steps: int = Field(default=0, ge=0, description="timesteps before a trial can be pruned")


class HyperbandPrunerConfig(_Strict):
    kind: Literal["hyperband"]
    min_resource: int = Field(default=1, gt=0, description="timesteps every trial gets")
    reduction_factor: int = Field(default=3, ge=2)


class NoPrunerConfig(_Strict):
    kind: Literal["none"]


PrunerConfig = Annotated[MedianPrunerConfig | HyperbandPrunerConfig | NoPrunerConfig, Field(discriminator="kind")]


class HeartbeatConfig(_Strict):
    """Trials of a killed worker: after `grace_period` s without a heartbeat they are marked
    FAIL (by the next worker that starts a trial) and re-queued up to `max_retry` times."""

    interval: int = Field(default=60, gt=0, description="seconds between heartbeats of a running trial")
    grace_period: int = Field(default=180, gt=0, description="seconds of silence before a trial counts as dead")
    max_retry: int = Field(default=1, ge=0, description="times a dead trial's parameters are tried again")

    @model_validator(mode="after")
    def _check(self) -> HeartbeatConfig:
        if self.grace_period <= self.interval:
            raise ValueError("grace_period must exceed interval")
        return self


class TuneConfig(_Strict):
    study: str = Field(
        pattern=NAME_PATTERN,
        description="study name: its key in the storage and, by default, "
        "its folder runs/tune/<study> (letters, digits, _ - ., as experiment names)",
    )
    base_config: str = Field(description="the experiment YAML tuned (relative to the tune file)")
    trial: dict[str, Any] = Field(
        default_factory=dict, description="dotted overrides of every trial (its budget), e.g. total_timesteps"
    )
    objective: ObjectiveConfig = Field(default_factory=ObjectiveConfig)
    sampler: SamplerConfig = Field(default_factory=SamplerConfig)
    pruner: PrunerConfig = Field(default_factory=lambda: MedianPrunerConfig(kind="median"))
    enqueue_base: bool = Field(default=True, description="the first trial tries the base experiment's own values")
    storage: str | None = Field(
        default=None, min_length=1, description="SQLAlchemy URL (default: SQLite file in study_dir)"
    )
    study_dir: str | None = Field(default=None, min_length=1, description="default runs/tune/<study>")
    heartbeat: HeartbeatConfig = Field(default_factory=HeartbeatConfig)
    search_space: dict[str, Param] = Field(min_length=1)

    @property
    def directory(self) -> Path:
        return Path(self.study_dir) if self.study_dir else Path("runs") / "tune" / self.study

    @property
    def storage_url(self) -> str:
        return self.storage or f"sqlite:///{(self.directory / 'study.db').resolve()}"


class TuneSetup:
    """A validated tune file: the tune config plus its base experiment as plain data."""

    def __init__(self, tune: TuneConfig, base: dict[str, Any], source: str) -> None:
        self.tune, self.base, self.source = tune, base, source

    def experiment(self, params: dict[str, Any], trial_budget: bool = True) -> ExperimentConfig:
        """The base experiment with `params` (search-space values) and, for a trial, the
        trial overrides. Raises ValueError naming the field on a value the config rejects."""
        data = copy.deepcopy(self.base)
        overrides = dict(self.tune.trial) if trial_budget else {}
        for where, values in (("trial", overrides), ("search_space", params)):
            for key, value in values.items():
                set_field(data, key.split("."), value, f"{where}.{key}")
        try:
            return parse_experiment(data)
        except ValueError as err:
            raise ValueError(one_line(err)) from None

    def base_values(self) -> dict[str, Any]:
        """The base experiment's values of the search-space fields, as Optuna parameters (None
        where the base value lies outside the search space)."""
        data = parse_experiment(self.base).model_dump(mode="json")
        out: dict[str, Any] = {}
        for key, spec in self.tune.search_space.items():
            value: Any = data
            for part in key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(spec, CategoricalParam):
                out[key] = spec.encoded[spec.choices.index(value)] if value in spec.choices else None
            else:
                out[key] = value if value is not None and spec.low <= value <= spec.high else None
        return out

    def check(self) -> None:
        """Refuse the fields every trial sets (`PER_TRIAL_FIELDS`), then try every range end and
        every choice of the search space against the experiment config (defaults elsewhere), so
        that a bad field fails here with its name; then build the objective's reduction
        (`reduction`), whose value file must fit the trials' rules (not searched with
        reduced_return)."""
        for where, keys in (("trial", self.tune.trial), ("search_space", self.tune.search_space)):
            for key in keys:
                field = per_trial_field(key)
                if field is not None:
                    raise ValueError(
                        f"{self.source}: {where}.{key}: tacocat tune sets {field} in every trial "
                        f"(its own name, run directory and final evaluation), so it cannot be "
                        f"{'searched' if where == 'search_space' else 'overridden'}"
                    )
        try:
            self.experiment({})
        except ValueError as err:
            raise ValueError(f"{self.source}: the trial overrides give an invalid experiment: {err}") from None
        for key, spec in self.tune.search_space.items():
            values = spec.choices if isinstance(spec, CategoricalParam) else [spec.low, spec.high]
            for value in values:
                try:
                    self.experiment({key: value})
                except ValueError as err:
                    raise ValueError(
                        f"{self.source}: search_space.{key}: {value!r} is not a valid value "
                        f"of the experiment field ({err})"
                    ) from None
        searched_rules = [key for key in self.tune.search_space if key == "rules" or key.startswith("rules.")]
        if searched_rules and self.tune.objective.measure == "reduced_return":
            raise ValueError(
                f"{self.source}: search_space.{searched_rules[0]}: objective.measure reduced_return reads one "
                "value file, which fits one ruleset, so the rules cannot vary between trials"
            )
        self.reduction()

    def reduction(self) -> Reduction | None:
        """The variance reduction of the objective's reduced return, None for another measure:
        `objective.value_file` (relative to the tune file) or the shipped one for the trials'
        rules, with the objective's rollouts, playouts, stand-ins (each stand-in for one of
        `eval.opponents`) and replay. ValueError, one line, where there is no file, it does not fit the
        rules, or an option does not fit."""
        from tacocat.evaluation.variance import Reduction, ValueFileError, resolve_value_file

        objective = self.tune.objective
        if objective.measure != "reduced_return":
            return None
        experiment = self.experiment({})
        given = None if objective.value_file is None else Path(self.source).parent / objective.value_file
        try:
            value_file = resolve_value_file(given, experiment.rules_config)
        except ValueFileError as err:
            key = "objective.measure reduced_return" if given is None else "objective.value_file"
            raise ValueError(f"{self.source}: {key}: {err}") from None
        unused = sorted(set(objective.stand_ins) - set(experiment.eval.opponents))
        if unused:
            raise ValueError(
                f"{self.source}: objective.stand_ins: {unused[0]} is not one of eval.opponents "
                f"({', '.join(experiment.eval.opponents)})"
            )
        try:
            reduction = Reduction(
                str(value_file),
                rollouts=objective.rollouts,
                playouts=objective.playouts,
                stand_ins=tuple(objective.stand_ins.items()),
                replay=objective.replay,
            )
            reduction.estimator(experiment.rules_config)  # every stand-in spec builds
        except ValueError as err:
            raise ValueError(f"{self.source}: objective: {err}") from None
        return reduction


def per_trial_field(key: str) -> str | None:
    """The field of `PER_TRIAL_FIELDS` that a dotted key names, lies inside (`eval.final.x`) or
    holds (`eval`: a section that would replace eval.final), or None."""
    for field in PER_TRIAL_FIELDS:
        if key == field or field.startswith(key + ".") or key.startswith(field + "."):
            return field
    return None


def load_tune(path: str | Path, study: str | None = None, storage: str | None = None) -> TuneSetup:
    """Read and check a tune YAML (a bounded read, as for experiment configs); `study` and
    `storage` override the file's."""
    path = Path(path)
    data = parse_config_file(path, "the tune config")
    if study is not None:
        data["study"] = study
    if storage is not None:
        data["storage"] = storage
    try:
        tune = TuneConfig(**data)
    except ValidationError as err:
        raise ValueError(f"{path}: {one_line(err)}") from None
    base = read_experiment(path.parent / tune.base_config)
    setup = TuneSetup(tune, base, str(path))
    setup.check()
    return setup
