"""A human player at the terminal, and a play loop against any registered agent.

Everything shown to the human is built from `player_view(state, seat)` (own cards plus public
information, R7) and from the public event history: the opponent's hand, their hidden
set-aside and duel cards and the draw pile are never printed. Hidden opponent actions are
narrated only as far as the rules make them visible ("player_1 has chosen a duel card").

Input: the number of a legal move (as listed), or its exact readable name ("duel: play a 7").
Numbers are stable within a step: a move keeps its number while the step lasts (set-asides of
the replace step keep theirs as cards are set aside). A move that is the only legal one is
played after a one-line notice (`confirm_forced` asks for it instead). An empty line, a letter,
an out-of-range number or an illegal name is answered with the legal moves again; "?" shows how
to play (tacocat.game.how_to_play), the situation and the moves; "q" / "quit" / end of input
(Ctrl-D) / Ctrl-C ends the game cleanly. The players are "you" and the opponent's name, the
spaces as the board draws them (tacocat.game.render.text).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.registry import make_agent
from tacocat.evaluation.arena import GameRecord, agent_rngs
from tacocat.game.actions import MoveKind
from tacocat.game.config import RulesConfig, make_config
from tacocat.game.engine import apply_action, new_game
from tacocat.game.events import EventKind
from tacocat.game.how_to_play import MOVE_GROUPS, as_text
from tacocat.game.render.text import BOARD_KEY, describe_event, render_view
from tacocat.game.view import PlayerView, player_view

QUIT_WORDS = {"q", "quit", "exit"}
HELP_WORDS = {"?", "h", "help"}


def _listed(numbers: list[int]) -> str:
    """Move numbers for a prompt: "1-7" when they run on, else "1, 3, 4"."""
    if numbers == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) > 2:
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(map(str, numbers))


class HumanQuit(Exception):
    """The human ended the game (quit, end of input or Ctrl-C)."""


# ---------------------------------------------------------------------------------------
# the human agent
# ---------------------------------------------------------------------------------------
class HumanAgent(Agent):
    """A person at the terminal: shows the player's view and reads a move number."""

    def __init__(
        self,
        input_fn: Callable[[str], str] = input,
        output_fn: Callable[[str], object] = print,
        narrate: bool = True,
        opponent: str = "opponent",
        confirm_forced: bool = False,
    ) -> None:
        super().__init__()
        self.input_fn = input_fn
        self.output_fn = output_fn
        self.narrate_events = narrate
        self.opponent = opponent
        self.confirm_forced = confirm_forced
        self._seen = 0
        self._step: tuple[int, int, int] | None = None
        self._numbers: dict[int, int] = {}  # action -> its number in the running step

    def reset(self, player: int, rng: np.random.Generator) -> None:
        super().reset(player, rng)
        self._seen = 0
        self._step, self._numbers = None, {}

    def say(self, text: str = "") -> None:
        self.output_fn(text)

    def names(self, view: PlayerView) -> tuple[str, str]:
        return ("you", self.opponent) if view.player == 0 else (self.opponent, "you")

    def narrate(self, view: PlayerView) -> None:
        """Print the public events the human has not seen yet."""
        names = self.names(view)
        for event in view.events[self._seen :]:
            if event.kind is EventKind.ROUND:
                self.say("")
            self.say("* " + describe_event(event, view.rules, names))
        self._seen = len(view.events)

    def numbered(self, view: PlayerView) -> list[tuple[int, int]]:
        """(number, action) of each legal move. A step (a phase between two public events) keeps
        its numbers: a move keeps its number while it stays legal, a new one gets the next; the
        replace step's "stop" is 1."""
        step = (view.rounds_played, int(view.phase), len(view.events))
        if step != self._step:
            self._step, self._numbers = step, {}
        moves = view.rules.codec.moves
        for action in sorted(view.legal_actions, key=lambda a: (moves[a].kind is not MoveKind.STOP, a)):
            self._numbers.setdefault(int(action), len(self._numbers) + 1)  # "stop" first: 1 ends the replace step
        return sorted((self._numbers[int(a)], int(a)) for a in view.legal_actions)

    def format_moves(self, view: PlayerView) -> str:
        names = view.rules.codec.names
        lines, groups = [], []
        for number, action in self.numbered(view):
            group = names[action].split(": ")[0]
            if group not in groups:
                groups.append(group)
            lines.append(f"  {number:>2}. {names[action]}")
        hints = [textwrap.fill(MOVE_GROUPS[g], 78, initial_indent="  ", subsequent_indent="  ") for g in groups]
        return "\n".join(hints + lines)

    def show(self, view: PlayerView) -> None:
        self.say(render_view(view, self.opponent))
        self.say(BOARD_KEY)

    def act(self, inp: AgentInput) -> int:
        view = inp.view
        if self.narrate_events:
            self.narrate(view)
        names = view.rules.codec.names
        if len(view.legal_actions) == 1 and not self.confirm_forced:
            action = int(view.legal_actions[0])
            self.say(f"Your only legal move, played for you: {names[action]}")
            return action
        self.say("")
        self.show(view)
        self.say(f"Your move ({view.phase.name.lower()}):")
        self.say(self.format_moves(view))
        return self.ask(view)

    def ask(self, view: PlayerView) -> int:
        """Read entries until one names a legal move; HumanQuit on quit / EOF / Ctrl-C."""
        legal = view.legal_actions
        codec = view.rules.codec
        numbers = dict(self.numbered(view))
        while True:
            try:
                text = self.input_fn(f"move [{_listed(list(numbers))}; ? help, q quit]: ")
            except (EOFError, KeyboardInterrupt):
                raise HumanQuit("end of input") from None
            if text is None:
                raise HumanQuit("end of input")
            entry = text.strip()
            if entry.lower() in QUIT_WORDS:
                raise HumanQuit("quit")
            if entry.lower() in HELP_WORDS:
                self.say(as_text())
                self.say("")
                self.show(view)
                self.say(self.format_moves(view))
                continue
            if entry.isdigit() and int(entry) in numbers:
                return numbers[int(entry)]
            try:
                action = codec.parse(entry) if entry else None
            except ValueError:
                action = None
            if action is not None and action in legal:
                return action
            if not entry:
                problem = "Empty entry."
            elif entry.lstrip("+-").isdigit():
                problem = f"{entry} is not a move number."
            else:
                problem = f"{entry!r} is not a legal move."
            self.say(f"{problem} Enter one of the numbers listed (? for help, q to quit):")
            self.say(self.format_moves(view))


