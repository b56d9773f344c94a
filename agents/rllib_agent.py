"""Policies trained with Ray RLlib as ladder agents: `make_agent("rllib:path=RUN/policy.npz")`.

`tacocat train` with `backend: rllib` exports the learner's actor network as a
`tacocat-mlp-v1` policy file (`agents.policy_file`: float32 layer arrays and JSON metadata).
Loading goes through `agents.policy_file.load_policy`, which never unpickles and checks sizes,
metadata, shapes and finiteness, so no code from the file ever runs; playing needs neither Ray
nor torch: the forward pass is numpy.
"""

from __future__ import annotations

import numpy as np

from agents.base import Agent, AgentInput
from agents.policy_file import PolicyFileError, load_policy, policy_logits


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

    def check_ruleset(self, ruleset_hash: str) -> None:
        """Refuse rules other than the ones the policy file was trained for."""
        if self.meta["ruleset_hash"] != ruleset_hash:
            raise PolicyFileError(f"{self.path} was trained for ruleset {self.meta['ruleset_hash']}, "
                                  f"this game uses {ruleset_hash}")

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """The actor's raw logits (before the mask), float64."""
        return policy_logits(self.layers, self.meta["activation"], observation)

    def act(self, inp: AgentInput) -> int:
        if not self._checked:
            self.check_ruleset(inp.view.rules.hash)
            size = inp.observation.shape[0]
            if self.meta["observation_size"] != size:
                raise PolicyFileError(f"{self.path} takes observations of size {self.meta['observation_size']}, "
                                      f"this game gives {size}")
            self._checked = True
        logits = self.logits(inp.observation)
        legal = inp.action_mask.astype(bool)
        if self.deterministic:
            return int(np.flatnonzero(legal)[np.argmax(logits[legal])])
        z = np.where(legal, logits - logits[legal].max(), -np.inf)
        probs = np.exp(z)
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))

    def __repr__(self) -> str:
        return f"RllibPolicyAgent(path={self.path!r})"
