"""One picture of the table: a scene (a list of shapes in pixels) built from `TableFacts`, the
facts a picture shows (a player's side, `view_facts`; a spectator's, `state_facts`). `svg` and
`raster` draw it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tacocat.game.render.text import space_letters
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
    small: bool = False,
    step: float | None = None,
) -> float:
    """Cards left to right from `x` (`step` apart, else overlapping to fit in `room` pixels);
    returns the x where the row ends."""
    w, h = (_SMALL_W, _SMALL_H) if small else (_CARD_W, _CARD_H)
    if not cards:
        return x
    step = _step(len(cards), room, w) if step is None else step
    for i, card in enumerate(cards):
        _card(shapes, x + i * step, y, w, h, card, values, tag)
    return x + step * (len(cards) - 1) + w


def _listed(counts: tuple[int, ...]) -> list[int | None]:
    return [v for v, n in enumerate(counts) for _ in range(n)]


def _status(f: TableFacts) -> str:
    values, names = f.rules.values, f.names
    if f.phase is Phase.OVER:
        result = "truncated, no winner" if f.winner is None else f"{names[f.winner]} (player_{f.winner}) wins"
        return f"Game over after {f.rounds_played} rounds: {result}"
    assert f.to_act is not None  # someone is to act until the game is over
    arrow = "both players" if f.arrow is None else names[f.arrow]
    text = (
        f"Round {f.rounds_played + 1} · deal {f.rules.board[f.space]} · arrow → {arrow} · "
        f"to act: {names[f.to_act]} ({f.phase.name.lower()})"
    )
    if f.phase is Phase.ANSWER and len(f.answers) < len(f.attack):
        text += f" · card to answer: {values[f.attack[len(f.answers)]]}"
    return text


def _seat(shapes: list[Shape], f: TableFacts, seat: int, y_label: float, y_cards: float) -> None:
    """A player's label, hand and cards set aside."""
    values = f.rules.values
    name = f.names[seat] if f.names[seat] == f"player_{seat}" else f"{f.names[seat]} (player_{seat})"
    size = f.hand_sizes[seat]
    parts = [name, f"{size} card" if size == 1 else f"{size} cards"]
    if f.replaced[seat] is not None:
        parts.append(f"replaced {f.replaced[seat]}")
    if f.attacker == seat and f.phase is not Phase.OVER:
        parts.append("attacker")
    acting = f.to_act == seat and f.phase is not Phase.OVER
    if acting:
        shapes.append(Circle(12, y_label, 6, _TOKEN, _INK, tag=f"to-act seat-{seat}"))
    shapes.append(
        Label(
            24,
            y_label,
            " · ".join(parts),
            size=14,
            fill=_WIN if acting else _LIGHT,
            anchor="start",
            bold=acting,
            tag=f"seat-label seat-{seat}",
        )
    )
    hand, aside = f.hands[seat], f.set_aside[seat]
    held = f.hand_sizes[seat] - (1 if f.pending_duel[seat] or f.duel[seat] is not None else 0)
    if hand is None:  # hidden: backs for every card held, set-asides included (R4.1)
        cards: list[int | None] = [None] * held
        aside_cards: list[int | None] = []
    else:
        cards, aside_cards = _listed(hand), _listed(aside) if aside is not None else []
    room = _HAND_ROOM - (150 if aside_cards else 0)
    end = _row(shapes, 20, y_cards, cards, room, values, f"hand seat-{seat}")
    if aside_cards:
        x = end + 14
        shapes.append(Label(x, y_cards + _CARD_H / 2, "set aside", size=11, fill=_DIM, anchor="start"))
        _row(shapes, x + 58, y_cards, aside_cards, 20 + _HAND_ROOM - x - 58, values, f"set-aside seat-{seat}")


