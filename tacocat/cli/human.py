"""A human player at the terminal, and a play loop against any registered agent.

Everything shown to the human is built from `player_view(state, seat)` (own cards plus public
information, R7) and from the public event history: the opponent's hand, their hidden
set-aside and duel cards and the draw pile are never printed. Hidden opponent actions are
narrated only as far as the rules make them visible ("player_1 has chosen a duel card").

Input: the number of a legal move (as listed), or its exact readable name ("duel: play a 7").
An empty line, a letter, an out-of-range number or an illegal name is answered with the legal
moves again; "?" reprints the situation; "q" / "quit" / end of input (Ctrl-D) / Ctrl-C ends
the game cleanly.
"""

from __future__ import annotations

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
from tacocat.game.render.text import describe_event, render_view
from tacocat.game.view import PlayerView, player_view

QUIT_WORDS = {"q", "quit", "exit"}
HELP_WORDS = {"?", "h", "help"}


class HumanQuit(Exception):
    """The human ended the game (quit, end of input or Ctrl-C)."""


# ---------------------------------------------------------------------------------------
# rendering a player's view
# ---------------------------------------------------------------------------------------
def format_moves(view: PlayerView) -> str:
    names = view.rules.codec.names
    return "\n".join(f"  {i:>2}. {names[a]}" for i, a in enumerate(view.legal_actions, 1))


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
    ) -> None:
        super().__init__()
        self.input_fn = input_fn
        self.output_fn = output_fn
        self.narrate_events = narrate
        self._seen = 0

    def reset(self, player: int, rng: np.random.Generator) -> None:
        super().reset(player, rng)
        self._seen = 0

    def say(self, text: str = "") -> None:
        self.output_fn(text)

    def narrate(self, view: PlayerView) -> None:
        """Print the public events the human has not seen yet."""
        values = view.rules.values
        for event in view.events[self._seen :]:
            if event.kind is EventKind.ROUND:
                self.say("")
            self.say("* " + describe_event(event, values))
        self._seen = len(view.events)

    def act(self, inp: AgentInput) -> int:
        view = inp.view
        if self.narrate_events:
            self.narrate(view)
        self.say("")
        self.say(render_view(view))
        self.say(f"Your move, player_{view.player} ({view.phase.name.lower()}):")
        self.say(format_moves(view))
        return self.ask(view)

    def ask(self, view: PlayerView) -> int:
        """Read entries until one names a legal move; HumanQuit on quit / EOF / Ctrl-C."""
        legal = view.legal_actions
        codec = view.rules.codec
        while True:
            try:
                text = self.input_fn(f"move [1-{len(legal)}, ? help, q quit]: ")
            except (EOFError, KeyboardInterrupt):
                raise HumanQuit("end of input") from None
            if text is None:
                raise HumanQuit("end of input")
            entry = text.strip()
            if entry.lower() in QUIT_WORDS:
                raise HumanQuit("quit")
            if entry.lower() in HELP_WORDS:
                self.say(render_view(view))
                self.say(format_moves(view))
                continue
            if entry.isdigit() and 1 <= int(entry) <= len(legal):
                return legal[int(entry) - 1]
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
            self.say(f"{problem} Enter a number from 1 to {len(legal)} (or q to quit):")
            self.say(format_moves(view))


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


def _hidden_action_text(kind: MoveKind, player: int) -> str | None:
    """What the table sees of an action that produced no public event."""
    if kind is MoveKind.STOP:
        return f"player_{player} has finished replacing."
    if kind is MoveKind.DUEL:
        return f"player_{player} has chosen a duel card, face down."
    return None  # set-asides stay hidden until revealed (R4.1)


def play_human(
    opponent_spec: str | Agent,
    seat: int = 0,
    seed: int | None = None,
    input_fn: Callable[[str], str] = input,
    output_fn: Callable[[str], object] = print,
    config: RulesConfig | dict | str | None = None,
) -> HumanGameResult:
    """Play one game at the terminal: the human sits in `seat` against `opponent_spec`.

    `seed` fixes the deal and the opponent's randomness (None: a fresh random seed, printed).
    The game can end early by quit / EOF; the result says so.
    """
    if seat not in (0, 1):
        raise ValueError(f"seat must be 0 or 1, got {seat}")
    cfg = config if isinstance(config, RulesConfig) else make_config(config)
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
    opponent = make_agent(opponent_spec) if isinstance(opponent_spec, str) else opponent_spec
    opp_name = opponent_spec if isinstance(opponent_spec, str) else (type(opponent).name or type(opponent).__name__)
    human = HumanAgent(input_fn, output_fn, narrate=True)
    state = new_game(cfg, seed)
    gens = agent_rngs(seed, 0)
    human.reset(seat, gens[seat])
    opponent.reset(1 - seat, gens[1 - seat])
    names = state.rules.codec.names
    output_fn(
        f"Tacocat Spelled Backwards: you are player_{seat}, against {opp_name} (player_{1 - seat}). "
        f"Seed {seed}, ruleset {state.rules.hash}."
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
                    text = _hidden_action_text(state.rules.codec.moves[action].kind, player)
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
        output_fn(render_view(player_view(state, seat)))
    record = GameRecord.of(state, seed)
    return HumanGameResult(seed, seat, opp_name, state.winner if state.is_over else None, quit_game, record)
