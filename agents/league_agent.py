"""Policies trained by the league backend as ladder agents: `make_agent("league:path=RUN/policy.npz")`,
and the shipped one, `make_agent("champion")`.

`tacocat train` with `backend: league` exports the actor MLP in the `tacocat-mlp-v1` format of
`agents.rllib_agent` (float32 `layer_i_weight` (out, in) and `layer_i_bias` arrays, JSON
`metadata`), with `"algorithm": "league PPO (JAX)"`. Loading reads arrays only
(`np.load(allow_pickle=False)`), so no code from the file runs; playing needs numpy only, not
JAX. A file made for another ruleset or observation size is refused with a clear error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.base import AgentInput
from agents.rllib_agent import PolicyFileError, RllibPolicyAgent, policy_logits

ALGORITHM = "league PPO (JAX)"
#: the shipped league policy (docs/BENCHMARKS.md: the run that made it and its results)
CHAMPION = Path(__file__).with_name("models") / "league_champion.npz"


class LeaguePolicyAgent(RllibPolicyAgent):
    """A policy trained by league self-play on the batch engine (path=policy.npz), greedy by default (deterministic=False samples)."""

    name = "league"

    def __init__(self, path: str = "", deterministic: bool = True) -> None:
        if not path:
            raise ValueError("league agent needs path=<policy.npz>")
        super().__init__(path, deterministic)
        if self.meta.get("algorithm") != ALGORITHM:
            raise PolicyFileError(f"{path} was not made by the league backend (algorithm "
                                  f"{self.meta.get('algorithm')!r})")
        self._sized = False

    def check_ruleset(self, ruleset_hash: str) -> None:
        if self.meta["ruleset_hash"] != ruleset_hash:
            raise PolicyFileError(f"{self.path} was trained for ruleset {self.meta['ruleset_hash']}, "
                                  f"this game uses {ruleset_hash}")

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """The actor's raw logits (before the mask), float64."""
        return policy_logits(self.layers, self.meta["activation"], observation)

    def act(self, inp: AgentInput) -> int:
        if not self._sized:
            self.check_ruleset(inp.view.rules.hash)
            size = inp.observation.shape[0]
            if self.meta["observation_size"] != size:
                raise PolicyFileError(f"{self.path} takes observations of size {self.meta['observation_size']}, "
                                      f"this game gives {size}")
            self._sized = True
        return super().act(inp)

    def __repr__(self) -> str:
        return f"LeaguePolicyAgent(path={self.path!r})"


class ChampionAgent(LeaguePolicyAgent):
    """The shipped league policy (agents/models/league_champion.npz, default rules), greedy; docs/BENCHMARKS.md has its training run and results."""

    name = "champion"

    def __init__(self, deterministic: bool = True) -> None:
        super().__init__(str(CHAMPION), deterministic)

    def __repr__(self) -> str:
        return "ChampionAgent()"
