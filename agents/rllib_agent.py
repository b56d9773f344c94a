"""Policies trained with Ray RLlib as ladder agents: `make_agent("rllib:path=RUN/policy.npz")`.

`tacocat train` with `backend: rllib` exports the learner's actor network as a `.npz` of
float32 arrays (`layer_i_weight`, `layer_i_bias`) and a `metadata` member (JSON: activation,
ruleset hash, observation size, action count). Loading reads arrays only (`allow_pickle=False`),
so no code from the file ever runs, and needs neither Ray nor torch: the forward pass is numpy.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent, AgentInput

FORMAT = "tacocat-mlp-v1"
_ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}


class PolicyFileError(ValueError):
    """A policy file that cannot be used: missing, corrupt, or made for other rules."""


def load_policy(path: str | Path) -> tuple[list[tuple[np.ndarray, np.ndarray]], dict[str, Any]]:
    """The layers (weight, bias) and metadata of an exported policy, checked for consistency."""
    path = Path(path)
    if not path.is_file():
        raise PolicyFileError(f"policy file {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["metadata"]).decode())
            if meta.get("format") != FORMAT or meta.get("activation") not in _ACTIVATIONS:
                raise PolicyFileError(f"{path}: not a {FORMAT} policy (metadata {meta})")
            layers = [(data[f"layer_{i}_weight"].astype(np.float64), data[f"layer_{i}_bias"].astype(np.float64))
                      for i in range(int(meta["layers"]))]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
        if isinstance(err, PolicyFileError):
            raise
        raise PolicyFileError(f"{path} is not a valid policy file ({err})") from None
    inputs = meta["observation_size"]
    for i, (weight, bias) in enumerate(layers):
        if weight.ndim != 2 or weight.shape[1] != inputs or bias.shape != (weight.shape[0],):
            raise PolicyFileError(f"{path}: layer {i} has shape {weight.shape}, expected (*, {inputs})")
        inputs = weight.shape[0]
    if inputs != meta["n_actions"]:
        raise PolicyFileError(f"{path}: the last layer gives {inputs} logits for {meta['n_actions']} actions")
    return layers, meta


def save_policy(path: Path, layers: list[tuple[np.ndarray, np.ndarray]], *, activation: str, rules_config: Any,
                algorithm: str, experiment: str, seed: int, timesteps: int) -> Path:
    """Write an MLP actor in the format `load_policy` reads: float32 `layer_i_weight` (out, in)
    and `layer_i_bias` arrays plus JSON metadata, written to a temporary file then renamed."""
    from tacocat_env.observation import ObservationLayout
    from tacocat_env.ruleset import compile_rules

    arrays = {}
    for i, (weight, bias) in enumerate(layers):
        arrays[f"layer_{i}_weight"] = np.asarray(weight, np.float32)
        arrays[f"layer_{i}_bias"] = np.asarray(bias, np.float32)
    rules = compile_rules(rules_config)
    meta = {"format": FORMAT, "activation": activation, "layers": len(layers), "ruleset_hash": rules.hash,
            "observation_size": ObservationLayout(rules).size, "n_actions": rules.codec.size,
            "algorithm": algorithm, "experiment": experiment, "seed": seed, "timesteps": timesteps}
    arrays["metadata"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(path)
    return path


def policy_logits(layers: list[tuple[np.ndarray, np.ndarray]], activation: str, observation: np.ndarray) -> np.ndarray:
    """The actor MLP: activation after every layer but the last."""
    act = _ACTIVATIONS[activation]
    h = np.asarray(observation, dtype=np.float64)
    for i, (weight, bias) in enumerate(layers):
        h = weight @ h + bias
        if i < len(layers) - 1:
            h = act(h)
    return h


class RllibPolicyAgent(Agent):
    """A policy trained with Ray RLlib (path=policy.npz), greedy by default (deterministic=False samples)."""

    name = "rllib"

    def __init__(self, path: str = "", deterministic: bool = True) -> None:
        super().__init__()
        if not path:
            raise ValueError("rllib agent needs path=<policy.npz>")
        self.path = path
        self.deterministic = bool(deterministic)
        self.layers, self.meta = load_policy(path)
        self._checked = False

    def act(self, inp: AgentInput) -> int:
        if not self._checked:
            if self.meta["ruleset_hash"] != inp.view.rules.hash:
                raise PolicyFileError(f"{self.path} was trained for ruleset {self.meta['ruleset_hash']}, "
                                      f"this game uses {inp.view.rules.hash}")
            self._checked = True
        logits = policy_logits(self.layers, self.meta["activation"], inp.observation)
        legal = inp.action_mask.astype(bool)
        if self.deterministic:
            return int(np.flatnonzero(legal)[np.argmax(logits[legal])])
        z = np.where(legal, logits - logits[legal].max(), -np.inf)
        probs = np.exp(z)
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))

    def __repr__(self) -> str:
        return f"RllibPolicyAgent(path={self.path!r})"
