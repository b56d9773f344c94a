"""A run directory: where it is made, what it records and how its model files are found.

Every training backend (SB3 in `experiments.train`, RLlib, tuning trials) writes the same
layout: `config.yaml` (the resolved config), `run.json` (`run_metadata`: command, seed,
versions, commit, ruleset hash), checkpoints under `checkpoints/`, models with their JSON
metadata (`save_model`). The callbacks and the training loop both use this module, so neither
imports the other.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from experiments.config import ExperimentConfig, one_line, parse_config_file, read_small_file

CHECKPOINTS = "checkpoints"


# ---------------------------------------------------------------------------------------
# run directory and metadata
# ---------------------------------------------------------------------------------------
class RunDirError(ValueError):
    """A run directory that cannot be created, resumed or read."""


def new_run_dir(config: ExperimentConfig) -> Path:
    """A fresh directory `<run_root>/<name>_s<seed>_<UTC stamp>`, always inside the run root
    (the config's name pattern already excludes separators; this checks the result too)."""
    root = Path(config.run_root)
    if root.exists() and not root.is_dir():
        raise RunDirError(f"run_root {root} is a file, not a folder")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_dir = root / f"{config.name}_s{config.seed}_{stamp}"
    suffix = 1
    while run_dir.exists():
        run_dir = root / f"{config.name}_s{config.seed}_{stamp}-{suffix}"
        suffix += 1
    if run_dir.resolve().parent != root.resolve():
        raise RunDirError(f"the run directory {run_dir} would not be directly inside run_root {root}")
    run_dir.mkdir(parents=True)
    return run_dir


#: run.json is read only up to this size
MAX_RUN_JSON_BYTES = 1 << 20


def load_run_config(run_dir: Path) -> ExperimentConfig:
    """The config saved in a run directory, for `--resume` and `--evaluate`; every error names
    the file."""
    if not run_dir.exists():
        raise RunDirError(f"run directory {run_dir} does not exist")
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir} is a file; --resume needs a run directory")
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise RunDirError(f"{run_dir} is not a run directory (no config.yaml)")
    data = parse_config_file(path, "the run's config", RunDirError)
    try:
        return ExperimentConfig(**data)
    except ValidationError as err:
        raise RunDirError(f"{path}: {one_line(err)}") from None


def config_record(config: ExperimentConfig) -> dict[str, Any]:
    """The config as run.json records it (plain JSON data)."""
    return json.loads(json.dumps(config.model_dump(mode="json")))


def config_hash(config: ExperimentConfig) -> str:
    """A fingerprint of the whole config (checkpoints carry it, so that a resume can tell)."""
    return hashlib.sha256(json.dumps(config_record(config), sort_keys=True).encode()).hexdigest()


def _differences(recorded: Any, current: Any, prefix: str = "") -> list[str]:
    """The dotted fields in which two config records differ."""
    if isinstance(recorded, dict) and isinstance(current, dict):
        out = []
        for key in sorted(set(recorded) | set(current), key=str):
            out += _differences(recorded.get(key), current.get(key), f"{prefix}{key}.")
        return out
    return [] if recorded == current else [prefix.rstrip(".")]


def resume_config(run_dir: Path) -> ExperimentConfig:
    """The config of a run to resume (`load_run_config`), refused unless the run is unfinished
    (sb3, league) and config.yaml is still the config the run started with: run.json's record of it, its
    ruleset hash and its backend (an edited config.yaml would relabel or mix the run's files)."""
    config = load_run_config(run_dir)
    # (the RLlib trainer continues a finished run from its last checkpoint: experiments.rllib_train)
    if config.backend != "rllib" and (run_dir / "final.json").exists():
        raise RunDirError(f"{run_dir} is a finished run (final.json exists, {config.total_timesteps} timesteps); "
                          "nothing to resume. Start a new run to train longer.")
    path = run_dir / "run.json"
    data = read_small_file(path, MAX_RUN_JSON_BYTES, "the run's record", RunDirError)
    try:
        meta = json.loads(data)
    except (ValueError, RecursionError):
        raise RunDirError(f"{path}: not valid JSON") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise RunDirError(f"{path} does not record the config the run started with (a JSON object with a `config` "
                          "mapping): the run cannot be checked for resuming; start a new run")
    changed = _differences(meta["config"], config_record(config))
    if changed:
        raise RunDirError(f"{run_dir / 'config.yaml'} differs from the config the run started with (run.json) in "
                          f"{', '.join(changed)}; a resumed run continues with its own config: restore it, or start "
                          "a new run to change it")
    ruleset, backend = config.rules_config.ruleset_hash(), config.backend
    if meta.get("ruleset_hash") != ruleset:
        raise RunDirError(f"{path}: its ruleset_hash is not the hash of the run's rules ({ruleset}): the files were "
                          "edited or the rules changed meaning since; start a new run")
    if meta.get("backend") != backend:
        raise RunDirError(f"{path}: its backend is not the run's config's ({backend!r})")
    return config


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
        "backend": config.backend,
        "ruleset_hash": config.rules_config.ruleset_hash(),
        "config": config_record(config),  # what a resume checks config.yaml against (`resume_config`)
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
        # the architecture lets `agents.trained.load_policy` rebuild the network without unpickling
        "policy": {"net_arch": list(config.algo.net_arch), "activation": config.algo.activation},
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
