"""Conversion between reference `GameState`s and batch `State`s, both ways.

`from_games` turns reference positions (any `new_game` or `setup_position` state) into a batch
state, so any position can be analysed in batch and the two engines compared anywhere;
`to_game` turns one row back into a `GameState`. The draw pile keeps its order both ways, so
the two engines draw the same cards for the rest of the round. What does not cross: the
reference's history (`events`, `actions`: a converted-back state starts with empty ones) and
its random generator (new rounds are dealt from the generator given to `to_game`).

A position is checked as a whole before it crosses (`check_game_state`, the engine's
`check_state` for the batch engine's rules): every field of the right type and range, every
card of the deck in exactly one place (R0.4, R2.3) and fields that fit together, so a
hand-edited state cannot smuggle cards into the batch engine. `to_game` builds its state with
the engine's `make_state`, which checks it the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from tacocat.game.batch import core
from tacocat.game.batch.core import State
from tacocat.game.batch.tables import NONE, VOID, Tables
from tacocat.game.checks import check_state, make_state
from tacocat.game.ruleset import Ruleset, compile_rules
from tacocat.game.state import GameState, Phase

#: fields of `State` that depend on the deal (the shuffle) rather than on the public game
DEAL_FIELDS = ("hands", "rank")


def check_game_state(game: Any, t: Tables, where: str = "game") -> GameState:
    """`game` itself, once checked as a whole for the batch engine of `t`.

    Raises TypeError when it is not a `GameState`, ValueError when it was made under other
    rules, and InvalidPositionError (a ValueError) from the engine's `check_state`: the first
    field of a wrong type or range, the first card value that is not held exactly as many
    times as the deck has it, or fields that do not fit together.
    """
    if not isinstance(game, GameState):
        raise TypeError(f"{where}: expected a GameState (new_game, setup_position), got {type(game).__name__}")
    if not isinstance(game.rules, Ruleset) or game.rules.config != t.rules.config:
        raise ValueError(f"{where}: the game was played under another rules config than the batch engine's")
    return check_state(game, where)


def game_fields(game: GameState, t: Tables, where: str = "game") -> dict[str, np.ndarray]:
    """The batch state's rules fields of a reference position (numpy, no JAX); the position
    is checked first (`check_game_state`, errors naming it as `where`)."""
    check_game_state(game, t, where)
    a = t.max_attack

    def padded(cards: Sequence[int], width: int) -> np.ndarray:
        out = np.full(width, NONE, np.int32)
        out[: len(cards)] = cards
        return out

    def player(value: int | None) -> int:
        return NONE if value is None else value

    lrw = game.last_round_winner
    return {
        "current_player": np.int32(game.to_act),
        "_step_count": np.int32(len(game.actions)),
        "space": np.int32(game.space),
        "covered": np.asarray(game.covered, np.bool_),
        "rounds_played": np.int32(game.rounds_played),
        "phase": np.int32(int(game.phase)),
        "hands": np.asarray(game.hands, np.int32),
        "set_aside": np.asarray(game.set_aside, np.int32),
        "rank": deck_ranks(game.draw_pile, t),
        "pile_size": np.int32(len(game.draw_pile)),
        "discard": np.asarray(game.discard, np.int32),
        "replace_left": np.int32(len(game.replace_queue)),
        "replace_cap": np.asarray(game.replace_cap, np.int32),
        "replaced": np.asarray([player(r) for r in game.replaced], np.int32),
        "duel": np.asarray([player(d) for d in game.duel], np.int32),
        "last_duel": np.asarray(game.last_duel if game.last_duel is not None else (NONE, NONE), np.int32),
        "attacker": np.int32(player(game.attacker)),
        "attack": padded(game.attack, a),
        "attack_len": np.int32(len(game.attack)),
        "answers": padded(game.answers, a),
        "answers_len": np.int32(len(game.answers)),
        "winner": np.int32(player(game.winner)),
        "last_round_winner": np.int32(VOID if lrw is None else lrw),
    }


def deck_ranks(draw_pile: Sequence[int], t: Tables) -> np.ndarray:
    """The batch engine's deck order (`State.rank`) of a reference draw pile (top card last):
    the pile's cards get the highest ranks, its top card the lowest of them, so the batch
    engine draws them in the reference's order; the cards out of the pile get the rest."""
    deck = t.deck_size
    rank = np.full(deck, -1, np.int32)
    slots_of = {v: list(np.flatnonzero(t.deck_cards == v)) for v in range(t.n_values)}
    for position, value in enumerate(draw_pile):
        rank[slots_of[value].pop(0)] = deck - 1 - position
    rest = np.flatnonzero(rank < 0)
    rank[rest] = np.arange(len(rest))
    return rank


def draw_pile(rank: np.ndarray, pile_size: int, t: Tables) -> list[int]:
    """The reference's draw pile (top card last) of a batch deck order (`deck_ranks` reversed)."""
    in_pile = np.flatnonzero(rank >= t.deck_size - pile_size)
    return [int(t.deck_cards[c]) for c in in_pile[np.argsort(-rank[in_pile])]]


def _empty_fields(t: Tables, batch: tuple[int, ...]) -> dict[str, np.ndarray]:
    return {
        "observation": np.zeros((*batch, t.obs_size), np.float32),
        "rewards": np.zeros((*batch, 2), np.float32),
        "terminated": np.zeros(batch, np.bool_),
        "truncated": np.zeros(batch, np.bool_),
        "legal_action_mask": np.zeros((*batch, t.n_actions), np.bool_),
    }


