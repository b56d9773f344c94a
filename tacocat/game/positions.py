"""Set up any position directly, for tests, puzzles and search (issue: "set up any position").

`setup_position` takes card *values* (not indices), checks the position against the rules and
returns a `GameState` ready to play from. Cards not placed anywhere go to the draw pile, in a
random order from `seed` unless `draw_pile` is given (top card last).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tacocat.game.actions import Move, MoveKind
from tacocat.game.checks import make_state
from tacocat.game.config import RulesConfig, make_config
from tacocat.game.engine import replace_step
from tacocat.game.errors import InvalidPositionError
from tacocat.game.events import EventKind, RoundDealt
from tacocat.game.ruleset import Ruleset, compile_rules
from tacocat.game.state import GameState, Phase

_PHASES = {p.name.lower(): p for p in Phase if p is not Phase.OVER}


def setup_position(
    hands: tuple[Sequence[int], Sequence[int]],
    *,
    config: RulesConfig | dict[str, Any] | None = None,
    space: int | None = None,
    covered: Sequence[int] = (),
    phase: str = "replace",
    to_act: int | None = None,
    attacker: int | None = None,
    attack: Sequence[int] = (),
    answers: Sequence[int] = (),
    set_aside: Sequence[int] = (),
    replace_cap: int | None = None,
    duel_card: int | None = None,
    discard: Sequence[int] = (),
    draw_pile: Sequence[int] | None = None,
    rounds_played: int | None = None,
    seed: int | np.random.Generator | None = None,
) -> GameState:
    """Build a validated position.

    Args:
        hands: the card values each player holds (for the attacker in the answer phase: the
            cards left after the attack; for the defender: after the answers so far).
        space: the Tacocat's space (default: the centre); `covered`: covered spaces.
        phase: "replace", "duel", "attack" or "answer".
        to_act: who acts. Replace phase: defaults to the first replacer; naming the second
            replacer means the first has finished: on a one-arrow space `replace_cap` gives
            how many the first replaced, on a two-arrow space `set_aside` gives player_0's
            hidden choice. Duel phase: 0 (default), or 1 with player_0's hidden `duel_card`.
        attacker, attack, answers: the trick in progress (attack listed highest first is
            not required; it is sorted).
        discard: face-up cards of this round. `draw_pile`: explicit draw pile, top card last.
        rounds_played: rounds finished before this one (default: the number of covered
            spaces, the fewest that fit them, R6.5); must be below `max_rounds`.
    Raises:
        InvalidPositionError naming what is wrong.
    """
    cfg = config if isinstance(config, RulesConfig) else make_config(config)
    rules = compile_rules(cfg)
    if not isinstance(phase, str) or phase not in _PHASES:
        raise InvalidPositionError(f"phase must be one of {sorted(_PHASES)}, got {phase!r}")
    if not isinstance(seed, np.random.Generator):
        _check_int(seed, "seed", low=0, optional=True)
    if not isinstance(hands, (list, tuple)) or len(hands) != 2:
        raise InvalidPositionError(f"hands must be a pair of card lists (player_0's, player_1's), got {hands!r}")
    for name, cards in (
        ("hands[0]", hands[0]),
        ("hands[1]", hands[1]),
        ("covered", covered),
        ("attack", attack),
        ("answers", answers),
        ("set_aside", set_aside),
        ("discard", discard),
        ("draw_pile", draw_pile),
    ):
        if cards is not None or name != "draw_pile":
            _check_int_list(cards, name)
    for name, value in (
        ("space", space),
        ("to_act", to_act),
        ("attacker", attacker),
        ("replace_cap", replace_cap),
        ("duel_card", duel_card),
    ):
        _check_int(value, name, optional=True)
    if rounds_played is None:  # the fewest rounds that fit the tiles on the board (R6.5)
        rounds_played = len(set(covered)) if isinstance(covered, (list, tuple)) else 0
    _check_int(rounds_played, "rounds_played", low=0)
    if rounds_played >= cfg.max_rounds:
        raise InvalidPositionError(
            f"rounds_played={rounds_played}: the game ends after max_rounds={cfg.max_rounds} rounds (R1.5)"
        )
    if to_act not in (None, 0, 1):
        raise InvalidPositionError(f"to_act must be 0 or 1, got {to_act!r}")
    if len(set(covered)) > rounds_played:
        raise InvalidPositionError(
            f"covered: {len(set(covered))} covered space(s) after {rounds_played} round(s) played; every "
            "decisive round covers one space (R6.5), so at most rounds_played spaces are covered"
        )
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    space = cfg.centre if space is None else space
    if not 0 <= space < rules.n_spaces:
        raise InvalidPositionError(f"space {space} is not on the board (0..{rules.n_spaces - 1})")
    covered_flags = [False] * rules.n_spaces
    for s in covered:
        if not 0 <= s < rules.n_spaces:
            raise InvalidPositionError(f"covered space {s} is not on the board (0..{rules.n_spaces - 1})")
        covered_flags[s] = True
    if covered_flags[space]:
        raise InvalidPositionError(f"the Tacocat cannot stand on covered space {space} (R0.5)")

    index = {v: i for i, v in enumerate(rules.values)}

    def counts(cards: Sequence[int], what: str) -> list[int]:
        out = [0] * rules.n_values
        for c in cards:
            if c not in index:
                raise InvalidPositionError(f"{what}: {c} is not a card value of this deck {list(rules.values)}")
            out[index[c]] += 1
        return out

    def indices(cards: Sequence[int], what: str) -> list[int]:
        counts(cards, what)
        return [index[c] for c in cards]

    state_phase = _PHASES[phase]
    hand_counts = [counts(hands[0], "hands[0]"), counts(hands[1], "hands[1]")]
    aside = [[0] * rules.n_values, [0] * rules.n_values]
    discard_counts = counts(discard, "discard")
    queue: list[int] = []
    caps = [0, 0]
    replaced: list[int | None] = [None, None]
    duel: list[int | None] = [None, None]
    trick: list[int] = []
    answered: list[int] = []

    if state_phase is Phase.REPLACE:
        queue, caps = replace_step(rules, space)
        first = queue[0]
        if to_act is not None and to_act != first:
            queue.pop(0)
            second = queue[0]
            if rules.arrows[space] is None:
                aside[first] = counts(set_aside, "set_aside")
            else:
                if replace_cap is None or replace_cap <= 0:
                    raise InvalidPositionError(
                        "replace_cap: the second replacer acts only when the first replaced at least one card"
                    )
                if replace_cap > rules.board[space]:
                    raise InvalidPositionError(
                        f"replace_cap={replace_cap}: the first replacer cannot have replaced more than the "
                        f"deal size of space {space} ({rules.board[space]})"
                    )
                caps[second] = replace_cap
                replaced[first] = replace_cap
        elif set_aside:
            raise InvalidPositionError("set_aside is only for player_0's hidden choice on a two-arrow space")
        acting = queue[0]
    elif state_phase is Phase.DUEL:
        acting = 0 if to_act is None else to_act
        if acting == 1:
            if duel_card is None:
                raise InvalidPositionError("duel_card: player_1 acts in the duel only after player_0 chose a card")
            duel[0] = counts([duel_card], "duel_card").index(1)
    else:
        if attacker not in (0, 1):
            raise InvalidPositionError(f"attacker must be 0 or 1 in the {phase} phase, got {attacker!r}")
        if state_phase is Phase.ATTACK:
            acting = attacker
        else:
            trick = sorted(indices(attack, "attack"), reverse=True)
            answered = indices(answers, "answers")
            if not trick or len(answered) >= len(trick):
                raise InvalidPositionError("answer phase needs an attack with unanswered cards")
            _check_attack(rules, trick)
            acting = 1 - attacker
    if to_act is not None and to_act != acting:
        raise InvalidPositionError(f"to_act={to_act} does not fit the {phase} phase (player_{acting} acts)")

    # every card exactly once (hands + set aside + duel + table + discard + draw = deck)
    placed = [h0 + h1 + a0 + a1 + d for h0, h1, a0, a1, d in zip(*hand_counts, *aside, discard_counts, strict=True)]
    for v in (*trick, *answered, *(d for d in duel if d is not None)):
        placed[v] += 1
    for v, n in enumerate(placed):
        if n > rules.copies[v]:
            raise InvalidPositionError(
                f"value {rules.values[v]} appears {n} times but the deck has {rules.copies[v]} copies"
            )
    rest = [v for v in range(rules.n_values) for _ in range(rules.copies[v] - placed[v])]
    if draw_pile is None:
        pile = [rest[i] for i in rng.permutation(len(rest))]
    else:
        pile = indices(draw_pile, "draw_pile")
        if sorted(pile) != rest:
            raise InvalidPositionError(
                f"draw_pile must hold exactly the cards placed nowhere else: {sorted(rules.values[v] for v in rest)}"
            )

    state = make_state(
        rules,
        rng=rng,
        space=space,
        covered=covered_flags,
        rounds_played=rounds_played,
        phase=state_phase,
        to_act=acting,
        hands=hand_counts,
        set_aside=aside,
        draw_pile=pile,
        discard=discard_counts,
        replace_queue=queue,
        replace_cap=caps,
        replaced=replaced,
        duel=duel,
        attacker=None if state_phase in (Phase.REPLACE, Phase.DUEL) else attacker,
        attack=trick,
        answers=answered,
        events=[RoundDealt(EventKind.ROUND, rounds_played + 1, space, rules.board[space], rules.arrows[space])],
        where="setup_position",
    )
    _check_sizes(state)
    return state


def _check_int(value: Any, what: str, low: int | None = None, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidPositionError(f"{what} must be an integer, got {value!r}")
    if low is not None and value < low:
        raise InvalidPositionError(f"{what} must be >= {low}, got {value}")


def _check_int_list(cards: Any, what: str) -> None:
    if not isinstance(cards, (list, tuple)):
        raise InvalidPositionError(f"{what} must be a list of integers, got {type(cards).__name__} {cards!r}")
    for card in cards:
        _check_int(card, f"{what}: item {card!r}")


def _check_attack(rules: Ruleset, attack: list[int]) -> None:
    """The attack must be a single, a set or a sequence of this ruleset (R5.3)."""
    kind = MoveKind.SINGLE if len(attack) == 1 else MoveKind.SET if len(set(attack)) == 1 else MoveKind.SEQUENCE
    try:
        rules.codec.action(Move(kind, tuple(attack)))
    except KeyError:
        shown = [rules.values[v] for v in attack]
        raise InvalidPositionError(f"attack {shown} is not a single, set or sequence (R5.3)") from None


def _check_sizes(state: GameState) -> None:
    """Hand sizes a round can have (`make_state` has checked that they are equal, R4.4, once
    each player's trick cards are counted back) and a draw pile that covers the replacements."""
    sizes = [state.hand_size(p) for p in (0, 1)]
    if state.phase is Phase.ANSWER:
        assert state.attacker is not None
        sizes[state.attacker] += len(state.attack)
        sizes[1 - state.attacker] += len(state.answers)
    if min(sizes) < 1:
        raise InvalidPositionError("each player needs at least one card")
    largest = max(state.rules.board)
    if sizes[0] > largest:
        raise InvalidPositionError(
            f"hands: {sizes[0]} cards each, but the largest deal of this board is {largest}; a hand is "
            "never larger than a deal"
        )
    if state.phase is Phase.REPLACE and sizes[0] < 2:
        raise InvalidPositionError("hands: the replace step needs at least two cards each (a duel follows it)")
    if state.phase is Phase.DUEL and sizes[0] < 2:
        raise InvalidPositionError("a duel needs two cards each; with one card the round is at the showdown")
    if state.phase is Phase.ATTACK and sizes[0] < 2:
        raise InvalidPositionError("an attack needs two cards each (R5.4)")
    free = len(state.draw_pile)
    if state.phase is Phase.REPLACE and free < sum(state.replace_cap):
        raise InvalidPositionError(f"the draw pile ({free}) cannot cover the replacements")
