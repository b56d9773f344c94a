"""A game in words: the board on one line (`board_line`), a spectator's view (`render_text`), a
player's (`render_view`, the text twin of the observation) and one public event
(`describe_event`).

One vocabulary for everything a person reads: the players by the names the caller gives
("you", an agent's name; player_0 / player_1 by default), the spaces as the board draws them
(numbered 1..S from player_0's goal, with the letters of TACOCAT on a seven-space board:
"space 4 (O)"), and each end of the board as a player's "goal"."""

from __future__ import annotations

from collections.abc import Sequence

from tacocat.game.engine import moves_to_goal
from tacocat.game.events import (
    EVENT_CLASS,
    AnswerPlayed,
    AttackPlayed,
    DuelRevealed,
    Event,
    EventKind,
    ReplaceRevealed,
    RoundDealt,
    ShowdownRevealed,
    TacocatMoved,
    TrickEnded,
)
from tacocat.game.ruleset import Ruleset
from tacocat.game.state import GameState, Phase
from tacocat.game.view import PlayerView

_LETTERS = "TACOCAT"
#: the players' names when the caller gives none
SEATS = ("player_0", "player_1")
#: what `board_line`'s cells mean (shown under it where a person reads it)
BOARD_KEY = "(each space: its number and letter, then the cards dealt there; @ the Tacocat, ### covered)"


def space_letters(n_spaces: int) -> str:
    """One character per board space: the letters of TACOCAT on a seven-space board, else the
    spaces' numbers (1..S) modulo 10."""
    return _LETTERS if n_spaces == len(_LETTERS) else "".join(str((i + 1) % 10) for i in range(n_spaces))


def space_name(space: int, n_spaces: int) -> str:
    """A space as the board draws it: numbered from 1 at player_0's goal, with its letter on a
    seven-space board ("space 4 (O)")."""
    if n_spaces == len(_LETTERS):
        return f"space {space + 1} ({_LETTERS[space]})"
    return f"space {space + 1}"


def distinct_names(names: tuple[str, str]) -> tuple[str, str]:
    """Names a person can tell apart: two agents of the same name get their seats added."""
    if names[0] != names[1]:
        return names
    return (f"{names[0]} (player_0)", f"{names[1]} (player_1)")


def goal_of(name: str) -> str:
    """A player's goal in words: "your goal", "champion's goal"."""
    return "your goal" if name == "you" else f"{name}'s goal"


def _agree(name: str, verb: str) -> str:
    return verb if name == "you" else verb + "s"


def does(name: str, verb: str) -> str:
    """`name` and `verb` agreeing, at the start of a sentence: "You attack", "champion attacks"."""
    return f"{'You' if name == 'you' else name} {_agree(name, verb)}"


def rounds_won(events: Sequence[Event]) -> tuple[int, int]:
    """Decisive rounds won by each player, from the public history (R6.3: each moved the Tacocat)."""
    won = [0, 0]
    for event in events:
        if isinstance(event, TacocatMoved):
            won[event.winner] += 1
    return (won[0], won[1])


def score_line(game: GameState | PlayerView, names: tuple[str, str] = SEATS) -> str:
    """Rounds won by each player and the rounds each must still win to reach their goal (public)."""
    won = rounds_won(game.events)
    parts = []
    for seat in (0, 1):
        left = moves_to_goal(game.covered, game.space, game.winner, seat)
        rounds = "1 round" if won[seat] == 1 else f"{won[seat]} rounds"
        parts.append(f"{names[seat]} {rounds} won, {left} to {goal_of(names[seat])}")
    return "Score: " + "; ".join(parts)


def _cell(s: int, n: int) -> str:
    return f"{s + 1}{space_letters(n)[s]}" if n == len(_LETTERS) else f"{s + 1}"


def board_line(game: GameState | PlayerView) -> str:
    """The board from player_0's goal to player_1's: each space's number (and letter) and deal
    size, tiles (###), the Tacocat (@).

    Takes a full state or a player's view: it reads only public facts.
    """
    rules = game.rules
    n = rules.n_spaces
    over = game.phase is Phase.OVER
    cells = []
    for s in range(n):
        body = f"{_cell(s, n)} {rules.board[s]}"
        if game.covered[s]:
            cells.append("[" + "#" * (len(body) + 1) + "]")
        elif s == game.space and not over:
            cells.append(f"[@{body}]")
        else:
            cells.append(f"[ {body}]")
    left = "P0 GOAL" + ("*" if game.winner == 0 else " ")
    right = ("*" if game.winner == 1 else " ") + "P1 GOAL"
    return f"{left} {''.join(cells)} {right}"


