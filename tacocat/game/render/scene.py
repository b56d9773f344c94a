"""One picture of the table: a scene (a list of shapes in pixels) built from `TableFacts`, the
facts a picture shows (a player's side, `view_facts`; a spectator's, `state_facts`). `svg` and
`raster` draw it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tacocat.game.engine import moves_to_goal
from tacocat.game.render.text import goal_of, rounds_won, space_letters, space_name
from tacocat.game.ruleset import Ruleset
from tacocat.game.state import GameState, Phase
from tacocat.game.view import PlayerView


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str
    stroke: str = "none"
    radius: float = 0.0
    tag: str = ""


@dataclass(frozen=True)
class Circle:
    cx: float
    cy: float
    r: float
    fill: str
    stroke: str = "none"
    tag: str = ""


@dataclass(frozen=True)
class Polygon:
    points: tuple[tuple[float, float], ...]
    fill: str
    stroke: str = "none"
    tag: str = ""


@dataclass(frozen=True)
class Label:
    """Text centred vertically on `y`; `anchor` says where `x` is (start, middle, end)."""

    x: float
    y: float
    text: str
    size: float = 13.0
    fill: str = "#000000"
    anchor: Literal["start", "middle", "end"] = "middle"
    bold: bool = False
    tag: str = ""


Shape = Rect | Circle | Polygon | Label


@dataclass(frozen=True)
class Scene:
    """A picture in pixels (y grows downwards): the one description that `scene_svg` (the web
    page) and `scene_image` (`rgb_array`, GIF frames) both draw. A shape's `tag` becomes its
    SVG class (what the page's style and the browser tests look for); the image ignores it."""

    width: float
    height: float
    background: str
    shapes: tuple[Shape, ...]
    #: the picture in words (the SVG's text alternative)
    summary: str = ""


@dataclass(frozen=True)
class TableFacts:
    """What one picture of the table shows: the public facts of a game plus the cards the
    picture may show. A card field is None where those cards are hidden from the picture.

    Built only by `view_facts` (a player's side: a function of the `PlayerView` alone, R7.3)
    and `state_facts` (a spectator: public facts, or with `reveal` both players' cards, for
    finished games, replays and games between agents)."""

    rules: Ruleset
    phase: Phase
    to_act: int | None
    space: int
    covered: tuple[bool, ...]
    rounds_played: int
    discard: tuple[int, ...]
    hand_sizes: tuple[int, int]
    draw_pile_size: int
    replaced: tuple[int | None, int | None]
    attacker: int | None
    attack: tuple[int, ...]
    answers: tuple[int, ...]
    last_duel: tuple[int, int] | None
    winner: int | None
    #: the seat drawn at the bottom (the viewer's)
    bottom: int
    #: the seat labels, by seat ("you", an agent spec, ...)
    names: tuple[str, str]
    #: cards held, per value index, by seat (None: hidden)
    hands: tuple[tuple[int, ...] | None, tuple[int, ...] | None]
    #: cards set aside in the running replace step, by seat (None: hidden)
    set_aside: tuple[tuple[int, ...] | None, tuple[int, ...] | None]
    #: a chosen duel card the picture may show, by seat (value index)
    duel: tuple[int | None, int | None]
    #: a duel card chosen and face down, by seat (R5.1: player_0 chooses first)
    pending_duel: tuple[bool, bool]
    #: decisive rounds won so far, by seat (from the public history)
    rounds_won: tuple[int, int] = (0, 0)

    @property
    def arrow(self) -> int | None:
        return self.rules.arrows[self.space]


def _pending_duel(phase: Phase, to_act: int | None) -> tuple[bool, bool]:
    """player_0 has a duel card face down while player_1 chooses (public: the order of play)."""
    return (phase is Phase.DUEL and to_act == 1, False)


def view_facts(view: PlayerView, names: tuple[str, str] | None = None) -> TableFacts:
    """The table as `view.player` sees it, drawn from their side: own cards face up, the
    opponent's as backs (R7.3: reads nothing but the view)."""
    me = view.player
    hidden: list[tuple[int, ...] | None] = [None, None]
    hands, aside = list(hidden), list(hidden)
    hands[me], aside[me] = view.hand, view.own_set_aside
    duel: list[int | None] = [None, None]
    duel[me] = view.own_duel
    return TableFacts(
        rules=view.rules,
        phase=view.phase,
        to_act=view.to_act,
        space=view.space,
        covered=view.covered,
        rounds_played=view.rounds_played,
        discard=view.discard,
        hand_sizes=view.hand_sizes,
        draw_pile_size=view.draw_pile_size,
        replaced=view.replaced,
        attacker=view.attacker,
        attack=view.attack,
        answers=view.answers,
        last_duel=view.last_duel,
        winner=view.winner,
        bottom=me,
        names=names or _seat_names(me),
        hands=(hands[0], hands[1]),
        set_aside=(aside[0], aside[1]),
        duel=(duel[0], duel[1]),
        pending_duel=_pending_duel(view.phase, view.to_act),
        rounds_won=rounds_won(view.events),
    )


def state_facts(
    state: GameState, reveal: bool = False, bottom: int = 0, names: tuple[str, str] | None = None
) -> TableFacts:
    """The table for a spectator, `bottom`'s seat at the bottom: public facts only, or with
    `reveal` every player's cards too (never for a game a person is playing)."""
    over = state.phase is Phase.OVER
    to_act = None if over else state.to_act
    return TableFacts(
        rules=state.rules,
        phase=state.phase,
        to_act=to_act,
        space=state.space,
        covered=tuple(state.covered),
        rounds_played=state.rounds_played,
        discard=tuple(state.discard),
        hand_sizes=(state.hand_size(0), state.hand_size(1)),
        draw_pile_size=len(state.draw_pile),
        replaced=(state.replaced[0], state.replaced[1]),
        attacker=state.attacker,
        attack=tuple(state.attack),
        answers=tuple(state.answers),
        last_duel=state.last_duel,
        winner=state.winner,
        bottom=bottom,
        names=names or ("player_0", "player_1"),
        hands=(tuple(state.hands[0]), tuple(state.hands[1])) if reveal else (None, None),
        set_aside=(tuple(state.set_aside[0]), tuple(state.set_aside[1])) if reveal else (None, None),
        duel=(state.duel[0], state.duel[1]) if reveal else (None, None),
        pending_duel=_pending_duel(state.phase, to_act),
        rounds_won=rounds_won(state.events),
    )


def _seat_names(me: int) -> tuple[str, str]:
    return ("you", "opponent") if me == 0 else ("opponent", "you")


def table_facts(
    subject: GameState | PlayerView, reveal: bool = False, names: tuple[str, str] | None = None
) -> TableFacts:
    """The facts of a picture: a `PlayerView` from that player's side (ValueError with `reveal`),
    a `GameState` as a spectator sees it (`state_facts`)."""
    if isinstance(subject, PlayerView):
        if reveal:
            raise ValueError("a player's view cannot reveal the opponent's cards")
        return view_facts(subject, names)
    return state_facts(subject, reveal=reveal, names=names)


#: colours of the table picture
_FELT, _SPACE, _COVERED, _TOKEN, _GOAL, _WIN = "#1f5e3b", "#f4ecd8", "#555555", "#e8772e", "#c9d8c5", "#ffd84d"
_CARD, _BACK, _BACK_INNER, _INK, _LIGHT, _DIM = "#fffdf7", "#7a3b8f", "#a25fb8", "#1b1b1b", "#ffffff", "#b9d3c2"
_WIDTH, _HEIGHT = 1120.0, 392.0  # the aspect of the 800 x 280 frames of `render_image`
_HAND_ROOM = 580.0  # the width a hand (with its set-aside cards) may take
_CARD_W, _CARD_H, _SMALL_W, _SMALL_H = 44.0, 62.0, 26.0, 36.0
#: the narrow picture (for screens up to 500 px): its width, and the smallest text it draws
NARROW_WIDTH, NARROW_TEXT = 360.0, 11.5


def _card(
    shapes: list[Shape], x: float, y: float, w: float, h: float, value: int | None, values: tuple[int, ...], tag: str
) -> None:
    """A card face (value index `value`) or, for None, a card back."""
    if value is None:
        shapes.append(Rect(x, y, w, h, _BACK, _INK, radius=w / 9, tag=f"card back {tag}".strip()))
        shapes.append(Rect(x + w * 0.15, y + h * 0.12, w * 0.7, h * 0.76, _BACK_INNER, radius=w / 12))
        return
    shapes.append(Rect(x, y, w, h, _CARD, _INK, radius=w / 9, tag=f"card face {tag}".strip()))
    shapes.append(
        Label(x + w / 2, y + h / 2, str(values[value]), size=h * 0.36, fill=_INK, bold=True, tag=f"value {tag}".strip())
    )


def _step(n: int, room: float, w: float) -> float:
    """The distance between the cards of a row of `n`: overlapping to fit in `room` pixels."""
    return w + 5 if n <= 1 else min(w + 5, (room - w) / (n - 1))


def _row(
    shapes: list[Shape],
    x: float,
    y: float,
    cards: list[int | None],
    room: float,
    values: tuple[int, ...],
    tag: str,
    size: tuple[float, float] = (_CARD_W, _CARD_H),
    step: float | None = None,
) -> float:
    """Cards left to right from `x` (`step` apart, else overlapping to fit in `room` pixels);
    returns the x where the row ends."""
    w, h = size
    if not cards:
        return x
    step = _step(len(cards), room, w) if step is None else step
    for i, card in enumerate(cards):
        _card(shapes, x + i * step, y, w, h, card, values, tag)
    return x + step * (len(cards) - 1) + w


def _listed(counts: tuple[int, ...]) -> list[int | None]:
    return [v for v, n in enumerate(counts) for _ in range(n)]


def _shown(counts: tuple[int, ...], values: tuple[int, ...]) -> str:
    return " ".join(str(values[v]) for v, n in enumerate(counts) for _ in range(n))


def _short(name: str, limit: int = 18) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _status_parts(f: TableFacts) -> list[str]:
    values, names = f.rules.values, f.names
    if f.phase is Phase.OVER:
        result = "truncated, no winner" if f.winner is None else f"{names[f.winner]} won"
        return [f"Game over after {f.rounds_played} rounds", result]
    assert f.to_act is not None  # someone is to act until the game is over
    arrow = "both players" if f.arrow is None else names[f.arrow]
    parts = [
        f"Round {f.rounds_played + 1}",
        f"deal {f.rules.board[f.space]}",
        f"arrow → {arrow}",
        f"to act: {names[f.to_act]} ({f.phase.name.lower()})",
    ]
    if f.phase is Phase.ANSWER and len(f.answers) < len(f.attack):
        parts.append(f"card to answer: {values[f.attack[len(f.answers)]]}")
    return parts


def _status(f: TableFacts) -> str:
    parts = _status_parts(f)
    return ": ".join(parts) if f.phase is Phase.OVER else " · ".join(parts)


def _score(f: TableFacts) -> list[str]:
    """A line per seat: rounds won, and rounds still to win to reach the goal."""
    out = []
    for seat in (0, 1):
        left = moves_to_goal(f.covered, f.space, f.winner, seat)
        won = f.rounds_won[seat]
        out.append(f"{_short(f.names[seat], 14)}: {won} {'round' if won == 1 else 'rounds'} won, {left} to go")
    return out


def _side(seat: int) -> str:
    return "left" if seat == 0 else "right"


def table_summary(f: TableFacts) -> str:
    """The picture in words, for people who cannot see it (the SVG's text alternative)."""
    values, names = f.rules.values, f.names
    parts = [_status(f) + "."]
    if f.phase is not Phase.OVER:
        parts.append(f"The Tacocat is on {space_name(f.space, f.rules.n_spaces)}.")
    covered = [space_name(s, f.rules.n_spaces).split(" (")[0] for s, c in enumerate(f.covered) if c]
    if covered:
        parts.append("Covered: " + ", ".join(covered) + ".")
    for seat in (0, 1):
        left = moves_to_goal(f.covered, f.space, f.winner, seat)
        text = (
            f"{names[seat]}: {f.hand_sizes[seat]} cards, goal on the {_side(seat)}, "
            f"{f.rounds_won[seat]} rounds won, {left} to {goal_of(names[seat])}"
        )
        hand = f.hands[seat]
        if hand is not None:
            text += ", holding " + _shown(hand, values)
        parts.append(text + ".")
    if f.last_duel is not None:
        parts.append(f"Last duel: {names[0]} {values[f.last_duel[0]]}, {names[1]} {values[f.last_duel[1]]}.")
    if f.attack:
        answers = " ".join(str(values[v]) for v in f.answers) or "none yet"
        attack = " ".join(str(values[v]) for v in f.attack)
        attacker = names[f.attacker] if f.attacker is not None else "?"
        parts.append(f"Trick: {attacker} attacks with {attack}; answers: {answers}.")
    face_up = _shown(f.discard, values) or "none"
    parts.append(f"Face up this round: {face_up}. Draw pile: {f.draw_pile_size}.")
    return " ".join(parts)


def _seat_text(f: TableFacts, seat: int, limit: int = 32) -> str:
    size = f.hand_sizes[seat]
    parts = [_short(f.names[seat], limit), f"{size} card" if size == 1 else f"{size} cards", f"goal {_side(seat)}"]
    if f.replaced[seat] is not None:
        parts.append(f"replaced {f.replaced[seat]}")
    if f.attacker == seat and f.phase is not Phase.OVER:
        parts.append("attacker")
    return " · ".join(parts)


def _acting(f: TableFacts, seat: int) -> bool:
    return f.to_act == seat and f.phase is not Phase.OVER


def _seat(shapes: list[Shape], f: TableFacts, seat: int, y_label: float, y_cards: float) -> None:
    """A player's label, hand and cards set aside."""
    values = f.rules.values
    acting = _acting(f, seat)
    if acting:
        shapes.append(Circle(12, y_label, 6, _TOKEN, _INK, tag=f"to-act seat-{seat}"))
    shapes.append(
        Label(
            24,
            y_label,
            _seat_text(f, seat),
            size=14,
            fill=_WIN if acting else _LIGHT,
            anchor="start",
            bold=acting,
            tag=f"seat-label seat-{seat}",
        )
    )
    cards, aside_cards = _hand(f, seat)
    room = _HAND_ROOM - (150 if aside_cards else 0)
    end = _row(shapes, 20, y_cards, cards, room, values, f"hand seat-{seat}")
    if aside_cards:
        x = end + 14
        shapes.append(Label(x, y_cards + _CARD_H / 2, "set aside", size=11, fill=_DIM, anchor="start"))
        _row(shapes, x + 58, y_cards, aside_cards, 20 + _HAND_ROOM - x - 58, values, f"set-aside seat-{seat}")


def _hand(f: TableFacts, seat: int) -> tuple[list[int | None], list[int | None]]:
    """The cards a seat holds (backs where hidden, set-asides included, R4.1) and its set-asides."""
    hand, aside = f.hands[seat], f.set_aside[seat]
    held = f.hand_sizes[seat] - (1 if f.pending_duel[seat] or f.duel[seat] is not None else 0)
    if hand is None:
        return [None] * held, []
    return _listed(hand), _listed(aside) if aside is not None else []


def _board(shapes: list[Shape], f: TableFacts, top: float, width: float, narrow: bool = False) -> float:
    """The goals, the spaces (numbered above, covered ones dark, deal sizes), arrows and the
    Tacocat; returns the y below it."""
    rules = f.rules
    n = rules.n_spaces
    letters = space_letters(n)
    over = f.phase is Phase.OVER
    cell = min(64.0, (width - 16) / (n + 2))
    high = 50.0 if narrow else cell
    left = (width - cell * (n + 2)) / 2
    number = NARROW_TEXT if narrow else 12.0
    top += number + 4  # the spaces' numbers above them
    for goal, x in ((0, left), (1, left + cell * (n + 1))):
        won = f.winner == goal
        tag = f"goal goal-{goal}" + (" won" if won else "")
        shapes.append(Rect(x + 2, top, cell - 4, high, _WIN if won else _GOAL, _INK, radius=4, tag=tag))
        shapes.append(
            Label(
                x + cell / 2,
                top + high * 0.4,
                "goal" if narrow else "GOAL",
                size=NARROW_TEXT if narrow else 13,
                bold=not narrow,
            )
        )
        if not narrow:
            shapes.append(Label(x + cell / 2, top + high * 0.7, _short(f.names[goal], 8), size=11))
    for s in range(n):
        x = left + cell * (s + 1)
        covered, here = f.covered[s], s == f.space and not over
        mid = x + cell / 2
        shapes.append(Label(mid, top - number / 2 - 3, str(s + 1), size=number, fill=_DIM, tag="space-number"))
        fill, tag = (_COVERED, "space covered") if covered else (_TOKEN, "space tacocat") if here else (_SPACE, "space")
        shapes.append(Rect(x + 2, top, cell - 4, high, fill, _INK, radius=4, tag=tag))
        if here:  # the Tacocat: a gold token under the space's letter
            shapes.append(Circle(mid, top + high * 0.36, min(cell, high) * 0.3, _WIN, _INK, tag="tacocat token"))
        if not covered:
            shapes.append(Label(mid, top + high * 0.36, letters[s], size=high * 0.3, bold=True))
            deal = str(rules.board[s]) if narrow else f"deal {rules.board[s]}"
            shapes.append(Label(mid, top + high * 0.78, deal, size=NARROW_TEXT if narrow else 11, tag="deal"))
        # the arrow of the space points at a player (R1.3): towards their side of the table
        below = top + high + 4
        for seat in (0, 1) if rules.arrows[s] is None else (rules.arrows[s],):
            down = seat == f.bottom
            dx = 0.0 if rules.arrows[s] is not None else (-6.0 if down else 6.0)
            tip, base = (below + 10, below) if down else (below, below + 10)
            shapes.append(
                Polygon(
                    ((mid + dx - 5, base), (mid + dx + 5, base), (mid + dx, tip)), _LIGHT, tag=f"arrow arrow-{seat}"
                )
            )
    return top + high + 18


def table_scene(f: TableFacts) -> Scene:
    """The picture of the table, landscape: each seat's label and hand (backs where hidden) on
    its side of the board, its duel card and its cards of the trick beside its hand (the
    attack on the attacker's side, each answer across from the card it answers, R5.5), the
    score at the right, then the face-up cards, the draw pile and a status line."""
    values = f.rules.values
    shapes: list[Shape] = []
    bottom, top = f.bottom, 1 - f.bottom
    _seat(shapes, f, top, 16, 30)
    y = _board(shapes, f, 100, _WIDTH) + 6
    rows = {top: 30.0, bottom: y}
    _seat(shapes, f, bottom, y + _CARD_H + 16, y)
    duel_x, trick_x = 620.0, 700.0
    shapes.append(Label(duel_x, 16, "duel", size=11, fill=_DIM, anchor="start"))
    shapes.append(Label(trick_x, 16, "trick", size=11, fill=_DIM, anchor="start"))
    _duel_and_trick(shapes, f, rows, duel_x, trick_x, _WIDTH - trick_x - 80, (_CARD_W, _CARD_H))
    score_x = _WIDTH - 262  # right of the board
    shapes.append(Label(score_x, 124, "score", size=11, fill=_DIM, anchor="start"))
    for i, line in enumerate(_score(f)):
        shapes.append(Label(score_x, 144 + 19 * i, line, size=13, fill=_LIGHT, anchor="start", tag="score"))
    row_y = y + _CARD_H + 38
    shapes.append(Label(20, row_y + _SMALL_H / 2, "face up this round", size=11, fill=_DIM, anchor="start"))
    _row(shapes, 130, row_y, _listed(f.discard), 700, values, "face-up", size=(_SMALL_W, _SMALL_H))
    _draw_pile(shapes, f, 860, row_y, (_SMALL_W, _SMALL_H), 12)
    shapes.append(
        Label(
            20,
            row_y + _SMALL_H + 24,
            _status(f),
            size=14,
            fill=_WIN if f.phase is Phase.OVER else _LIGHT,
            anchor="start",
            bold=True,
            tag="status",
        )
    )
    return Scene(_WIDTH, _HEIGHT, _FELT, tuple(shapes), table_summary(f))


def _draw_pile(shapes: list[Shape], f: TableFacts, x: float, y: float, size: tuple[float, float], text: float) -> None:
    w, h = size
    if f.draw_pile_size:
        _card(shapes, x, y, w, h, None, f.rules.values, "draw-pile")
    shapes.append(
        Label(
            x + w + 8,
            y + h / 2,
            f"draw pile {f.draw_pile_size}",
            size=text,
            fill=_LIGHT,
            anchor="start",
            tag="draw-pile-size",
        )
    )


def _duel_and_trick(
    shapes: list[Shape],
    f: TableFacts,
    rows: dict[int, float],
    duel_x: float,
    trick_x: float,
    room: float,
    size: tuple[float, float],
) -> None:
    """Each seat's duel card (or the last duel's) and its cards of the trick, on its row."""
    values = f.rules.values
    w, h = size
    for seat in (0, 1):
        card = f.duel[seat]
        if card is not None or f.pending_duel[seat]:
            _card(shapes, duel_x, rows[seat], w, h, card, values, f"duel seat-{seat}")
        elif f.last_duel is not None:
            _card(shapes, duel_x, rows[seat], w, h, f.last_duel[seat], values, f"last-duel seat-{seat}")
    if not f.attack:
        return
    attacker = f.attacker if f.attacker is not None else 1 - f.bottom
    step = _step(len(f.attack), room, w)
    for seat, cards, word in ((attacker, f.attack, "attack"), (1 - attacker, f.answers, "answers")):
        tag = f"{word.rstrip('s')} seat-{seat}"
        end = _row(shapes, trick_x, rows[seat], list(cards), room, values, tag, size=size, step=step)
        shapes.append(Label(max(end, trick_x + w) + 6, rows[seat] + h / 2, word, size=11.5, fill=_DIM, anchor="start"))


def _lines(parts: list[str], limit: int) -> list[str]:
    """`parts` joined with " · " into lines of at most about `limit` characters."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 3 + len(part) <= limit:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return lines


def narrow_scene(f: TableFacts) -> Scene:
    """The picture of the table for a narrow screen (`NARROW_WIDTH` wide, no text under
    `NARROW_TEXT` px): the same facts as `table_scene`, stacked: the top seat's label, hand,
    duel card and trick cards, the board, the bottom seat's, the face-up cards, the score and
    the status, wrapped."""
    values = f.rules.values
    width, pad = NARROW_WIDTH, 8.0
    card, small = (34.0, 48.0), (26.0, 36.0)
    shapes: list[Shape] = []
    bottom, top = f.bottom, 1 - f.bottom

    def label(seat: int, y: float) -> None:
        acting = _acting(f, seat)
        fill = _WIN if acting else _LIGHT
        shapes.append(
            Label(
                pad,
                y,
                _seat_text(f, seat),
                size=12.5,
                fill=fill,
                anchor="start",
                bold=acting,
                tag=f"seat-label seat-{seat}",
            )
        )

    def hand(seat: int, y: float) -> None:
        cards, aside = _hand(f, seat)
        end = _row(
            shapes, pad, y, cards, width - 2 * pad - (90 if aside else 0), values, f"hand seat-{seat}", size=card
        )
        if aside:
            _row(shapes, end + 8, y, aside, width - end - 8 - pad, values, f"set-aside seat-{seat}", size=small)

    y = 12.0
    label(top, y)
    hand(top, y + 12)
    y += 12 + card[1] + 6
    rows = {top: y, bottom: 0.0}
    y = _board(shapes, f, y + small[1] + 4, width, narrow=True) + 4
    rows[bottom] = y
    shapes.append(Label(pad, rows[top] + small[1] / 2, "duel", size=NARROW_TEXT, fill=_DIM, anchor="start"))
    _duel_and_trick(shapes, f, rows, pad + 34, pad + 74, width - pad - 74 - 70, small)
    y += small[1] + 6
    hand(bottom, y)
    y += card[1] + 12
    label(bottom, y)
    y += 20
    shapes.append(Label(pad, y, "face up this round", size=NARROW_TEXT, fill=_DIM, anchor="start"))
    shapes.append(
        Label(width - pad, y, f"draw pile {f.draw_pile_size}", size=12, fill=_LIGHT, anchor="end", tag="draw-pile-size")
    )
    y += 10
    face_up, per_row = _listed(f.discard), int((width - 2 * pad) // (small[0] + 2))
    for start in range(0, len(face_up), per_row):  # rows of whole cards: every value readable
        _row(shapes, pad, y, face_up[start : start + per_row], width, values, "face-up", size=small, step=small[0] + 2)
        y += small[1] + 4
    y += 14
    for line in _score(f):
        shapes.append(Label(pad, y, line, size=12, fill=_LIGHT, anchor="start", tag="score"))
        y += 17
    fill = _WIN if f.phase is Phase.OVER else _LIGHT
    for line in _lines(_status_parts(f), 40):
        shapes.append(Label(pad, y + 2, line, size=13, fill=fill, anchor="start", bold=True, tag="status"))
        y += 18
    return Scene(width, y + 6, _FELT, tuple(shapes), table_summary(f))
