"""Policies trained by the league backend as ladder agents: `make_agent("league:path=RUN/policy.npz")`,
and the shipped one, `make_agent("champion")`.

`tacocat train` with `backend: league` exports the actor MLP as a `tacocat-mlp-v1` policy file
(`agents.policy_file`: float32 `layer_i_weight` (out, in) and `layer_i_bias` arrays, JSON
`metadata`), with `"algorithm": "league PPO (JAX)"`. It is read by `agents.policy_file.load_policy`
(no pickle, sizes bounded before reading, metadata, shapes and finiteness checked), so no code from
the file runs; playing needs numpy only, not JAX. A file made for another ruleset or observation
size is refused with a clear error.
"""

from __future__ import annotations

from pathlib import Path

from agents.policy_file import PolicyFileError
from agents.rllib_agent import RllibPolicyAgent

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
        if self.meta["algorithm"] != ALGORITHM:
            raise PolicyFileError(f"{path} was not made by the league backend (algorithm "
                                  f"{self.meta['algorithm']!r})")

    def __repr__(self) -> str:
        return f"LeaguePolicyAgent(path={self.path!r})"


class ChampionAgent(LeaguePolicyAgent):
    """The shipped league policy (agents/models/league_champion.npz, default rules), greedy; docs/BENCHMARKS.md has its training run and results."""

    name = "champion"

    def __init__(self, deterministic: bool = True) -> None:
        super().__init__(str(CHAMPION), deterministic)

    def __repr__(self) -> str:
        return "ChampionAgent()"