def refresh(t: Tables, state: State) -> State:
    """Recompute the derived fields of one game (flags, mask, observation of the player to act)."""
    over = state.phase == core.P_OVER
    state = state.replace(terminated=over & (state.winner != NONE), truncated=over & (state.winner == NONE))
    return core.finish(t, state, over)


@functools.lru_cache(maxsize=16)
def _refresher(t: Tables) -> Callable[[State], State]:
    """The jitted, vmapped `refresh` of one ruleset's tables."""
    return jax.jit(jax.vmap(lambda s: refresh(t, s)), compiler_options={"xla_backend_optimization_level": 0})


def from_game(game: GameState, t: Tables) -> State:
    """One reference position as a batch state (no batch axis)."""
    stacked = _stack([game_fields(game, t, "from_game")], t)
    return jax.tree.map(lambda x: x[0], stacked)


def from_games(games: Sequence[GameState], t: Tables) -> State:
    """Reference positions stacked into one batch state (leading axis = game); each is checked
    by `check_game_state` (errors name its index)."""
    if isinstance(games, (str, bytes)) or not isinstance(games, Sequence):
        raise TypeError(f"from_games takes a list of GameStates, got {type(games).__name__}")
    if not games:
        raise ValueError("from_games needs at least one game")
    return _stack([game_fields(g, t, f"from_games: games[{i}]") for i, g in enumerate(games)], t)


def _stack(rows: list[dict[str, np.ndarray]], t: Tables) -> State:
    return rebuild({k: np.stack([r[k] for r in rows]) for k in rows[0]}, t)


def rebuild(fields: dict[str, np.ndarray], t: Tables) -> State:
    """A batch state from stacked rules fields (numpy), its derived fields recomputed."""
    batch = np.shape(fields["current_player"])
    return _refresher(t)(State(**_empty_fields(t, batch), **fields))


def _ended_by_illegal_action(row: State) -> bool:
    """Whether one game (numpy fields, no batch axis) was ended by an illegal action: flagged
    terminated with its play not over and every action legal (`core.step` leaves the move
    unapplied and opens the mask). A new game shown by `step_autoreset` also carries the
    flags of the game that ended, but its mask is its own first decision's, never all true."""
    return bool(row.terminated) and int(row.phase) != core.P_OVER and bool(np.all(row.legal_action_mask))


def to_game(
    state: State, t: Tables, index: int | None = None, seed: int | np.random.Generator | None = None
) -> GameState:
    """One game of a batch state (row `index` when batched) as a reference `GameState`.

    The result has no history, keeps the draw pile's order and deals later rounds from
    `seed`. A new game shown by `step_autoreset` converts to its initial position: its flags
    belong to the game that ended (pgx's convention), so they are not carried over. A game
    ended by an illegal action (pgx's penalty) has no reference counterpart: ValueError.
    """
    if not isinstance(state, State):
        raise TypeError(f"to_game takes a batch State, got {type(state).__name__}")
    batched = np.ndim(state.current_player) > 0
    if batched and index is None:
        raise ValueError("the state is batched: give the index of the game to convert")
    if not batched and index is not None:
        raise ValueError("the state holds one game: index must be None")
    if batched and not (
        isinstance(index, (int, np.integer))
        and not isinstance(index, (bool, np.bool_))
        and 0 <= index < len(state.current_player)
    ):
        raise ValueError(f"index must be an integer in [0, {len(state.current_player)}), got {index!r}")
    row = jax.tree.map(lambda x: np.asarray(x)[index] if batched else np.asarray(x), state)
    phase = Phase(int(row.phase))
    if _ended_by_illegal_action(row):
        raise ValueError("this game was ended by an illegal action (pgx's penalty); it has no reference state")
    rules = compile_rules(t.rules.config)

    def player(value: np.ndarray) -> int | None:
        return None if int(value) == NONE else int(value)

    to_act = int(row.current_player)
    left = int(row.replace_left)
    lrw = int(row.last_round_winner)
    return make_state(
        rules,
        rng=seed,
        space=int(row.space),
        covered=[bool(c) for c in row.covered],
        rounds_played=int(row.rounds_played),
        phase=phase,
        to_act=to_act,
        hands=[[int(n) for n in h] for h in row.hands],
        set_aside=[[int(n) for n in h] for h in row.set_aside],
        draw_pile=draw_pile(row.rank, int(row.pile_size), t),
        discard=[int(n) for n in row.discard],
        replace_queue=[to_act, 1 - to_act][:left],
        replace_cap=[int(c) for c in row.replace_cap],
        replaced=[player(r) for r in row.replaced],
        duel=[player(d) for d in row.duel],
        last_duel=None if int(row.last_duel[0]) == NONE else (int(row.last_duel[0]), int(row.last_duel[1])),
        attacker=player(row.attacker),
        attack=[int(c) for c in row.attack[: int(row.attack_len)]],
        answers=[int(c) for c in row.answers[: int(row.answers_len)]],
        winner=player(row.winner),
        truncated=phase is Phase.OVER and bool(row.truncated),
        last_round_winner=None if lrw == VOID else lrw,
        where="the converted game",
    )
