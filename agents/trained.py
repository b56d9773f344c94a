"""Trained policies as agents: MaskablePPO models saved by `tacocat train`.

A model file is SB3's zip with one extra member, `tacocat.json`: the ruleset hash, the rules
config, the observation size and the action count it was trained for. Loading checks them, so
a model trained under other rules or another observation layout is refused with a clear error.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent, AgentInput
from agents.registry import register

META_NAME = "tacocat.json"


class ModelFileError(ValueError):
    """A model file that cannot be used: missing, corrupt, or made for other rules."""


def write_metadata(path: str | Path, metadata: dict[str, Any]) -> None:
    """Add the Tacocat metadata member to a saved SB3 zip."""
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(META_NAME, json.dumps(metadata, sort_keys=True, indent=2))


def read_metadata(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"model file {path} does not exist")
    try:
        with zipfile.ZipFile(path) as archive:
            if META_NAME not in archive.namelist():
                raise ModelFileError(f"{path} has no {META_NAME}: not a model saved by `tacocat train`")
            return json.loads(archive.read(META_NAME))
    except zipfile.BadZipFile as err:
        raise ModelFileError(f"{path} is not a valid model file (corrupt zip: {err})") from err
    except json.JSONDecodeError as err:
        raise ModelFileError(f"{path}: corrupt {META_NAME} ({err})") from err


def load_model(path: str | Path, expected_hash: str | None = None, expected_obs: int | None = None) -> Any:
    """Load a MaskablePPO model after checking its metadata against the expected ruleset."""
    from sb3_contrib import MaskablePPO

    meta = read_metadata(path)
    if expected_hash is not None and meta.get("ruleset_hash") != expected_hash:
        raise ModelFileError(
            f"{path} was trained for ruleset {meta.get('ruleset_hash')}, but these rules hash to {expected_hash}"
        )
    if expected_obs is not None and meta.get("observation_size") != expected_obs:
        raise ModelFileError(
            f"{path} expects observations of size {meta.get('observation_size')}, the env gives {expected_obs}"
        )
    try:
        return MaskablePPO.load(path, device="cpu")
    except Exception as err:  # SB3 raises many kinds of errors for a damaged archive
        raise ModelFileError(f"{path} could not be loaded: {err}") from err


@register("ppo")
class PPOAgent(Agent):
    """A trained MaskablePPO policy (path=model.zip), greedy by default (deterministic=False samples)."""

    def __init__(self, path: str = "", deterministic: bool = True, model: Any = None, torch_threads: int = 0) -> None:
        super().__init__()
        if model is None and not path:
            raise ValueError("ppo agent needs path=<model.zip>")
        if torch_threads > 0:  # evaluation workers: one thread each avoids oversubscription
            import torch

            torch.set_num_threads(torch_threads)
        self.path = path
        self.deterministic = deterministic
        self.model = model if model is not None else load_model(path)
        self._meta = read_metadata(path) if path else None
        self._checked = False

    def act(self, inp: AgentInput) -> int:
        if not self._checked:
            self._check(inp)
        mask = inp.action_mask.astype(bool)
        if self.deterministic:
            action, _ = self.model.predict(inp.observation, action_masks=mask, deterministic=True)
            return int(action)
        # sample with the agent's own generator, so that games replay from their seeds
        import torch

        with torch.no_grad():
            obs, _ = self.model.policy.obs_to_tensor(inp.observation)
            dist = self.model.policy.get_distribution(obs, action_masks=mask)
            probs = dist.distribution.probs[0].cpu().numpy().astype(np.float64)
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))

    def _check(self, inp: AgentInput) -> None:
        if self._meta is not None and self._meta.get("ruleset_hash") != inp.view.rules.hash:
            raise ModelFileError(
                f"{self.path} was trained for ruleset {self._meta.get('ruleset_hash')}, "
                f"this game uses {inp.view.rules.hash}"
            )
        size = self.model.observation_space.shape[0]
        if size != inp.observation.shape[0]:
            raise ModelFileError(f"model expects observations of size {size}, got {inp.observation.shape[0]}")
        self._checked = True

    def __repr__(self) -> str:
        return f"PPOAgent(path={self.path!r})"
