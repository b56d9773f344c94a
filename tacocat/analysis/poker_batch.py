"""Kuhn and Leduc poker as the league trains on them: pgx's `kuhn_poker` and `leduc_holdem`
behind the batch engine's interface (`init`, `step`, `step_autoreset`, `observe`,
`observation_shape`, `num_actions`), with an observation that is an information state.

pgx's own observation of these games is not one (pgx issue 1302, checked exhaustively in
tests/test_league_poker.py): it holds the player's card, the public card and each player's
chips, so the first player at the start and the second player after a check see the same thing
(Kuhn: both "0 chips each"; Leduc: both "1 chip each"), and in Leduc's second round the
first round's bets collapse into one chip count. A policy of that observation plays one game
where OpenSpiel's `kuhn_poker` and `leduc_poker` (whose NashConv is the yardstick) have
another. So `PokerBatch.observe` is pgx's observation followed by the player's position (first
or second to act, one-hot) and the public betting sequence (one one-hot of pgx's action per
slot, zeros past its end): a function of the information state that tells every two apart
(`tacocat.analysis.poker` maps every OpenSpiel history onto it and tests both properties).

A `PokerState` carries pgx's state (`inner`), the betting sequence and who acted first, and
the step's `rewards`, `terminated` and `truncated`: `step_autoreset` replaces a game that ends
by a new one in the same step and keeps the final step's flags and rewards there, as pgx's
`experimental.auto_reset` and `tacocat.game.batch.TacocatBatch.step_autoreset` do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pgx


@dataclass(frozen=True)
class PokerGame:
    """One pgx poker game and the OpenSpiel game that gives its exact values."""

    name: str  # pgx's env id, the config's `league.game`
    openspiel: str  # OpenSpiel's name of the same game
    history_slots: int  # the longest betting sequence of a game
    pgx_action: tuple[int, ...]  # OpenSpiel's action id -> pgx's
    cards: int  # the cards pgx deals (the two hands, and Leduc's public card)


GAMES: dict[str, PokerGame] = {
    # OpenSpiel: 0 pass, 1 bet; pgx: 0 bet, 1 pass. A game is at most pass, bet, call.
    "kuhn_poker": PokerGame("kuhn_poker", "kuhn_poker", 3, (1, 0), 2),
    # OpenSpiel: 0 fold, 1 call, 2 raise; pgx: 0 call, 1 raise, 2 fold. Each round is at most
    # check, raise, raise, call (two raises a round).
    "leduc_holdem": PokerGame("leduc_holdem", "leduc_poker", 8, (2, 0, 1), 3),
}


def poker_game(name: str) -> PokerGame:
    """The poker game `name`; a one-line ValueError naming the known ones otherwise."""
    if name not in GAMES:
        raise ValueError(f"unknown poker game {name!r}: the league knows {', '.join(GAMES)}")
    return GAMES[name]


class PokerState(NamedTuple):
    observation: jax.Array  # the player to act's (`PokerBatch.observe`), float32
    legal_action_mask: jax.Array
    current_player: jax.Array
    rewards: jax.Array  # of the last step (of the game it ended, after an auto-reset)
    terminated: jax.Array
    truncated: jax.Array
    inner: Any  # pgx's state of the game being played
    history: jax.Array  # (history_slots,) pgx's actions so far, -1 past the end
    first: jax.Array  # the player who acted first


class PokerBatch:
    """pgx's `name` game behind the batch engine's interface, observed by information state."""

    def __init__(self, name: str) -> None:
        self.game = poker_game(name)
        self.env = pgx.make(name)
        self.num_actions = int(self.env.num_actions)
        pgx_size = int(np.prod(self.env.observation_shape))
        self.observation_shape = (pgx_size + 2 + self.game.history_slots * self.num_actions,)
        #: `replay` over rows, jitted once (checking a resumed run's environments); compiled fast: it runs once
        self.replay_rows = jax.jit(jax.vmap(self.replay), compiler_options={"xla_backend_optimization_level": 0})

    @property
    def id(self) -> str:
        return self.game.name

    def observe(self, state: PokerState, player_id: jax.Array) -> jax.Array:
        """Player `player_id`'s observation: pgx's, their position (first, second) and the
        betting sequence, as float32."""
        player_id = jnp.asarray(player_id, jnp.int32)
        own = self.env._observe(state.inner, player_id).astype(jnp.float32)  # pgx's, without its deprecation
        position = jax.nn.one_hot(jnp.where(player_id == state.first, 0, 1), 2, dtype=jnp.float32)
        bets = jax.nn.one_hot(state.history, self.num_actions, dtype=jnp.float32).reshape(-1)  # -1: zeros
        return jnp.concatenate([own, position, bets])

    def _wrap(self, inner: Any, history: jax.Array, first: jax.Array) -> PokerState:
        state = PokerState(
            observation=jnp.zeros(self.observation_shape, jnp.float32),
            legal_action_mask=inner.legal_action_mask,
            current_player=inner.current_player,
            rewards=inner.rewards,
            terminated=inner.terminated,
            truncated=inner.truncated,
            inner=inner,
            history=history,
            first=jnp.asarray(first, jnp.int32),
        )
        return state._replace(observation=self.observe(state, inner.current_player))

    def init(self, key: jax.Array) -> PokerState:
        inner = self.env.init(key)
        empty = jnp.full(self.game.history_slots, -1, jnp.int32)
        return self._wrap(inner, empty, inner.current_player)  # both games: the first to act starts

    def step(self, state: PokerState, action: jax.Array, key: jax.Array | None = None) -> PokerState:
        """pgx's step (its games draw nothing after the deal: `key` is unused), the action added
        to the betting sequence."""
        action = jnp.asarray(action, jnp.int32)
        played = (state.history >= 0).sum()
        inner = self.env.step(state.inner, action, key)
        history = state.history.at[jnp.minimum(played, self.game.history_slots - 1)].set(action)
        return self._wrap(inner, history, state.first)

    def step_autoreset(self, state: PokerState, action: jax.Array, key: jax.Array) -> PokerState:
        """`step`; a game that ends is replaced by a new one (dealt from `key`), which keeps the
        final step's rewards, `terminated` and `truncated`."""
        _, deal_key = jax.random.split(key)  # as pgx's auto_reset: the same games from the same keys
        stepped = self.step(state, action)
        done = stepped.terminated | stepped.truncated
        fresh = self.init(deal_key)._replace(
            rewards=stepped.rewards, terminated=stepped.terminated, truncated=stepped.truncated
        )
        return jax.tree.map(lambda a, b: jnp.where(done, a, b), fresh, stepped)

    def dealt(self, cards: jax.Array, first: jax.Array) -> PokerState:
        """The state before any bet of the deal `cards` (pgx's ranks: the two hands, then
        Leduc's public card), `first` to act."""
        inner = self.env.init(jax.random.key(0))
        first = jnp.asarray(first, jnp.int32)
        changes = {"current_player": first, "_cards": jnp.asarray(cards, jnp.int32)}
        if hasattr(inner, "_first_player"):
            changes["_first_player"] = first
        inner = inner.replace(**changes)
        inner = inner.replace(observation=self.env._observe(inner, first))
        return self._wrap(inner, jnp.full(self.game.history_slots, -1, jnp.int32), first)

    def replay(self, cards: jax.Array, first: jax.Array, history: jax.Array) -> PokerState:
        """The state after the deal `cards` (`dealt`) and the bets `history` (pgx's actions,
        -1 past the end). Vmappable: OpenSpiel's histories are mapped through it, and a resumed
        run's environments are checked against it."""

        def bet(state: PokerState, action: jax.Array) -> tuple[PokerState, None]:
            stepped = self.step(state, jnp.maximum(action, 0))
            return jax.tree.map(lambda a, b: jnp.where(action >= 0, a, b), stepped, state), None

        return jax.lax.scan(bet, self.dealt(cards, first), history)[0]
