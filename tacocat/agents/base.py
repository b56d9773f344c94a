"""The agent interface: an agent maps what its player may see to a legal action id.

An agent sees an `AgentInput`: the egocentric observation vector, the action mask and the
structured `PlayerView` (own cards, public information, public history; R7). It never sees the
opponent's hidden cards. All its randomness comes from the `numpy.random.Generator` handed to
`reset` at the start of every game, so a game is reproducible from its seeds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from tacocat.game.observation import encode_view, legal_mask
from tacocat.game.state import GameState
from tacocat.game.view import PlayerView, player_view


class AgentInput:
    """What the acting player may see: its `PlayerView` and its observation vector.

    Both come from the player's own cards and public information only, and neither keeps a
    reference to the `GameState` (R7.3): the observation is encoded, on first use, from the
    view itself (`encode_view`), so no attribute path from an agent's input reaches the
    opponent's cards, the draw pile or the game's generator (tests/test_agent_isolation.py).
    """

    __slots__ = ("_mask", "_observation", "view")

    def __init__(self, view: PlayerView, observation: np.ndarray | None = None) -> None:
        self.view = view
        self._observation = observation
        self._mask: np.ndarray | None = None

    @classmethod
    def from_state(cls, state: GameState, player: int) -> AgentInput:
        """The input of `player` in `state`: only its own cards and public information."""
        return cls(player_view(state, player))

    @property
    def observation(self) -> np.ndarray:
        if self._observation is None:
            self._observation = encode_view(self.view)
        return self._observation

    @property
    def action_mask(self) -> np.ndarray:
        if self._mask is None:
            self._mask = legal_mask(self.view.legal_actions, self.view.rules.codec.size)
        return self._mask

    @property
    def legal_actions(self) -> tuple[int, ...]:
        return self.view.legal_actions


class Agent(ABC):
    """Base class of every agent. Subclasses implement `act`; parameters are keyword args."""

    #: registry name, set by `tacocat.agents.registry.register`
    name: ClassVar[str] = ""
    #: constructor parameters that code may pass but an agent spec may not (e.g. a live model)
    internal_params: ClassVar[frozenset[str]] = frozenset()
    #: the spec `tacocat.agents.registry.make_agent` built it from (parameters included); None
    #: for an agent constructed directly
    spec: str | None = None

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
