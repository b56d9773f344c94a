"""The typed experiment config of `tacocat train` (one YAML file per experiment): a union of
one config type per backend, told apart by `backend`.

Every experiment has the fields of `ExperimentBase` (`tacocat.train.settings`); its
backend's own fields sit in that backend's section (`sb3:`, `rllib:`, `league:`). Unknown keys
and wrong types are errors that name the key. The resolved config is saved in every run directory, so
a run reruns from it. Reading YAML files is `tacocat.train.config_files`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, Union, cast

from pydantic import ValidationError

from tacocat.train.backends import BACKENDS, DEFAULT_BACKEND
from tacocat.train.config_files import apply_overrides, read_experiment

#: the config type of each backend (`tacocat.train.backends.BACKENDS`)
EXPERIMENT_TYPES = {name: backend.config for name, backend in BACKENDS.items()}
if TYPE_CHECKING:  # a type checker cannot read a union built at run time: the same union, spelled out
    from tacocat.train.league.config import LeagueExperiment
    from tacocat.train.rllib.config import RllibExperiment
    from tacocat.train.sb3.config import SB3Experiment

    ExperimentConfig: TypeAlias = SB3Experiment | RllibExperiment | LeagueExperiment
else:
    #: an experiment config of any backend: the union of the config types of `BACKENDS`
    ExperimentConfig = Union[tuple(EXPERIMENT_TYPES.values())]  # noqa: UP007 (built from a tuple)


def parse_experiment(data: Any) -> ExperimentConfig:
    """Validate plain config data as the config type its `backend` names (the union's
    discriminator; `sb3` if absent). Errors are pydantic ValidationErrors, whose locations are
    the config's own fields (`tacocat.game.errors.one_line` makes one line of them)."""
    if not isinstance(data, dict):
        raise ValidationError.from_exception_data("ExperimentConfig", [{"type": "dict_type", "loc": (), "input": data}])
    backend = data.get("backend", DEFAULT_BACKEND)
    kind = EXPERIMENT_TYPES.get(backend) if isinstance(backend, str) else None
    if kind is None:
        *others, last = map(repr, EXPERIMENT_TYPES)
        expected = f"{', '.join(others)} or {last}"
        raise ValidationError.from_exception_data(
            "ExperimentConfig",
            [{"type": "literal_error", "loc": ("backend",), "input": backend, "ctx": {"expected": expected}}],
        )
    return cast("ExperimentConfig", kind.model_validate({**data, "backend": backend}))


def load_experiment(path: str | Path, seed: int | None = None, overrides: list[str] | None = None) -> ExperimentConfig:
    """Read a YAML experiment (`read_experiment`: with its base's values, if it names one),
    then apply `seed` and `--set` overrides, then validate."""
    data = read_experiment(path)
    if seed is not None:
        data["seed"] = seed
    return parse_experiment(apply_overrides(data, overrides or []))
