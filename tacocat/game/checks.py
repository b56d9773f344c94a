"""Checks of a state given from outside the engine: `check_state` (a whole state), `check_deal`
(the cards of a round start), `check_pile_order` (a reordered draw pile), `card_counts` (every
card of a state, wherever it is), and `make_state`, a state built from its parts and checked
(positions, determinizations, conversions). Each refusal is an InvalidPositionError naming the
first problem and the rule it breaks; every state play reaches passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, cast

import numpy as np

from tacocat.game.errors import InvalidPositionError
from tacocat.game.events import Event
from tacocat.game.ruleset import Ruleset
from tacocat.game.state import Deal, GameState, Phase, make_rng

_T = TypeVar("_T")


def make_state(
    rules: Ruleset,
    *,
    space: int,
    covered: Sequence[bool],
    hands: Sequence[Sequence[int]],
    draw_pile: Sequence[int],
    rng: int | np.random.Generator | None = None,
    rounds_played: int = 0,
    phase: Phase = Phase.REPLACE,
    to_act: int = 0,
    set_aside: Sequence[Sequence[int]] | None = None,
    discard: Sequence[int] | None = None,
    replace_queue: Sequence[int] = (),
    replace_cap: Sequence[int] = (0, 0),
    replaced: Sequence[int | None] = (None, None),
    duel: Sequence[int | None] = (None, None),
    last_duel: tuple[int, int] | None = None,
    attacker: int | None = None,
    attack: Sequence[int] = (),
    answers: Sequence[int] = (),
    winner: int | None = None,
    truncated: bool = False,
    last_round_winner: int | None = -1,
    events: Sequence[Event] = (),
    where: str = "make_state",
) -> GameState:
    """A state built from its parts (the fields of `GameState`, cards as value indices; the
    set-asides and the discard pile default to empty), checked by `check_state` (errors name
    `where`). The state owns copies of the parts; future rounds are dealt from `rng` (a seed
    or a Generator, as `new_game` takes it)."""
    n_values = rules.n_values
    # the parts as given (any sequences) are checked first, then copied into the state's own lists
    given = GameState(
        rules=rules,
        rng=make_rng(rng),
        space=space,
        covered=_as_given(covered),
        rounds_played=rounds_played,
        phase=phase,
        to_act=to_act,
        hands=_rows_as_given(hands),
        set_aside=[[0] * n_values, [0] * n_values] if set_aside is None else _rows_as_given(set_aside),
        draw_pile=_as_given(draw_pile),
        discard=[0] * n_values if discard is None else _as_given(discard),
        replace_queue=_as_given(replace_queue),
        replace_cap=_as_given(replace_cap),
        replaced=_as_given(replaced),
        duel=_as_given(duel),
        last_duel=last_duel,
        attacker=attacker,
        attack=_as_given(attack),
        answers=_as_given(answers),
        winner=winner,
        truncated=truncated,
        last_round_winner=last_round_winner,
        events=_as_given(events),
    )
    check_state(given, where)
    state = given.clone(rng=given.rng)
    state.last_duel = None if last_duel is None else (last_duel[0], last_duel[1])
    return state


def check_state(state: GameState, where: str = "state") -> GameState:
    """`state` itself, once checked as a whole; InvalidPositionError naming `where` and the first
    problem otherwise. Checked, in this order: every field of the right type and range for the
    state's ruleset; every card of the deck in exactly one place (R0.4, R2.3); the fields of
    the phase agree with each other (who acts, the replace queue, the hidden duel card, the
    trick, the end of the game; the Tacocat on an uncovered space, R0.5); equal hand sizes
    once the trick's cards are counted back (R4.4). Every state play reaches passes."""
    rules = state.rules
    n, n_spaces, largest = rules.n_values, rules.n_spaces, max(rules.board)
    deal, most = largest + 1, len(rules.deck_cards) + 1
    counts = f"{n} non-negative counts (one per card value)"
    fields: dict[str, tuple[bool, str]] = {
        "phase": (isinstance(state.phase, Phase), "a Phase"),
        "to_act": (_integer(state.to_act, 0, 2), "0 or 1"),
        "space": (_integer(state.space, 0, n_spaces), f"a space 0..{n_spaces - 1}"),
        "covered": (
            _sequence(state.covered, n_spaces) and all(isinstance(c, (bool, np.bool_)) for c in state.covered),
            f"{n_spaces} booleans",
        ),
        "rounds_played": (
            _integer(state.rounds_played, 0, rules.config.max_rounds + 1),
            f"0..{rules.config.max_rounds}",
        ),
        "hands": (
            _sequence(state.hands, 2) and all(_integers(h, 0, most, n) for h in state.hands),
            f"two lists of {counts}",
        ),
        "set_aside": (
            _sequence(state.set_aside, 2) and all(_integers(h, 0, most, n) for h in state.set_aside),
            f"two lists of {counts}",
        ),
        "draw_pile": (_integers(state.draw_pile, 0, n), f"value indices 0..{n - 1}"),
        "discard": (_integers(state.discard, 0, most, n), counts),
        "replace_queue": (_integers(state.replace_queue, 0, 2) and len(state.replace_queue) <= 2, "at most 2 players"),
        "replace_cap": (_integers(state.replace_cap, 0, deal, 2), f"two counts 0..{deal - 1}"),
        "replaced": (_integers(state.replaced, 0, deal, 2, none=True), f"two counts 0..{deal - 1} or None"),
        "duel": (_integers(state.duel, 0, n, 2, none=True), f"two value indices 0..{n - 1} or None"),
        "last_duel": (
            state.last_duel is None or _integers(state.last_duel, 0, n, 2),
            f"None or two value indices 0..{n - 1}",
        ),
        "attacker": (_integer(state.attacker, 0, 2, none=True), "0, 1 or None"),
        "attack": (
            _integers(state.attack, 0, n) and len(state.attack) <= largest - 1,
            f"at most {largest - 1} value indices 0..{n - 1}",
        ),
        "answers": (
            _integers(state.answers, 0, n) and len(state.answers) <= largest - 1,
            f"at most {largest - 1} value indices 0..{n - 1}",
        ),
        "winner": (_integer(state.winner, 0, 2, none=True), "0, 1 or None"),
        "truncated": (isinstance(state.truncated, (bool, np.bool_)), "a boolean"),
        "last_round_winner": (_integer(state.last_round_winner, -1, 2, none=True), "-1, 0, 1 or None"),
        "events": (_sequence(state.events), "a list of events"),
    }
    for name, (ok, expected) in fields.items():
        if not ok:
            raise InvalidPositionError(f"{where}: field {name} must be {expected}, got {getattr(state, name)!r:.80}")
    held, copies = card_counts(state), rules.copies
    for v, (n_held, n_deck) in enumerate(zip(held, copies, strict=False)):
        if n_held != n_deck:
            raise InvalidPositionError(
                f"{where}: value {rules.values[v]} is held {n_held} time(s), but the deck has {n_deck} "
                f"({sum(held)} cards in the state, {sum(copies)} in the deck): every card must be in exactly "
                "one place (hands, set-asides, duel, table, discard, draw pile; R0.4, R2.3)"
            )
    problem = _phase_problem(state)
    if problem:
        raise InvalidPositionError(f"{where}: {problem}")
    sizes = [state.hand_size(p) for p in (0, 1)]
    if state.phase is Phase.ANSWER:
        assert state.attacker is not None
        sizes[state.attacker] += len(state.attack)
        sizes[1 - state.attacker] += len(state.answers)
    if sizes[0] != sizes[1]:
        raise InvalidPositionError(f"{where}: hand sizes must be equal (R4.4), got {sizes[0]} and {sizes[1]}")
    return state


