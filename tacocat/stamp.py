"""The stamp of every published number: commit, versions, ruleset hash (one function).

Run directories (`run.json`), benchmark tables, comparisons and study reports all carry
`stamp()`. Versions are read from the installed distributions' metadata, so stamping imports
nothing: a league run stamped here has not loaded torch, and a benchmark of the engine has not
loaded Ray.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tacocat.game.config import RulesConfig

#: the distributions a stamp lists when installed (pip names)
PACKAGES = (
    "tacocat-env",
    "numpy",
    "gymnasium",
    "pettingzoo",
    "torch",
    "stable-baselines3",
    "sb3-contrib",
    "jax",
    "jaxlib",
    "optax",
    "pgx",
    "ray",
    "open_spiel",
    "optuna",
)
#: the source tree whose commit a stamp names
SOURCE = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, check=True, cwd=SOURCE, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def installed_versions(packages: Iterable[str] = PACKAGES) -> dict[str, str]:
    """{distribution: version} of those of `packages` that are installed."""
    versions = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def stamp(rules: RulesConfig | None = None, packages: Iterable[str] = PACKAGES) -> dict[str, Any]:
    """Where a result comes from: `commit` (full hash, "unknown" outside a git checkout), `dirty`
    (uncommitted changes to tracked files), `python`, `versions` (installed `packages`) and, given
    the rules, their `ruleset_hash`."""
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    out: dict[str, Any] = {
        "commit": commit or "unknown",
        "dirty": bool(status) if commit else None,
        "python": platform.python_version(),
        "versions": installed_versions(packages),
    }
    if rules is not None:
        out["ruleset_hash"] = rules.ruleset_hash()
    return out


def describe(stamped: dict[str, Any]) -> str:
    """One line for a table's footer: commit (short, + '-dirty'), ruleset, key versions."""
    commit = stamped["commit"][:10] + ("-dirty" if stamped.get("dirty") else "")
    parts = [f"commit {commit}"]
    if "ruleset_hash" in stamped:
        parts.append(f"ruleset {stamped['ruleset_hash']}")
    parts.append(f"python {stamped['python']}")
    parts += [f"{name} {version}" for name, version in stamped["versions"].items() if name != "tacocat-env"]
    return ", ".join(parts)
