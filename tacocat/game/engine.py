"""The rules engine: the set-up, the legal actions and the transition function of a game.

Plain Python + numpy, no RL imports. The state it plays (`GameState`, `Phase`, `Deal`: cards as
value indices, hands and piles as counts per value index) is in `tacocat.game.state`.

The public API is::

    state = new_game(config, seed)        # R2 set-up, first round dealt
    legal_actions(state) -> tuple[int, ...]  # ids of the action codec, ascending (immutable)
    apply_action(state, action)           # R4-R6; raises and changes nothing if illegal
    state.current_player, state.is_over, state.winner, returns(state)

`GameState.events` is the public history of the game (R7.2): what every player has seen,
and nothing else, so agents may read it. `GameState.clone()` copies a state for search.

Chance. The engine's only randomness is the deal at every round start (R2.2, R6.4): a `Deal`
(both hands and the draw pile's order). By default it is a shuffle of the state's generator
(`shuffled_deal`); `new_game(..., deal=)` and `apply_action(..., deal=)` deal given cards
instead, through the same code, for callers that choose chance outcomes themselves (the
OpenSpiel adapter's chance nodes). `reorder_pile` orders the hidden draw pile (R7.1) for a
caller that decides the replacement draws (R4.3) when they are made. A state built from its
parts (positions, determinizations, conversions) is `tacocat.game.checks.make_state`, checked
by `check_state` there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tacocat.game.actions import MoveKind
from tacocat.game.checks import check_deal, check_pile_order
from tacocat.game.config import RulesConfig, make_config
from tacocat.game.errors import (
    ActionOutOfRangeError,
    GameOverError,
    IllegalActionError,
    InvalidPositionError,
    NotYourTurnError,
)
from tacocat.game.events import (
    AnswerPlayed,
    AttackPlayed,
    DuelRevealed,
    EventKind,
    GameOver,
    ReplaceRevealed,
    RoundDealt,
    ShowdownRevealed,
    TacocatMoved,
    TrickEnded,
)
from tacocat.game.ruleset import Ruleset, compile_rules
from tacocat.game.state import Deal, GameState, Phase, make_rng

# event kinds as module constants: looking an enum member up on its class costs as much as
# building the event, and the engine builds one on most transitions
(_ROUND, _REPLACE, _DUEL, _ATTACK, _ANSWER, _TRICK, _SHOWDOWN, _MOVE, _GAME_OVER) = EventKind


# ---------------------------------------------------------------------------------------
# set-up and rounds (R2, R6.4)
# ---------------------------------------------------------------------------------------
def new_game(
    config: Ruleset | RulesConfig | dict[str, Any] | None = None,
    seed: int | np.random.Generator | None = None,
    *,
    deal: Deal | None = None,
) -> GameState:
    """A new game (R2): Tacocat on the centre, no tiles, first round dealt.

    `config` is a rules config (or a mapping of its fields, or None for the defaults) or an
    already compiled `Ruleset`. All randomness comes from the given seed or Generator; `deal`
    gives the first round's cards instead of a shuffle (InvalidPositionError naming the problem
    unless it holds two hands of the centre's deal size and the rest of the deck as the pile).
    """
    if isinstance(config, Ruleset):
        rules = config
    else:
        rules = compile_rules(config if isinstance(config, RulesConfig) else make_config(config))
    state = GameState(rules=rules, rng=make_rng(seed), space=rules.config.centre, covered=[False] * rules.n_spaces)
    _start_round(state, deal)
    return state


def shuffled_deal(rules: Ruleset, size: int, rng: np.random.Generator) -> Deal:
    """A random deal of `size` cards each (R2.2): all cards shuffled by one permutation of
    `rng`, player_0 dealt the top `size` cards, then player_1; the rest is the draw pile."""
    deck = rules.deck_cards
    pile = [deck[i] for i in rng.permutation(len(deck))]
    hands = [[0] * rules.n_values, [0] * rules.n_values]
    for player in (0, 1):
        for _ in range(size):
            hands[player][pile.pop()] += 1
    return Deal((hands[0], hands[1]), pile)


def _start_round(state: GameState, deal: Deal | None = None) -> None:
    """Deal a round on the state's space (R2.2, R6.4) and open its replace step: `deal` if
    given (checked first, so a refused deal changes nothing), else `shuffled_deal` from the
    state's generator."""
    rules = state.rules
    size = rules.board[state.space]
    if deal is None:
        deal = shuffled_deal(rules, size, state.rng)
    else:
        check_deal(rules, state.space, deal)
    n_values = rules.n_values
    state.hands = [list(deal.hands[0]), list(deal.hands[1])]
    state.draw_pile = list(deal.pile)
    state.set_aside = [[0] * n_values, [0] * n_values]
    state.discard = [0] * n_values
    state.duel = [None, None]
    state.last_duel = None
    state.attacker = None
    state.attack = []
    state.answers = []
    state.replaced = [None, None]
    state.events.append(RoundDealt(_ROUND, state.rounds_played + 1, state.space, size, rules.arrows[state.space]))
    state.replace_queue, state.replace_cap = replace_step(rules, state.space)
    state.phase = Phase.REPLACE
    state.to_act = state.replace_queue[0]


