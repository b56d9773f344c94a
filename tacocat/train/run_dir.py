"""A run directory: where it is made, what it records, and when it may be resumed.

Every backend writes the same layout (docs/experiments.md): `config.yaml` (the resolved
config), `run.json` (`run_metadata`: command, seed, backend, the config, the stamp),
`progress.csv`, `eval.csv`, `tb/`, `checkpoints/` (`tacocat.train.checkpoints`), the
exported policy and `final.json` (`tacocat.train.loop`).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tacocat.game.errors import one_line
from tacocat.stamp import stamp
from tacocat.train.config import ExperimentConfig, parse_experiment
from tacocat.train.config_files import UnreadableInputError, parse_config_file, read_small_file


# ---------------------------------------------------------------------------------------
# run directory and metadata
# ---------------------------------------------------------------------------------------
class RunDirError(ValueError):
    """A run directory that cannot be created, resumed or read."""


class NotARunDirError(RunDirError, UnreadableInputError):
    """A path given as a run directory that does not exist or is not one (the command line's
    exit status 2, `UnreadableInputError`)."""


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
        raise NotARunDirError(f"run directory {run_dir} does not exist")
    if not run_dir.is_dir():
        raise NotARunDirError(f"{run_dir} is a file, not a run directory")
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise NotARunDirError(f"{run_dir} is not a run directory (no config.yaml)")
    data = parse_config_file(path, "the run's config", RunDirError, NotARunDirError)
    try:
        return parse_experiment(data)
    except ValueError as err:
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


def write_whole(path: Path, text: str) -> None:
    """Write `path` whole or not at all: a temporary file beside it, renamed into place."""
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    part.replace(path)


def start_run(run_dir: Path, config: ExperimentConfig, extras: dict[str, Any]) -> None:
    """Write a run's config.yaml, then its run.json (`run_metadata` plus the backend's `extras`),
    each whole: a run killed between the two holds config.yaml alone, which `never_started`
    recognises and a resume starts over."""
    write_whole(run_dir / "config.yaml", config.to_yaml())
    write_whole(run_dir / "run.json", json.dumps({**run_metadata(config), **extras}, indent=2))


def never_started(run_dir: Path) -> bool:
    """Whether a run directory is one `start_run` was stopped in before run.json: config.yaml,
    no run.json, and nothing else but run.json's temporary file."""
    names = {p.name for p in run_dir.iterdir()}
    return "config.yaml" in names and names <= {"config.yaml", "run.json.part"}


def resume_config(run_dir: Path) -> ExperimentConfig:
    """The config of a run to resume (`load_run_config`), refused unless the run is unfinished
    and config.yaml is still the config the run started with: run.json's record of it, its
    ruleset hash and its backend (an edited config.yaml would relabel or mix the run's files).
    A run that `never_started` has no record to check: its config.yaml is taken as it is."""
    config = load_run_config(run_dir)
    if (run_dir / "final.json").exists():
        raise RunDirError(
            f"{run_dir} is a finished run (final.json exists, {config.total_timesteps} timesteps); "
            "nothing to resume. Start a new run to train longer."
        )
    if never_started(run_dir):
        return config
    path = run_dir / "run.json"
    data = read_small_file(path, MAX_RUN_JSON_BYTES, "the run's record", RunDirError)
    try:
        meta = json.loads(data)
    except (ValueError, RecursionError):
        raise RunDirError(f"{path}: not valid JSON") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise RunDirError(
            f"{path} does not record the config the run started with (a JSON object with a `config` "
            "mapping): the run cannot be checked for resuming; start a new run"
        )
    changed = _differences(meta["config"], config_record(config))
    if changed:
        raise RunDirError(
            f"{run_dir / 'config.yaml'} differs from the config the run started with (run.json) in "
            f"{', '.join(changed)}; a resumed run continues with its own config: restore it, or start "
            "a new run to change it"
        )
    ruleset, backend = config.rules_config.ruleset_hash(), config.backend
    if meta.get("ruleset_hash") != ruleset:
        raise RunDirError(
            f"{path}: its ruleset_hash is not the hash of the run's rules ({ruleset}): the files were "
            "edited or the rules changed meaning since; start a new run"
        )
    if meta.get("backend") != backend:
        raise RunDirError(f"{path}: its backend is not the run's config's ({backend!r})")
    return config


def run_metadata(config: ExperimentConfig) -> dict[str, Any]:
    """What reruns the run: the command line that started it, seed, backend, the resolved config
    and the stamp (commit, versions, ruleset hash: `tacocat.stamp`)."""
    stamped = stamp(config.rules_config)
    return {
        "command": shlex.join(sys.argv),
        "seed": config.seed,
        "backend": config.backend,
        "ruleset_hash": stamped.pop("ruleset_hash"),
        "config": config_record(config),  # what a resume checks config.yaml against (`resume_config`)
        "git_commit": stamped["commit"],
        "started": datetime.now(timezone.utc).isoformat(),
        **{k: v for k, v in stamped.items() if k != "commit"},
    }
