"""`TacocatBatch`: the batch engine behind pgx's `Env` interface.

The class only delegates to the pure functions of `tacocat.game.batch.core`, whose `step`
applies pgx's shared policy (written once there):

* `step` on a game that is already over returns it unchanged with zero rewards;
* an illegal action (not in `legal_action_mask`, or an id outside [0, N)) ends the game at
  once: the player who took it gets -1, the other +1, `terminated` is set and the rest of the
  state is left as it was (the move is not applied);
* once a game is over, `legal_action_mask` is all true.

Arguments of the wrong kind fail at trace time with a clear error (`TypeError` or
`ValueError`): a non-integer or non-scalar action (vmap the env over a batch, do not pass a
batch to `step`), or a missing key (a new round is dealt inside `step`, R6.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import pgx.core

from tacocat.game.batch import convert, core
from tacocat.game.batch.core import State
from tacocat.game.batch.tables import Tables, compile_tables
from tacocat.game.config import RulesConfig, make_config
from tacocat.game.state import GameState


class TacocatBatch(pgx.core.Env):
    """Tacocat in JAX with pgx's interface, compiled from a `RulesConfig` (any variant the
    reference engine supports, up to `tables.MAX_ROUNDS_LIMIT` rounds).

    `init(key)`, `step(state, action, key)` and `observe(state, player_id)` work on one game;
    `jax.vmap` them for a batch and `jax.jit` the result. Same action ids, observation vector,
    rewards and flags as the reference engine and the AEC env `tacocat_v0`.
    """

    def __init__(self, config: RulesConfig | dict[str, Any] | str | None = None, **rule_overrides: Any) -> None:
        super().__init__()
        self.config: RulesConfig = make_config(config, **rule_overrides)
        self.tables: Tables = compile_tables(self.config)

    # -- conversion to and from the reference engine ---------------------------------------
    def from_game(self, game: GameState) -> State:
        """A reference position (`new_game`, `setup_position`, ...) as one batch game."""
        return convert.from_game(game, self.tables)

    def from_games(self, games: Sequence[GameState]) -> State:
        """Reference positions stacked into a batch (leading axis = game)."""
        return convert.from_games(games, self.tables)

    def to_game(self, state: State, index: int | None = None, seed: int | None = None) -> GameState:
        """One game (row `index` of a batch) as a reference `GameState` (no history; later
        rounds dealt from `seed`)."""
        return convert.to_game(state, self.tables, index, seed)

    # -- pgx.core.Env -----------------------------------------------------------------------
    def _init(self, key: jax.Array) -> State:
        _check_key(key)
        return core.init(self.tables, key)

    def _step(self, state: pgx.core.State, action: jax.Array, key: jax.Array | None) -> State:
        return core.step(self.tables, state, action, key)  # type: ignore[arg-type]  # pgx passes a key (pgx.Env.step)

    def _observe(self, state: pgx.core.State, player_id: jax.Array) -> jax.Array:
        return core.observe(self.tables, state, player_id)

    def step(self, state: pgx.core.State, action: jax.Array, key: jax.Array | None = None) -> State:
        """Play `action` for `state.current_player`; `key` deals the next round if one starts."""
        return core.step(self.tables, state, self._checked(state, action, key), key)  # type: ignore[arg-type]  # _checked refused None

    def step_autoreset(self, state: pgx.core.State, action: jax.Array, key: jax.Array | None = None) -> State:
        """`step` with pgx's `experimental.auto_reset(env.step, env.init)`: a game that ends is
        replaced by a new one in the same step, keeping the final step's rewards, `terminated`
        and `truncated`; the next call plays its action on that new game (the flags passed in
        count as seen). Same games as pgx's wrapper from the same keys (tested against it); a
        new round and a new game share the step's one shuffle."""
        return core.step(
            self.tables,
            state,
            self._checked(state, action, key),
            key,  # type: ignore[arg-type]  # _checked refused None
            autoreset=True,
        )

    def _checked(self, state: pgx.core.State, action: jax.Array, key: jax.Array | None) -> jax.Array:
        """The action as an array, after the trace-time checks of the arguments' kinds."""
        if key is None:
            raise TypeError("TacocatBatch.step needs a PRNG key: a new round is dealt inside step (R6.4)")
        _check_key(key)
        action = jnp.asarray(action)
        if action.ndim != 0 or jnp.ndim(state.current_player) != 0:
            raise ValueError(
                f"step takes one game and one scalar action (got action shape {action.shape}, "
                f"state batch shape {jnp.shape(state.current_player)}); use jax.vmap(env.step) for a batch"
            )
        if not jnp.issubdtype(action.dtype, jnp.integer):
            raise TypeError(f"action must be an integer action id, got dtype {action.dtype}")
        return action

    def observe(self, state: pgx.core.State, player_id: jax.Array | int | None = None) -> jax.Array:
        """The observation of `player_id` (default: the player to act), as `observation.encode`."""
        if player_id is None:
            player_id = state.current_player
        return jax.lax.stop_gradient(self._observe(state, jnp.asarray(player_id, jnp.int32)))

    @property
    def id(self) -> str:
        return "tacocat_v0"

    @property
    def version(self) -> str:
        return "v0"

    @property
    def num_players(self) -> int:
        return 2

    @property
    def num_actions(self) -> int:
        return self.tables.n_actions

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (self.tables.obs_size,)


def _check_key(key: jax.Array) -> None:
    key = jnp.asarray(key) if not hasattr(key, "dtype") else key
    if not (jnp.issubdtype(key.dtype, jax.dtypes.prng_key) or (key.dtype == jnp.uint32 and key.shape[-1:] == (2,))):
        raise TypeError(f"expected a PRNG key (jax.random.key or PRNGKey), got dtype {key.dtype} shape {key.shape}")