def replace_step(rules: Ruleset, space: int) -> tuple[list[int], list[int]]:
    """The replace step of a round on `space`: the players who replace, in order, and how many
    cards each may set aside. Two arrows (R4.1): both, simultaneously, up to the deal size.
    One arrow (R4.2): the arrow player first; the opponent's cap (0 here) is set when the
    first finishes."""
    size = rules.board[space]
    arrow = rules.arrows[space]
    if arrow is None:
        return [0, 1], [size, size]
    caps = [0, 0]
    caps[arrow] = size
    return [arrow, 1 - arrow], caps


def reorder_pile(state: GameState, pile: Sequence[int]) -> None:
    """Put the draw pile in the order `pile` (value indices, top card last): the same cards,
    reordered. Nobody sees the pile's order (R7.1), so a caller that decides replacement draws
    (R4.3) only when they are made (OpenSpiel's chance nodes) puts the chosen cards on top
    before the move that draws them. InvalidPositionError, and nothing changed, if `pile` does
    not hold exactly the cards of the pile."""
    check_pile_order(state, pile)
    state.draw_pile = list(pile)


# ---------------------------------------------------------------------------------------
# legal actions
# ---------------------------------------------------------------------------------------
def legal_actions(state: GameState) -> tuple[int, ...]:
    """Ids of the legal actions of the player to act, ascending; () when the game is over.

    A tuple: the engine caches it, so a caller must not be able to change it."""
    if state._legal_cache is None:
        state._legal_cache = tuple(_compute_legal(state))
    return state._legal_cache


def _compute_legal(state: GameState) -> list[int]:
    phase = state.phase
    rules = state.rules
    codec = rules.codec
    hand = state.hands[state.to_act] if phase is not Phase.OVER else []
    if phase is Phase.REPLACE:
        player = state.to_act
        room = state.replace_cap[player] - sum(state.set_aside[player])
        ids = [v for v, n in enumerate(hand) if n] if room > 0 else []
        ids.append(codec.stop)
        return ids
    if phase is Phase.DUEL:
        base = codec.duel_base
        return [base + v for v, n in enumerate(hand) if n]
    if phase is Phase.ATTACK:
        return _attack_actions(rules, hand)
    if phase is Phase.ANSWER:
        current = state.attack[len(state.answers)]
        base = codec.defend_base
        ids = [base + v for v in range(current, rules.n_values) if hand[v]]
        lowest = next(v for v, n in enumerate(hand) if n)
        if lowest < current:  # R5.5: a real sacrifice; if the lowest card defends, defend with it
            ids.append(codec.sacrifice)
        return ids
    return []


def _attack_actions(rules: Ruleset, hand: list[int]) -> list[int]:
    """Singles, sets and sequences that leave the attacker at least one card (R5.3, R5.4)."""
    most = sum(hand) - 1
    single_base = rules.codec.single_base
    ids: list[int] = []
    run = 0  # length of the run of held consecutive values ending at v
    for v, n in enumerate(hand):
        if not n:
            run = 0
            continue
        ids.append(single_base + v)
        set_row = rules.set_ids[v]
        for size in range(2, min(n, most) + 1):
            ids.append(set_row[size])  # type: ignore[arg-type]  # a legal size: not None
        run = run + 1 if v > 0 and hand[v - 1] and rules.consecutive[v - 1] else 1
        for length in range(3, min(run, most) + 1):
            ids.append(rules.seq_ids[v - length + 1][length])  # type: ignore[arg-type]  # a legal run: not None
    ids.sort()
    return ids


