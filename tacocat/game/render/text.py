"""A game in words: the board on one line (`board_line`), a spectator's view (`render_text`), a
player's (`render_view`, the text twin of the observation) and one public event
(`describe_event`)."""

from __future__ import annotations

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
from tacocat.game.state import GameState, Phase
from tacocat.game.view import PlayerView

_LETTERS = "TACOCAT"


def space_letters(n_spaces: int) -> str:
    """One character per board space: the letters of TACOCAT on a seven-space board, else the
    spaces' indices modulo 10."""
    return _LETTERS if n_spaces == len(_LETTERS) else "".join(str(i % 10) for i in range(n_spaces))


def board_line(game: GameState | PlayerView) -> str:
    """The board from player_0's goal to player_1's: letters, deal sizes, tiles, Tacocat.

    Takes a full state or a player's view: it reads only public facts.
    """
    rules = game.rules
    n = rules.n_spaces
    over = game.phase is Phase.OVER
    letters = space_letters(n)
    cells = []
    for s in range(n):
        if game.covered[s]:
            cells.append("[####]")
        elif s == game.space and not over:
            cells.append(f"[@{letters[s]}{rules.board[s]:>2}]")
        else:
            cells.append(f"[ {letters[s]}{rules.board[s]:>2}]")
    left = "P0 GOAL" + ("*" if game.winner == 0 else " ")
    right = ("*" if game.winner == 1 else " ") + "P1 GOAL"
    return f"{left} {''.join(cells)} {right}"


def render_text(state: GameState) -> str:
    """A spectator's view: board, hand sizes, public cards of the round, trick in progress."""
    values = state.rules.values
    arrow = "both" if state.arrow is None else f"player_{state.arrow}"
    lines = [
        board_line(state),
        f"round {state.rounds_played + 1}  deal {state.deal_size}  arrow -> {arrow}  "
        f"hands: P0 {state.hand_size(0)} / P1 {state.hand_size(1)}  draw pile {len(state.draw_pile)}",
    ]
    face_up = " ".join(str(values[v]) for v, n in enumerate(state.discard) for _ in range(n)) or "-"
    lines.append(f"face-up this round: {face_up}")
    if state.last_duel is not None:
        d0, d1 = state.last_duel
        lines.append(f"last duel: P0 {values[d0]} vs P1 {values[d1]}")
    if state.attacker is not None and not state.is_over:
        lines.append(f"attacker: player_{state.attacker}")
    if state.attack:
        attack = " ".join(str(values[v]) for v in state.attack)
        answers = " ".join(str(values[v]) for v in state.answers) or "-"
        lines.append(f"trick: attack {attack} | answers {answers}")
    if state.phase is Phase.OVER:
        outcome = "truncated, no winner" if state.winner is None else f"player_{state.winner} wins"
        lines.append(f"GAME OVER: {outcome}")
    else:
        lines.append(f"to act: player_{state.to_act} ({state.phase.name.lower()})")
    return "\n".join(lines)


def _cards(counts: tuple[int, ...], values: tuple[int, ...]) -> str:
    return " ".join(str(values[v]) for v, n in enumerate(counts) for _ in range(n)) or "-"


def render_view(view: PlayerView) -> str:
    """What `view.player` knows, in words: board, own hand, public cards, trick in progress.

    The text twin of the observation vector (`tacocat.game.observation.describe`) and what a
    person sees in `tacocat play`; a function of the player's view only (R7.3).
    """
    values = view.rules.values
    me, opp = view.player, view.opponent
    who = {me: "you", opp: "opponent"}
    arrow = "both players" if view.arrow is None else who[view.arrow]
    lines = [board_line(view)]
    if view.phase is Phase.OVER:
        lines.append(f"You are player_{me} (your goal is the P{me} GOAL end). {view.rounds_played} rounds played.")
    else:
        lines += [
            f"You are player_{me} (your goal is the P{me} GOAL end). Round {view.rounds_played + 1}, "
            f"deal {view.deal_size}, arrow -> {arrow}.",
            f"Rounds you must still win: {moves_to_goal(view.covered, view.space, view.winner, me)}; "
            f"the opponent: {moves_to_goal(view.covered, view.space, view.winner, opp)}.",
        ]
    hand = f"Your hand: {_cards(view.hand, values)}"
    if sum(view.own_set_aside):
        hand += f"   (set aside: {_cards(view.own_set_aside, values)})"
    if view.own_duel is not None:
        hand += f"   (your duel card: {values[view.own_duel]})"
    lines.append(hand)
    lines.append(
        f"Hand sizes: you {view.hand_sizes[me]}, opponent {view.hand_sizes[opp]}; draw pile {view.draw_pile_size}."
    )
    lines.append(f"Face-up cards this round: {_cards(view.discard, values)}")
    if view.last_duel is not None:
        lines.append(f"Last duel: you {values[view.last_duel[me]]}, opponent {values[view.last_duel[opp]]}")
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
            outcome = "you won!" if view.winner == me else "the opponent won."
        lines.append(f"Game over: {outcome}")
    else:
        assert view.to_act is not None  # someone is to act until the game is over
        lines.append(f"Phase: {view.phase.name.lower()}; to act: {who[view.to_act]}")
    return "\n".join(lines)


def describe_event(event: Event, values: tuple[int, ...]) -> str:
    """One public event of `GameState.events` in words (a plain list read from a file works too)."""

    def show(cards: tuple[int, ...]) -> str:
        return " ".join(str(values[v]) for v in cards) or "nothing"

    e = EVENT_CLASS[EventKind(event[0])](*event)
    if isinstance(e, RoundDealt):
        who = "both players" if e.arrow is None else f"player_{e.arrow}"
        return f"Round {e.number}: Tacocat on space {e.space}, {e.deal_size} cards each; arrow points at {who}."
    if isinstance(e, ReplaceRevealed):
        return f"player_{e.player} replaced {len(e.cards)} card(s): {show(e.cards)}."
    if isinstance(e, DuelRevealed):
        return f"Duel: player_0 {values[e.card_p0]} vs player_1 {values[e.card_p1]}."
    if isinstance(e, AttackPlayed):
        return f"player_{e.player} attacks with {show(e.cards)}."
    if isinstance(e, AnswerPlayed):
        return f"player_{e.player} {'defends with' if e.defended else 'fails with'} {values[e.card]}."
    if isinstance(e, TrickEnded):
        return f"player_{e.next_attacker} takes the trick and attacks next."
    if isinstance(e, ShowdownRevealed):
        result = "void round" if e.winner is None else f"player_{e.winner} wins the round"
        return f"Showdown: player_0 {values[e.last_p0]} vs player_1 {values[e.last_p1]}: {result}."
    if isinstance(e, TacocatMoved):
        return (
            f"player_{e.winner} moves the Tacocat from space {e.from_space} to {e.to_space}; "
            f"space {e.from_space} is covered."
        )
    return "Game over: " + ("truncated." if e.winner is None else f"player_{e.winner} wins!")
