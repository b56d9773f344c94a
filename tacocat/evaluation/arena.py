"""Play games between agents over the engine, with explicit seeds for the deal and the agents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tacocat.agents.base import Agent, AgentInput
from tacocat.game.config import RulesConfig, make_config
from tacocat.game.engine import apply_action, new_game, shaped_returns
from tacocat.game.events import Event
from tacocat.game.state import GameState


@dataclass
class GameRecord:
    """The outcome of one game, enough to replay it (`seed` + `actions`)."""

    seed: int
    ruleset_hash: str
    winner: int | None
    truncated: bool
    rounds: int
    #: each player's return, round rewards included (`engine.shaped_returns`)
    returns: tuple[float, float]
    actions: list[tuple[int, int]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    @classmethod
    def of(cls, state: GameState, seed: int, keep_events: bool = True) -> GameRecord:
        """The record of the game `state` (dealt from `seed`) as it stands: copies of its
        actions and, with `keep_events`, its public events."""
        player_0, player_1 = shaped_returns(state)
        return cls(
            seed=seed,
            ruleset_hash=state.rules.hash,
            winner=state.winner,
            truncated=state.truncated,
            rounds=state.rounds_played,
            returns=(player_0, player_1),
            actions=list(state.actions),
            events=list(state.events) if keep_events else [],
        )

    @property
    def length(self) -> int:
        return len(self.actions)


def agent_rngs(seed: int, game_index: int) -> tuple[np.random.Generator, np.random.Generator]:
    """Per-game generators for the two agents, independent of the deal's generator."""
    seq = np.random.SeedSequence([seed, game_index, 1])
    a, b = seq.spawn(2)
    return np.random.default_rng(a), np.random.default_rng(b)


def play_game(
    agents: Sequence[Agent],
    seed: int,
    config: RulesConfig | None = None,
    agent_generators: Sequence[np.random.Generator] | None = None,
    keep_events: bool = True,
) -> GameRecord:
    """Play one game: `agents[p]` plays player_p; the deal is shuffled from `seed` only."""
    cfg = config if config is not None else make_config()
    state = new_game(cfg, seed)
    generators = agent_generators or agent_rngs(seed, 0)
    for player, agent in enumerate(agents):
        agent.reset(player, generators[player])
    while not state.is_over:
        player = state.to_act
        action = agents[player].act(AgentInput.from_state(state, player))
        apply_action(state, action, player)
    return GameRecord.of(state, seed, keep_events)
