"""The agent interface: an agent maps what its player may see to a legal action id.

An agent sees an `AgentInput`: the egocentric observation vector, the action mask and the
structured `PlayerView` (own cards, public information, public history; R7). It never sees the
opponent's hidden cards. All its randomness comes from the `numpy.random.Generator` handed to
`reset` at the start of every game, so a game is reproducible from its seeds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import cached_property
from typing import ClassVar

import numpy as np

from tacocat_env.engine import GameState
from tacocat_env.observation import encode, legal_mask
from tacocat_env.view import PlayerView, player_view


class AgentInput:
    """What the acting player may see. The observation vector is encoded on first use."""

    def __init__(self, view: PlayerView, encoder: Callable[[], np.ndarray]) -> None:
        self.view = view
        self._encoder = encoder

    @classmethod
    def from_state(cls, state: GameState, player: int) -> AgentInput:
        """The input of `player` in `state`: only its own cards and public information."""
        return cls(player_view(state, player), lambda: encode(state, player))

    @cached_property
    def observation(self) -> np.ndarray:
        return self._encoder()

    @cached_property
    def action_mask(self) -> np.ndarray:
        return legal_mask(list(self.view.legal_actions), self.view.rules.codec.size)

    @property
    def legal_actions(self) -> tuple[int, ...]:
        return self.view.legal_actions


class Agent(ABC):
    """Base class of every agent. Subclasses implement `act`; parameters are keyword args."""

    #: registry name, set by `agents.registry.register`
    name: ClassVar[str] = ""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)
        self.player = 0

    def reset(self, player: int, rng: np.random.Generator) -> None:
        """Start a new game as `player`, drawing all randomness from `rng`."""
        self.player = player
        self.rng = rng

    @abstractmethod
    def act(self, inp: AgentInput) -> int:
        """A legal action id for the acting player."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
