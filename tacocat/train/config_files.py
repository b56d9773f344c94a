"""Reading experiment YAML files: size-bounded, alias-free safe YAML, `base_config` chains
and `--set key=value` overrides. Plain data out; `tacocat.train.config` validates it.

A file may build on another: `base_config: league.yaml` takes that experiment's values and
lays the file's own over them (`read_experiment`). Precedence: the base < the YAML file <
`--seed` < `--set key=value` overrides (dotted keys reach nested fields:
`--set algo.learning_rate=1e-3`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from tacocat.train.settings import CONFIGS_DIR, MAX_BASE_DEPTH, MAX_CONFIG_BYTES


class UnreadableInputError(ValueError):
    """A file or folder the user gave to read (a config, a rules file, a run directory) that
    does not exist, cannot be opened or is not of the kind needed (a folder for a file, or the
    reverse). The command line exits with status 2 for it, typer's status for a file argument
    that does not exist; other user errors exit with 1."""


def parse_override(item: str) -> tuple[list[str], Any]:
    """'algo.learning_rate=1e-3' -> (['algo', 'learning_rate'], 0.001); values are YAML."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"override {item!r} must look like key=value (e.g. algo.learning_rate=1e-3)")
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError as err:
        raise ValueError(f"override {item!r}: the value is not valid YAML ({' '.join(str(err).split())})") from None
    return key.strip().split("."), parsed


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


#: the key of an experiment YAML that names the experiment it builds on (see `read_experiment`)
BASE_KEY = "base_config"


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes` laid over it: sections (mappings) merge key by key, any other
    value (a number, a list of opponents, ...) replaces the base's."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def read_small_file(
    path: Path, limit: int, what: str, error: type[ValueError] = ValueError, unreadable: type[ValueError] | None = None
) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; else `error` naming the
    file, or `unreadable` (default `error`) when it cannot be opened or is not a regular file.
    The file is opened without blocking and checked before anything is read, so a FIFO, a
    device such as /dev/zero or a folder is refused at once."""
    unreadable = unreadable or error
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise unreadable(f"{path}: cannot read {what} ({err.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise unreadable(f"{path}: {what} must be a regular file")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    finally:
        os.close(fd)
    if max(info.st_size, len(data)) > limit:
        raise error(f"{path}: {what} is over the limit of {limit:,} bytes")
    return data


class _NoAliasLoader(yaml.SafeLoader):
    """A safe loader without anchors and aliases (`*a` repeated in `*b` ... grows exponentially
    when the config is copied or validated); an experiment config has no use for them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in an experiment config", mark
            )
        return super().compose_node(parent, index)


def yaml_problem(err: yaml.YAMLError) -> str:
    """Where and what a YAML error is, without the snippet of the file PyYAML quotes (the file
    may not be a config at all)."""
    mark, problem = getattr(err, "problem_mark", None), getattr(err, "problem", None)
    if mark is None or problem is None:
        return "cannot be parsed"
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def parse_config_file(
    path: Path,
    what: str = "the experiment config",
    error: type[ValueError] = ValueError,
    unreadable: type[ValueError] | None = None,
) -> dict[str, Any]:
    """A config YAML file (`read_small_file`, at most MAX_CONFIG_BYTES) as a mapping; `error`
    naming the file else (`unreadable`, default `error`, when it cannot be read). No message
    quotes the file."""
    data = read_small_file(path, MAX_CONFIG_BYTES, what, error, unreadable)
    try:
        parsed = yaml.load(data.decode("utf-8"), Loader=_NoAliasLoader)  # a safe loader (yaml.SafeLoader, no aliases)
    except UnicodeDecodeError:
        raise error(f"{path}: {what} is not UTF-8 text") from None
    except yaml.YAMLError as err:
        raise error(f"{path}: not valid YAML ({yaml_problem(err)})") from None
    except RecursionError:
        raise error(f"{path}: {what} nests too deeply") from None
    if not isinstance(parsed, dict):
        raise error(f"{path}: {what} must be a YAML mapping")
    return parsed


def _base_path(path: Path, base: Any) -> Path:
    """The file a `base_config` names: a .yaml/.yml file (relative to `path`'s folder) that,
    symlinks followed, lies in the shipped configs' folder or in `path`'s own folder."""
    if not isinstance(base, str) or not base.strip():
        raise ValueError(f"{path}: {BASE_KEY} must name an experiment YAML, got a {type(base).__name__}")
    base_path = path.parent / base
    if base_path.suffix not in (".yaml", ".yml"):
        raise ValueError(f"{path}: {BASE_KEY} must name a .yaml or .yml file")
    target, folders = base_path.resolve(), (CONFIGS_DIR, path.parent.resolve())
    if not any(target.is_relative_to(folder) for folder in folders):
        raise ValueError(
            f"{path}: {BASE_KEY} must lie in {CONFIGS_DIR} or in the folder of the config that names "
            f"it ({path.parent}); {base_path} is elsewhere (symlinks followed)"
        )
    return base_path


def read_experiment(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """An experiment YAML as plain data, unvalidated. A file with `base_config: other.yaml`
    (relative to the file; `_base_path` says where it may lie) states only what differs from
    that experiment: its values are laid over the base's (`merged`), bases of bases included
    (at most MAX_BASE_DEPTH); a cycle is an error."""
    path = Path(path)
    data = parse_config_file(path, unreadable=UnreadableInputError)
    base = data.pop(BASE_KEY, None)
    if base is None:
        return data
    base_path = _base_path(path, base)
    chain = (*_seen, path.resolve())
    if base_path.resolve() in chain:
        raise ValueError(
            f"{path}: {BASE_KEY} {base!r} makes a cycle ({' -> '.join(p.name for p in chain)} -> {base_path.name})"
        )
    if len(chain) >= MAX_BASE_DEPTH:
        raise ValueError(f"{path}: {BASE_KEY} chains more than {MAX_BASE_DEPTH} configs deep")
    return merged(read_experiment(base_path, chain), data)
