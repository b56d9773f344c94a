"""The bottom rung: uniform over legal actions."""

from __future__ import annotations

from tacocat.agents.base import Agent, AgentInput


class RandomAgent(Agent):
    """Uniformly random legal action."""

    name = "random"

    def act(self, inp: AgentInput) -> int:
        legal = inp.legal_actions
        return legal[int(self.rng.integers(len(legal)))]