# ---------------------------------------------------------------------------------------
# transitions
# ---------------------------------------------------------------------------------------
def apply_action(state: GameState, action: int, player: int | None = None, *, deal: Deal | None = None) -> None:
    """Play `action` for the player to act (R4-R6).

    Raises (and leaves the state untouched) when the game is over, when `player` is given and
    is not the player to act, or when the action is out of range or not legal.

    `deal` gives the cards of the round this move starts (R6.4) instead of a shuffle from the
    state's generator: a chance outcome chosen by the caller. InvalidPositionError, and the
    state untouched, when the move starts no round or `deal` is not a deal of its space
    (`new_game` takes one for the first round). The move is made on a copy, which then
    replaces the state's fields (its lists are new objects).
    """
    if state.phase is Phase.OVER:
        raise GameOverError("the game is over; no action can be applied (reset to play again)")
    if player is not None and player != state.to_act:
        raise NotYourTurnError(f"player_{player} tried to act, but it is player_{state.to_act}'s turn")
    legal = legal_actions(state)
    if not (type(action) is int and action in legal):  # the common case, checked cheaply
        action = check_action_id(state, action)
        if action not in legal:
            codec = state.rules.codec
            raise IllegalActionError(
                f"'{codec.names[action]}' (action {action}) is not legal for player_{state.to_act} "
                f"now; legal: {_legal_text(state, legal)}",
                action,
                legal,
                [codec.names[a] for a in legal],
            )
    if deal is None:
        _apply_legal(state, action)
        return
    after = state.clone(rng=state.rng)
    _apply_legal(after, action, deal)  # raises with only the copy changed
    vars(state).update(vars(after))


def _apply_legal(state: GameState, action: int, deal: Deal | None = None) -> None:
    state._legal_cache = None
    state.actions.append((state.to_act, action))
    rounds = state.rounds_played
    move = state.rules.codec.moves[action]
    _APPLY_MOVE[move.kind](state, move.cards)
    if state.rounds_played != rounds and state.phase is not Phase.OVER:
        _start_round(state, deal)  # R6.4: the round ended and the game goes on
    elif deal is not None:
        raise InvalidPositionError(
            f"deal: '{state.rules.codec.names[action]}' (action {action}) starts no round, so there is nothing to deal"
        )


def _sacrifice(state: GameState) -> None:
    """R5.5: the answer is the defender's lowest card."""
    hand = state.hands[state.to_act]
    _answer(state, next(v for v, n in enumerate(hand) if n))


def check_action_id(state: GameState, action: object) -> int:
    """`action` as an int id of the action space; `ActionOutOfRangeError` (naming the legal
    moves) for anything else: a non-integer, a boolean, an id outside [0, N)."""
    codec = state.rules.codec
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        legal = legal_actions(state)
        raise ActionOutOfRangeError(
            f"action must be an integer id in [0, {codec.size}), got {action!r}; legal: {_legal_text(state, legal)}",
            action,
            legal,
            [codec.names[a] for a in legal],
        )
    if not 0 <= action < codec.size:
        legal = legal_actions(state)
        raise ActionOutOfRangeError(
            f"action {action} is out of range [0, {codec.size}); legal: {_legal_text(state, legal)}",
            action,
            legal,
            [codec.names[a] for a in legal],
        )
    return int(action)


def _legal_text(state: GameState, legal: tuple[int, ...]) -> str:
    names = state.rules.codec.names
    return ", ".join(f"{a}={names[a]!r}" for a in legal) or "none"


def _set_aside(state: GameState, card: int) -> None:
    player = state.to_act
    state.hands[player][card] -= 1
    state.set_aside[player][card] += 1