def _board(shapes: list[Shape], f: TableFacts, top: float) -> float:
    """The goals, the spaces (covered ones dark, deal sizes), arrows and the Tacocat; returns
    the y below it."""
    rules = f.rules
    n = rules.n_spaces
    letters = space_letters(n)
    over = f.phase is Phase.OVER
    cell = min(64.0, (_WIDTH - 40) / (n + 2))
    left = (_WIDTH - cell * (n + 2)) / 2
    for goal, x in ((0, left), (1, left + cell * (n + 1))):
        won = f.winner == goal
        shapes.append(
            Rect(
                x + 2,
                top,
                cell - 4,
                cell,
                _WIN if won else _GOAL,
                _INK,
                radius=4,
                tag=f"goal goal-{goal}" + (" won" if won else ""),
            )
        )
        shapes.append(Label(x + cell / 2, top + cell * 0.38, f"P{goal}", size=cell * 0.22, bold=True))
        shapes.append(Label(x + cell / 2, top + cell * 0.66, "GOAL", size=cell * 0.17))
    for s in range(n):
        x = left + cell * (s + 1)
        covered, here = f.covered[s], s == f.space and not over
        fill, tag = (_COVERED, "space covered") if covered else (_TOKEN, "space tacocat") if here else (_SPACE, "space")
        shapes.append(Rect(x + 2, top, cell - 4, cell, fill, _INK, radius=4, tag=tag))
        if not covered:
            shapes.append(Label(x + cell / 2, top + cell * 0.33, letters[s], size=cell * 0.3, bold=True))
            shapes.append(Label(x + cell / 2, top + cell * 0.75, f"deal {rules.board[s]}", size=cell * 0.17))
        # the arrow of the space points at a player (R1.3): towards their side of the table
        mid, below = x + cell / 2, top + cell + 5
        for seat in (0, 1) if rules.arrows[s] is None else (rules.arrows[s],):
            down = seat == f.bottom
            dx = 0.0 if rules.arrows[s] is not None else (-7.0 if down else 7.0)
            tip, base = (below + 12, below) if down else (below, below + 12)
            shapes.append(
                Polygon(
                    ((mid + dx - 5, base), (mid + dx + 5, base), (mid + dx, tip)), _LIGHT, tag=f"arrow arrow-{seat}"
                )
            )
        if here:  # the Tacocat: its space in its colour, and a token in the corner
            shapes.append(Circle(x + cell - 11, top + 9, 5, _WIN, _INK, tag="tacocat token"))
    return top + cell + 22


def table_scene(f: TableFacts) -> Scene:
    """The picture of the table, landscape: each seat's label and hand (backs where hidden) on
    its side of the board, its duel card and its cards of the trick beside its hand (the
    attack on the attacker's side, each answer across from the card it answers, R5.5), then
    the face-up cards, the draw pile and a status line."""
    values = f.rules.values
    shapes: list[Shape] = []
    bottom, top = f.bottom, 1 - f.bottom
    _seat(shapes, f, top, 16, 30)
    y = _board(shapes, f, 116) + 4
    rows = {top: 30.0, bottom: y}
    _seat(shapes, f, bottom, y + _CARD_H + 16, y)
    duel_x, trick_x = 620.0, 700.0
    shapes.append(Label(duel_x, 16, "duel", size=11, fill=_DIM, anchor="start"))
    shapes.append(Label(trick_x, 16, "trick", size=11, fill=_DIM, anchor="start"))
    for seat in (0, 1):
        card = f.duel[seat]
        if card is not None or f.pending_duel[seat]:
            _card(shapes, duel_x, rows[seat], _CARD_W, _CARD_H, card, values, f"duel seat-{seat}")
        elif f.last_duel is not None:
            _card(shapes, duel_x, rows[seat], _CARD_W, _CARD_H, f.last_duel[seat], values, f"last-duel seat-{seat}")
    if f.attack:
        attacker = f.attacker if f.attacker is not None else top
        room = _WIDTH - trick_x - 80
        step = _step(len(f.attack), room, _CARD_W)
        for seat, cards, word in ((attacker, f.attack, "attack"), (1 - attacker, f.answers, "answers")):
            end = _row(
                shapes, trick_x, rows[seat], list(cards), room, values, f"{word.rstrip('s')} seat-{seat}", step=step
            )
            shapes.append(
                Label(
                    max(end, trick_x + _CARD_W) + 8, rows[seat] + _CARD_H / 2, word, size=11, fill=_DIM, anchor="start"
                )
            )
    row_y = y + _CARD_H + 38
    shapes.append(Label(20, row_y + _SMALL_H / 2, "face up this round", size=11, fill=_DIM, anchor="start"))
    _row(shapes, 130, row_y, _listed(f.discard), 700, values, "face-up", small=True)
    if f.draw_pile_size:
        _card(shapes, 860, row_y, _SMALL_W, _SMALL_H, None, values, "draw-pile")
    shapes.append(
        Label(
            860 + _SMALL_W + 8,
            row_y + _SMALL_H / 2,
            f"draw pile {f.draw_pile_size}",
            size=12,
            fill=_LIGHT,
            anchor="start",
            tag="draw-pile-size",
        )
    )
    status_y = row_y + _SMALL_H + 24
    shapes.append(
        Label(
            20,
            status_y,
            _status(f),
            size=14,
            fill=_WIN if f.phase is Phase.OVER else _LIGHT,
            anchor="start",
            bold=True,
            tag="status",
        )
    )
    return Scene(_WIDTH, _HEIGHT, _FELT, tuple(shapes))