def _round_line(game: GameState | PlayerView) -> str:
    """The round now (the table's numbering), or how many were played once the game is over."""
    if game.phase is Phase.OVER:
        return f"Game over after {game.rounds_played} rounds"
    return f"Round {game.rounds_played + 1}"


def render_text(state: GameState, names: tuple[str, str] = SEATS) -> str:
    """A spectator's view: board, hand sizes, score, public cards of the round, trick in progress."""
    values = state.rules.values
    arrow = "both" if state.arrow is None else names[state.arrow]
    lines = [board_line(state)]
    if state.phase is Phase.OVER:
        lines.append(_round_line(state))
    else:
        lines.append(
            f"{_round_line(state).lower()}  deal {state.deal_size}  arrow -> {arrow}  "
            f"hands: {names[0]} {state.hand_size(0)} / {names[1]} {state.hand_size(1)}  "
            f"draw pile {len(state.draw_pile)}"
        )
    lines.append(score_line(state, names))
    face_up = " ".join(str(values[v]) for v, n in enumerate(state.discard) for _ in range(n)) or "-"
    lines.append(f"face-up this round: {face_up}")
    if state.last_duel is not None:
        d0, d1 = state.last_duel
        lines.append(f"last duel: {names[0]} {values[d0]} vs {names[1]} {values[d1]}")
    if state.attacker is not None and not state.is_over:
        lines.append(f"attacker: {names[state.attacker]}")
    if state.attack:
        attack = " ".join(str(values[v]) for v in state.attack)
        answers = " ".join(str(values[v]) for v in state.answers) or "-"
        lines.append(f"trick: attack {attack} | answers {answers}")
    if state.phase is Phase.OVER:
        outcome = "truncated, no winner" if state.winner is None else f"{names[state.winner]} wins"
        lines.append(f"GAME OVER: {outcome}")
    else:
        lines.append(f"to act: {names[state.to_act]} ({state.phase.name.lower()})")
    return "\n".join(lines)


def _cards(counts: tuple[int, ...], values: tuple[int, ...]) -> str:
    return " ".join(str(values[v]) for v, n in enumerate(counts) for _ in range(n)) or "-"


def render_view(view: PlayerView, opponent: str = "opponent") -> str:
    """What `view.player` knows, in words: board, own hand, public cards, trick in progress;
    the other player called `opponent`.

    The text twin of the observation vector (`tacocat.game.observation.describe`) and what a
    person sees in `tacocat play`; a function of the player's view only (R7.3).
    """
    values = view.rules.values
    me, opp = view.player, view.opponent
    who = {me: "you", opp: opponent}
    names = (who[0], who[1])
    arrow = "both players" if view.arrow is None else who[view.arrow]
    side = "left (P0 GOAL)" if me == 0 else "right (P1 GOAL)"
    lines = [board_line(view)]
    if view.phase is Phase.OVER:
        lines.append(f"You are player_{me}: your goal is on the {side}. {_round_line(view)}.")
    else:
        lines += [
            f"You are player_{me}: your goal is on the {side}.",
            f"{_round_line(view)}: the Tacocat is on {space_name(view.space, view.rules.n_spaces)}, "
            f"deal {view.deal_size}, arrow -> {arrow}.",
        ]
    lines.append(score_line(view, names))
    hand = f"Your hand: {_cards(view.hand, values)}"
    if sum(view.own_set_aside):
        hand += f"   (set aside: {_cards(view.own_set_aside, values)})"
    if view.own_duel is not None:
        hand += f"   (your duel card: {values[view.own_duel]})"
    lines.append(hand)
    lines.append(
        f"Hand sizes: you {view.hand_sizes[me]}, {opponent} {view.hand_sizes[opp]}; draw pile {view.draw_pile_size}."
    )
    lines.append(f"Face-up cards this round: {_cards(view.discard, values)}")
    if view.last_duel is not None:
        lines.append(f"Last duel: you {values[view.last_duel[me]]}, {opponent} {values[view.last_duel[opp]]}")
    if view.attacker is not None and view.phase is not Phase.OVER:
        lines.append(f"Attacker: {who[view.attacker]}")
    if view.attack:
        attack = " ".join(str(values[v]) for v in view.attack)
        answers = " ".join(str(values[v]) for v in view.answers) or "-"
        lines.append(f"Trick: attack {attack} | answers {answers}")
        if view.phase is Phase.ANSWER and len(view.answers) < len(view.attack):
            lines.append(f"Card to answer now: {values[view.attack[len(view.answers)]]}")
    if view.phase is Phase.REPLACE and view.to_act == me:
        room = view.replace_cap - sum(view.own_set_aside)
        lines.append(f"Replace step: you may set aside {room} more card(s).")
    if view.phase is Phase.OVER:
        if view.winner is None:
            outcome = "no winner (truncated)"
        else:
            outcome = "you won!" if view.winner == me else f"{opponent} won."
        lines.append(f"Game over: {outcome}")
    else:
        assert view.to_act is not None  # someone is to act until the game is over
        lines.append(f"Phase: {view.phase.name.lower()}; to act: {who[view.to_act]}")
    return "\n".join(lines)