def _stop_replacing(state: GameState) -> None:
    player = state.replace_queue.pop(0)
    simultaneous = state.arrow is None
    if simultaneous and state.replace_queue:
        state.to_act = state.replace_queue[0]  # R4.1: nothing is revealed until both finished
        return
    if simultaneous:
        _reveal_replacement(state, 0)
        _reveal_replacement(state, 1)
    else:
        _reveal_replacement(state, player)
        if state.replace_queue:  # R4.2: the second player may replace at most as many
            second = state.replace_queue[0]
            state.replace_cap[second] = state.replaced[player]  # type: ignore[assignment]  # set by then
            if state.replace_cap[second] > 0:
                state.to_act = second
                return
            state.replace_queue.clear()
            state.replaced[second] = 0
            state.events.append(ReplaceRevealed(_REPLACE, second, ()))
    _open_duel(state)


def _reveal_replacement(state: GameState, player: int) -> None:
    """R4.3: the set-aside cards go face up to the discard pile; draw as many."""
    aside = state.set_aside[player]
    cards = tuple(v for v in range(len(aside) - 1, -1, -1) for _ in range(aside[v]))
    hand = state.hands[player]
    for v in cards:
        state.discard[v] += 1
        hand[state.draw_pile.pop()] += 1
    state.set_aside[player] = [0] * len(aside)
    state.replaced[player] = len(cards)
    state.events.append(ReplaceRevealed(_REPLACE, player, cards))


def _open_duel(state: GameState) -> None:
    state.phase = Phase.DUEL
    state.duel = [None, None]
    state.to_act = 0


def _duel(state: GameState, card: int) -> None:
    """R5.1/R5.2: both choose a card unseen; the higher attacks; a tie re-duels."""
    player = state.to_act
    state.hands[player][card] -= 1
    state.duel[player] = card
    if player == 0:
        state.to_act = 1
        return
    first, second = state.duel
    assert first is not None and second is not None
    state.duel = [None, None]
    state.discard[first] += 1
    state.discard[second] += 1
    state.last_duel = (first, second)
    state.events.append(DuelRevealed(_DUEL, first, second))
    if sum(state.hands[0]) == 1:  # R5.2: one card each, straight to the showdown
        _showdown(state)
    elif first == second:
        state.to_act = 0
    else:
        state.attacker = 0 if first > second else 1
        state.phase = Phase.ATTACK
        state.to_act = state.attacker


def _attack(state: GameState, cards: tuple[int, ...]) -> None:
    player = state.to_act
    hand = state.hands[player]
    for v in cards:
        hand[v] -= 1
    state.attack = list(cards)
    state.answers = []
    state.events.append(AttackPlayed(_ATTACK, player, cards))
    state.phase = Phase.ANSWER
    state.to_act = 1 - player


def _answer(state: GameState, card: int) -> None:
    """R5.5-R5.7: one answer per attack card; the trick is decided after the last one."""
    defender = state.to_act
    state.hands[defender][card] -= 1
    target = state.attack[len(state.answers)]
    state.answers.append(card)
    state.events.append(AnswerPlayed(_ANSWER, defender, card, card >= target))
    if len(state.answers) < len(state.attack):
        return
    defended = all(a >= t for a, t in zip(state.answers, state.attack, strict=False))
    for v in state.attack + state.answers:
        state.discard[v] += 1
    state.attack = []
    state.answers = []
    state.attacker = defender if defended else 1 - defender
    state.events.append(TrickEnded(_TRICK, state.attacker))
    if sum(state.hands[0]) == 1:
        _showdown(state)
    else:
        state.phase = Phase.ATTACK
        state.to_act = state.attacker


def _showdown(state: GameState) -> None:
    """R6.1/R6.2/R1.4: the lower last card wins the round; equal cards void it by default."""
    last = [next(v for v, n in enumerate(state.hands[p]) if n) for p in (0, 1)]
    for p in (0, 1):
        state.hands[p][last[p]] -= 1
        state.discard[last[p]] += 1
    if last[0] != last[1]:
        winner: int | None = 0 if last[0] < last[1] else 1
    elif state.config.tie_policy == "arrow_player_wins":
        winner = state.arrow
    else:
        winner = None
    state.events.append(ShowdownRevealed(_SHOWDOWN, last[0], last[1], winner))
    _finish_round(state, winner)


