"""`mix`: a behavioural mixture of agents, one of them drawn anew at every decision.

`mix:agents=counter+planner,weights=2+1` plays, at each of its decisions, `counter` with
probability 2/3 and `planner` with 1/3 (weights default to equal). Its policy at every
information state is the weighted average of its agents' policies there, so its exact table is
that average (`tacocat.analysis.agent_tables.agent_policy`) and its JAX form draws the agent,
then plays that agent's JAX form (`tacocat.agents.jax_forms`). It is a mixed target that a best
response does not start from (the exploitability validation, docs/EXPLOITABILITY.md).

It is not a mixture over whole games (one agent drawn per game, kept to the end): that one
needs the league's rollout to remember each row's draw across steps, which it does not.

An agent with parameters is quoted, as any spec value holding a comma:
`mix:agents="counter:samples=16,duel_from=3+planner"`. Agents are split at `+`.
"""

from __future__ import annotations

import numpy as np

from tacocat.agents.base import Agent, AgentInput

SEPARATOR = "+"


def split_agents(agents: str) -> list[str]:
    """The agent specs of a `mix`'s `agents` text (ValueError for an empty piece)."""
    specs = [piece.strip() for piece in agents.split(SEPARATOR)]
    if not agents.strip() or any(not spec for spec in specs):
        raise ValueError(f"agents={agents!r} must be agent specs joined by {SEPARATOR!r}, e.g. counter+planner")
    return specs


def split_weights(weights: str, n: int) -> np.ndarray:
    """The normalised weights of a `mix` of `n` agents (equal when empty; ValueError unless
    there are `n` finite non-negative numbers with a positive sum)."""
    if not weights.strip():
        return np.full(n, 1.0 / n)
    try:
        values = np.array([float(piece) for piece in weights.split(SEPARATOR)])
    except ValueError:
        raise ValueError(f"weights={weights!r} must be numbers joined by {SEPARATOR!r}, e.g. 2+1") from None
    if len(values) != n:
        raise ValueError(f"weights={weights!r} gives {len(values)} weights for {n} agents")
    if not np.isfinite(values).all() or (values < 0).any() or values.sum() <= 0:
        raise ValueError(f"weights={weights!r} must be finite, non-negative and not all zero")
    return values / values.sum()


class MixAgent(Agent):
    """Behavioural mixture: at every decision, one of `agents` (joined by +) drawn by
    `weights` (joined by +, default equal)."""

    name = "mix"

    def __init__(self, agents: str = "counter+planner", weights: str = "") -> None:
        from tacocat.agents.registry import make_agent  # the registry imports the agent modules lazily

        super().__init__()
        self.component_specs = split_agents(agents)
        if any(spec.split(":", 1)[0].strip() == self.name for spec in self.component_specs):
            raise ValueError("a mix cannot hold another mix")
        self.weights = split_weights(weights, len(self.component_specs))
        self.components = [make_agent(spec) for spec in self.component_specs]

    def reset(self, player: int, rng: np.random.Generator) -> None:
        super().reset(player, rng)
        for component in self.components:
            component.reset(player, rng)

    def check_ruleset(self, ruleset_hash: str) -> None:
        """Each agent's own check (a trained policy plays its own rules only)."""
        for component in self.components:
            check = getattr(component, "check_ruleset", None)
            if check is not None:
                check(ruleset_hash)

    def act(self, inp: AgentInput) -> int:
        index = int(self.rng.choice(len(self.components), p=self.weights))
        return self.components[index].act(inp)

    def __repr__(self) -> str:
        return f"MixAgent({self.component_specs}, weights={self.weights.round(4).tolist()})"