def describe_event(event: Event, rules: Ruleset, names: tuple[str, str] = SEATS) -> str:
    """One public event of `GameState.events` in words (a plain list read from a file works
    too), the players called `names`."""
    values, n = rules.values, rules.n_spaces

    def show(cards: tuple[int, ...]) -> str:
        return " ".join(str(values[v]) for v in cards) or "nothing"

    e = EVENT_CLASS[EventKind(event[0])](*event)
    if isinstance(e, RoundDealt):
        who = "both players" if e.arrow is None else names[e.arrow]
        return (
            f"Round {e.number}: the Tacocat is on {space_name(e.space, n)}, {e.deal_size} cards each; "
            f"the arrow points at {who}."
        )
    if isinstance(e, ReplaceRevealed):
        count = "1 card" if len(e.cards) == 1 else f"{len(e.cards)} cards"
        return f"{does(names[e.player], 'replace')} {count}: {show(e.cards)}."
    if isinstance(e, DuelRevealed):
        a, b = values[e.card_p0], values[e.card_p1]
        higher = names[0] if a > b else names[1]
        outcome = "a tie" if a == b else f"{higher} {'have' if higher == 'you' else 'has'} the higher card"
        return f"Duel: {names[0]} {a}, {names[1]} {b}: {outcome}."
    if isinstance(e, AttackPlayed):
        kind = "" if len(e.cards) == 1 else (" a set" if len(set(e.cards)) == 1 else " a sequence")
        return f"{does(names[e.player], 'attack')} with{kind} {show(e.cards)}."
    if isinstance(e, AnswerPlayed):
        if e.defended:
            return f"{does(names[e.player], 'defend')} with {values[e.card]}."
        return f"{does(names[e.player], 'fail')} to defend: {values[e.card]} is lower (a sacrifice)."
    if isinstance(e, TrickEnded):
        who = names[e.next_attacker]
        return f"{does(who, 'take')} the trick and {_agree(who, 'attack')} next."
    if isinstance(e, ShowdownRevealed):
        a, b = values[e.last_p0], values[e.last_p1]
        if e.winner is None:
            result = "a void round (same space, new deal)"
        else:
            who = names[e.winner]
            result = f"the lower card wins, {who} {_agree(who, 'win')} the round"
        return f"Showdown: {names[0]} {a}, {names[1]} {b}: {result}."
    if isinstance(e, TacocatMoved):
        winner = names[e.winner]
        where = goal_of(winner) if not 0 <= e.to_space < n else space_name(e.to_space, n)
        return (
            f"{does(winner, 'move')} the Tacocat from {space_name(e.from_space, n)} "
            f"{'into' if where.endswith('goal') else 'to'} {where}; {space_name(e.from_space, n)} is covered."
        )
    if e.winner is None:
        return "Game over: truncated, no winner."
    return f"Game over: {names[e.winner]} {_agree(names[e.winner], 'win')}!"