def _finish_round(state: GameState, winner: int | None) -> None:
    """R6.2-R6.4, R1.5: move the Tacocat and cover the space left, or void the round; end the
    game in a goal or after max_rounds."""
    state.rounds_played += 1
    state.last_round_winner = winner
    state.attacker = None
    if winner is not None:
        start = state.space
        target = next_space(state.covered, start, winner)
        state.covered[start] = True
        state.events.append(TacocatMoved(_MOVE, winner, start, target))
        if target in (-1, state.rules.n_spaces):
            state.space = start  # the Tacocat is in a goal; `space` keeps its last board space
            state.winner = winner
            state.phase = Phase.OVER
            state.events.append(GameOver(_GAME_OVER, winner))
            return
        state.space = target
    if state.rounds_played >= state.config.max_rounds:
        state.truncated = True
        state.phase = Phase.OVER
        state.events.append(GameOver(_GAME_OVER, None))
    # otherwise `_apply_legal` deals the next round (R6.4), from the deal given to the move if any


def next_space(covered: list[bool], space: int, player: int) -> int:
    """R6.3: one space towards `player`'s goal, skipping covered spaces.

    player_0's goal is index -1, player_1's goal is index len(covered).
    """
    step = -1 if player == 0 else 1
    target = space + step
    while 0 <= target < len(covered) and covered[target]:
        target += step
    return target


def moves_to_goal(covered: Sequence[bool], space: int, winner: int | None, player: int) -> int:
    """Decisive rounds `player` must still win to bring the Tacocat home (R6.3): 0 once they
    have won, len(covered) + 1 once the opponent has."""
    if winner is not None:
        return 0 if winner == player else len(covered) + 1
    covered = list(covered)
    moves = 0
    while 0 <= space < len(covered):
        covered[space], space = True, next_space(covered, space, player)
        moves += 1
    return moves


def round_shaping(state: GameState, rounds_before: int) -> list[float]:
    """Optional shaping [player_0, player_1]: +round_reward to the winner and -round_reward to
    the loser of a decisive round that ended since `rounds_before` rounds; zeros otherwise."""
    if state.rounds_played == rounds_before:
        return [0.0, 0.0]
    return _round_bonus(state.config.round_reward, state.last_round_winner)


def _round_bonus(bonus: float, winner: int | None) -> list[float]:
    """The shaping of one finished round won by `winner` (None: void)."""
    if not bonus or winner is None:
        return [0.0, 0.0]
    return [bonus, -bonus] if winner == 0 else [-bonus, bonus]


def returns(state: GameState) -> list[float]:
    """Game returns [player_0, player_1]: +1/-1 for a win, 0 for truncation or a game on."""
    if state.winner is None:
        return [0.0, 0.0]
    return [1.0, -1.0] if state.winner == 0 else [-1.0, 1.0]


def shaped_returns(state: GameState) -> list[float]:
    """`returns` plus `round_shaping` summed over every round played: what a player earns over
    the whole game, round rewards included (the OpenSpiel game's returns). Each decisive round
    left one TacocatMoved event (R6.3); the rounds' shaping is added to the returns in order."""
    result = returns(state)
    bonus = state.config.round_reward
    if bonus:
        for event in state.events:
            if isinstance(event, TacocatMoved):
                paid = _round_bonus(bonus, event.winner)
                result = [result[0] + paid[0], result[1] + paid[1]]
    return result


#: what each kind of move does (R4-R5), given the cards it plays
_APPLY_MOVE: dict[MoveKind, Callable[[GameState, tuple[int, ...]], None]] = {
    MoveKind.REPLACE: lambda state, cards: _set_aside(state, cards[0]),
    MoveKind.STOP: lambda state, cards: _stop_replacing(state),
    MoveKind.DUEL: lambda state, cards: _duel(state, cards[0]),
    MoveKind.SINGLE: _attack,
    MoveKind.SET: _attack,
    MoveKind.SEQUENCE: _attack,
    MoveKind.DEFEND: lambda state, cards: _answer(state, cards[0]),
    MoveKind.SACRIFICE: lambda state, cards: _sacrifice(state),
}