# ---------------------------------------------------------------------------------------
# the play loop
# ---------------------------------------------------------------------------------------
@dataclass
class HumanGameResult:
    """How a game against the human ended. `winner` is a seat; None for no winner."""

    seed: int
    seat: int
    opponent: str
    winner: int | None
    quit: bool
    record: GameRecord


def _hidden_action_text(kind: MoveKind, name: str) -> str | None:
    """What the table sees of an action that produced no public event."""
    if kind is MoveKind.STOP:
        return f"{name} has finished replacing."
    if kind is MoveKind.DUEL:
        return f"{name} has chosen a duel card, face down."
    return None  # set-asides stay hidden until revealed (R4.1)


def play_human(
    opponent_spec: str | Agent,
    seat: int = 0,
    seed: int | None = None,
    input_fn: Callable[[str], str] = input,
    output_fn: Callable[[str], object] = print,
    config: RulesConfig | dict | str | None = None,
    confirm_forced: bool = False,
) -> HumanGameResult:
    """Play one game at the terminal: the human sits in `seat` against `opponent_spec`.

    `seed` fixes the deal and the opponent's randomness (None: a fresh random seed, printed).
    A move that is the only legal one is played after a notice, unless `confirm_forced`.
    The game can end early by quit / EOF; the result says so.
    """
    if seat not in (0, 1):
        raise ValueError(f"seat must be 0 or 1, got {seat}")
    cfg = config if isinstance(config, RulesConfig) else make_config(config)
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
    opponent = make_agent(opponent_spec) if isinstance(opponent_spec, str) else opponent_spec
    opp_name = opponent_spec if isinstance(opponent_spec, str) else (type(opponent).name or type(opponent).__name__)
    human = HumanAgent(input_fn, output_fn, narrate=True, opponent=opp_name, confirm_forced=confirm_forced)
    state = new_game(cfg, seed)
    gens = agent_rngs(seed, 0)
    human.reset(seat, gens[seat])
    opponent.reset(1 - seat, gens[1 - seat])
    names = state.rules.codec.names
    output_fn(
        f"Tacocat Spelled Backwards: you are player_{seat} (your goal is on the {'left' if seat == 0 else 'right'}), "
        f"against {opp_name}. Seed {seed}, ruleset {state.rules.hash}. Type ? for how to play."
    )
    quit_game = False
    try:
        while not state.is_over:
            player = state.to_act
            if player == seat:
                action = human.act(AgentInput.from_state(state, seat))
                output_fn(f"You play: {names[action]}")
                apply_action(state, action, player)
            else:
                action = opponent.act(AgentInput.from_state(state, player))
                before = len(state.events)
                apply_action(state, action, player)
                if len(state.events) == before:
                    text = _hidden_action_text(state.rules.codec.moves[action].kind, opp_name)
                    if text:
                        output_fn(text)
            human.narrate(player_view(state, seat))
    except HumanQuit:
        quit_game = True
        output_fn("Game ended by the player.")
    except KeyboardInterrupt:
        quit_game = True
        output_fn("Game interrupted.")
    if state.is_over:
        output_fn("")
        output_fn(render_view(player_view(state, seat), opp_name))
    record = GameRecord.of(state, seed)
    return HumanGameResult(seed, seat, opp_name, state.winner if state.is_over else None, quit_game, record)
