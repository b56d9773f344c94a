"""Text rendering of a game for spectators (all public information, no hidden cards)."""

from __future__ import annotations

from tacocat_env.engine import GameState, Phase
from tacocat_env.view import PlayerView

_LETTERS = "TACOCAT"


def board_line(game: GameState | PlayerView) -> str:
    """The board from player_0's goal to player_1's: letters, deal sizes, tiles, Tacocat.

    Takes a full state or a player's view: it reads only public facts.
    """
    rules = game.rules
    n = rules.n_spaces
    over = game.phase is Phase.OVER
    letters = _LETTERS if n == len(_LETTERS) else "".join(str(i % 10) for i in range(n))
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
        lines.append("GAME OVER: " + ("truncated, no winner" if state.winner is None else f"player_{state.winner} wins"))
    else:
        lines.append(f"to act: player_{state.to_act} ({state.phase.name.lower()})")
    return "\n".join(lines)


def describe_event(event: tuple, values: tuple[int, ...]) -> str:
    """One public event of `GameState.events` in words."""
    kind = event[0]

    def show(cards: tuple[int, ...]) -> str:
        return " ".join(str(values[v]) for v in cards) or "nothing"

    if kind == "round":
        _, number, space, size, arrow = event
        who = "both players" if arrow is None else f"player_{arrow}"
        return f"Round {number}: Tacocat on space {space}, {size} cards each; arrow points at {who}."
    if kind == "replace":
        return f"player_{event[1]} replaced {len(event[2])} card(s): {show(event[2])}."
    if kind == "duel":
        return f"Duel: player_0 {values[event[1]]} vs player_1 {values[event[2]]}."
    if kind == "attack":
        return f"player_{event[1]} attacks with {show(event[2])}."
    if kind == "answer":
        verb = "defends with" if event[3] else "fails with"
        return f"player_{event[1]} {verb} {values[event[2]]}."
    if kind == "trick":
        return f"player_{event[1]} takes the trick and attacks next."
    if kind == "showdown":
        _, c0, c1, winner = event
        result = "void round" if winner is None else f"player_{winner} wins the round"
        return f"Showdown: player_0 {values[c0]} vs player_1 {values[c1]}: {result}."
    if kind == "move":
        return f"player_{event[1]} moves the Tacocat from space {event[2]} to {event[3]}; space {event[2]} is covered."
    if kind == "game_over":
        return "Game over: " + ("truncated." if event[1] is None else f"player_{event[1]} wins!")
    return str(event)