def _phase_problem(state: GameState) -> str | None:
    """What in the state's fields does not fit its phase, or None (the checks of `check_state`)."""
    phase, to_act, attacker = state.phase, state.to_act, state.attacker
    name = phase.name.lower()
    if phase is Phase.REPLACE:
        if not state.replace_queue or state.replace_queue[0] != to_act:
            return (
                f"replace phase: the player to act (player_{to_act}) must be the first of replace_queue "
                f"{list(state.replace_queue)} (R4.1, R4.2)"
            )
    elif state.replace_queue:
        return f"{name} phase: replace_queue must be empty once replacing is over, got {list(state.replace_queue)}"
    if phase in (Phase.REPLACE, Phase.DUEL) and attacker is not None:
        return f"{name} phase: attacker must be None until a duel is won (R5.1), got {attacker}"
    if phase in (Phase.ATTACK, Phase.ANSWER) and attacker is None:
        return f"{name} phase: attacker must be 0 or 1"
    if phase is Phase.ATTACK and to_act != attacker:
        return f"attack phase: the attacker (player_{attacker}) acts, not player_{to_act} (R5.3)"
    if phase is Phase.ANSWER:
        if to_act == attacker:
            return f"answer phase: the defender acts, not the attacker player_{attacker} (R5.5)"
        if len(state.answers) >= len(state.attack):
            return "answer phase: the attack must have unanswered cards (R5.5)"
    elif state.attack or state.answers:
        return f"{name} phase: attack and answers are only on the table while a trick is answered (R5.7)"
    waiting = phase is Phase.DUEL and to_act == 1
    if (state.duel[0] is not None) != waiting or state.duel[1] is not None:
        return (
            "duel: only player_0's card is ever hidden, while player_1 chooses (R5.1); "
            f"got duel {list(state.duel)} in the {name} phase with player_{to_act} to act"
        )
    over = state.winner is not None or state.truncated
    if over != (phase is Phase.OVER) or (state.winner is not None and state.truncated):
        return (
            f"{name} phase: a game is over exactly when it has a winner or was truncated, not both "
            f"(winner {state.winner}, truncated {state.truncated}; R1.5, R6.4)"
        )
    if state.covered[state.space] and state.winner is None:
        return f"the Tacocat cannot stand on covered space {state.space} (R0.5)"
    return None


