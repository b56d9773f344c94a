"""Agents that play `tacocat-mlp-v1` policy files: `make_agent("rllib:path=RUN/policy.npz")`,
`make_agent("league:path=RUN/policy.npz")` and the shipped league policy, `make_agent("champion")`.

`tacocat train` with `backend: rllib` or `backend: league` exports the learner's actor MLP as a
policy file (`tacocat.agents.policy_file`: float32 `layer_i_weight` (out, in) and `layer_i_bias` arrays,
JSON `metadata`) whose metadata names the algorithm that made it (`RLLIB_ALGORITHM`,
`LEAGUE_ALGORITHM`). Loading goes through `tacocat.agents.policy_file.load_policy_file`, which never unpickles
and checks sizes, metadata, shapes and finiteness, so no code from the file ever runs; playing
needs numpy only, not Ray, torch or JAX. `MLPPolicyAgent` is the one agent that plays such a file;
the three specs are thin entries on it. A file made for another ruleset or observation size is
refused with a clear error, and the `league` and `champion` specs refuse a file another backend
made.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np

from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.policy_file import PolicyFileError, load_policy_file, policy_logits

#: the `algorithm` of the policy files each training backend exports
LEAGUE_ALGORITHM = "league PPO (JAX)"
RLLIB_ALGORITHM = "RLlib PPO"
#: the shipped league policy (docs/BENCHMARKS.md: the run that made it and its results)
CHAMPION = Path(__file__).with_name("models") / "league_champion.npz"


class MLPPolicyAgent(Agent):
    """A `tacocat-mlp-v1` policy file (path=policy.npz), greedy by default (deterministic=False
    samples from the masked softmax). Subclasses name a spec; `backend` and `algorithm`, when
    set, restrict it to the files that backend exports."""

    #: the training backend whose files the spec takes, and the algorithm those files name
    backend: ClassVar[str | None] = None
    algorithm: ClassVar[str | None] = None

    def __init__(self, path: str = "", deterministic: bool = True) -> None:
        super().__init__()
        if not path:
            raise ValueError(f"{self.name or type(self).__name__} agent needs path=<policy.npz>")
        self.path = path
        self.deterministic = bool(deterministic)
        self.layers, self.meta = load_policy_file(path)
        if self.algorithm is not None and self.meta["algorithm"] != self.algorithm:
            raise PolicyFileError(
                f"{path} was not made by the {self.backend} backend (algorithm {self.meta['algorithm']!r})"
            )
        self._checked = False

    def check_ruleset(self, ruleset_hash: str) -> None:
        """Refuse rules other than the ones the policy file was trained for."""
        if self.meta["ruleset_hash"] != ruleset_hash:
            raise PolicyFileError(
                f"{self.path} was trained for ruleset {self.meta['ruleset_hash']}, this game uses {ruleset_hash}"
            )

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """The actor's raw logits (before the mask), float64."""
        return policy_logits(self.layers, self.meta["activation"], observation)

    def act(self, inp: AgentInput) -> int:
        if not self._checked:  # the rules and the observation size, once per agent
            self.check_ruleset(inp.view.rules.hash)
            size = inp.observation.shape[0]
            if self.meta["observation_size"] != size:
                raise PolicyFileError(
                    f"{self.path} takes observations of size {self.meta['observation_size']}, this game gives {size}"
                )
            self._checked = True
        logits = self.logits(inp.observation)
        legal = inp.action_mask.astype(bool)
        if self.deterministic:
            return int(np.flatnonzero(legal)[np.argmax(logits[legal])])
        z = np.where(legal, logits - logits[legal].max(), -np.inf)
        probs = np.exp(z)
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(path={self.path!r})"


class RllibPolicyAgent(MLPPolicyAgent):
    """A policy trained with Ray RLlib (path=policy.npz), greedy by default (deterministic=False samples)."""

    name = "rllib"


class LeaguePolicyAgent(MLPPolicyAgent):
    """A policy trained by league self-play on the batch engine (path=policy.npz), greedy by default
    (deterministic=False samples)."""

    name = "league"
    backend = "league"
    algorithm = LEAGUE_ALGORITHM


class ChampionAgent(LeaguePolicyAgent):
    """The shipped league policy (tacocat/agents/models/league_champion.npz, default rules), greedy;
    docs/BENCHMARKS.md has its training run and results."""

    name = "champion"

    def __init__(self, deterministic: bool = True) -> None:
        super().__init__(str(CHAMPION), deterministic)

    def __repr__(self) -> str:
        return "ChampionAgent()"