def card_counts(state: GameState) -> list[int]:
    """How many cards of each value index the state holds in all places together: both hands,
    both set-asides, the hidden duel cards, the trick on the table, the discard pile and the
    draw pile. A consistent state holds exactly the deck (`rules.copies`, R0.4, R2.3)."""
    counts = [
        h0 + h1 + a0 + a1 + d for h0, h1, a0, a1, d in zip(*state.hands, *state.set_aside, state.discard, strict=True)
    ]
    for v in (*state.draw_pile, *state.attack, *state.answers, *state.duel):
        if v is not None:
            counts[v] += 1
    return counts


def check_deal(rules: Ruleset, space: int, deal: object) -> None:
    """InvalidPositionError naming the first problem unless `deal` deals a round on `space`:
    two hands of the space's deal size and a pile that together hold every card of the deck
    exactly once (R2.2, R2.3)."""
    if not isinstance(deal, Deal):
        raise InvalidPositionError(f"deal: expected a Deal, got {type(deal).__name__}")
    n, size = rules.n_values, rules.board[space]
    if not (_sequence(deal.hands, 2) and all(_integers(h, 0, len(rules.deck_cards) + 1, n) for h in deal.hands)):
        raise InvalidPositionError(
            f"deal: hands must be two lists of {n} non-negative counts (one per card value), got {deal.hands!r:.80}"
        )
    for player, hand in enumerate(deal.hands):
        if sum(hand) != size:
            raise InvalidPositionError(
                f"deal: player_{player}'s hand holds {sum(hand)} card(s), but a round on "
                f"space {space} deals {size} (R2.2)"
            )
    if not _sequence(deal.pile):
        raise InvalidPositionError(f"deal: pile must be a list of value indices, got {type(deal.pile).__name__}")
    dealt = [a + b for a, b in zip(*deal.hands, strict=False)]
    for card in deal.pile:
        if not _integer(card, 0, n):
            raise InvalidPositionError(
                f"deal: the pile holds {card!r}, which is not a card of this deck (value indices 0..{n - 1})"
            )
        dealt[card] += 1
    for v, (n_dealt, n_deck) in enumerate(zip(dealt, rules.copies, strict=False)):
        if n_dealt != n_deck:
            raise InvalidPositionError(
                f"deal: value {rules.values[v]} is dealt {n_dealt} time(s), but the deck has {n_deck}: every card "
                "of the deck goes to one hand or the draw pile, once (R2.2, R2.3)"
            )


def check_pile_order(state: GameState, pile: Sequence[int]) -> None:
    """InvalidPositionError naming `reorder_pile` unless `pile` (value indices, top card last)
    holds exactly the cards of the state's draw pile, in any order (R7.1)."""
    if not _integers(pile, 0, state.rules.n_values) or sorted(pile) != sorted(state.draw_pile):
        raise InvalidPositionError(
            f"reorder_pile: {pile!r:.80} is not an order of the draw pile's {len(state.draw_pile)} cards"
        )


def _as_given(parts: Sequence[_T]) -> list[_T]:
    """`parts` exactly as given, typed as the list a GameState field holds: `make_state` builds
    its first state from the unchecked parts on purpose, so that `check_state` refuses any that
    is not a list or tuple of the right values (a copy into lists would hide that), and only the
    checked state's clone, whose fields are lists, is handed out."""
    return cast("list[_T]", parts)


def _rows_as_given(rows: Sequence[Sequence[_T]]) -> list[list[_T]]:
    """`rows` exactly as given (hands, set-asides), typed as a GameState field: as `_as_given`."""
    return cast("list[list[_T]]", rows)


def _integer(value: Any, low: int, high: int, none: bool = False) -> bool:
    """An integer (not a bool) in [low, high), or None where `none`."""
    if value is None:
        return none
    return (
        isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and bool(low <= value < high)
    )


def _sequence(values: Any, length: int | None = None) -> bool:
    return isinstance(values, (list, tuple)) and (length is None or len(values) == length)


def _integers(values: Any, low: int, high: int, length: int | None = None, none: bool = False) -> bool:
    """A list (or tuple) of `length` integers in [low, high) (None allowed where `none`)."""
    return _sequence(values, length) and all(_integer(v, low, high, none) for v in values)
