"""Tacocat as an OpenSpiel game: ``pyspiel.load_game("python_tacocat", {...})``.

Importing this module registers the game with pyspiel (``import tacocat`` does not import
it, nor pyspiel). The adapter only translates: every player move is applied by the reference
engine (`tacocat.game.engine`), whose action ids, legal actions and returns it exposes unchanged.

Game facts: two players, sequential moves, explicit stochastic chance, imperfect information,
zero-sum, terminal rewards: +1/-1 for reaching a goal, 0 for a truncated game (R1.5), plus the
config's optional ``round_reward`` for every decisive round won and minus it for every one lost
(the engine's round shaping summed over the game, `engine.shaped_returns`; 0 by default). The
small presets of `tacocat.game.presets` that last one round use it, so that their returns are
the round's result.

Chance. The engine's only randomness is the deal at the start of every round (R2.2, R6.4);
the cards drawn when replacing (R4.3) are the top of the dealt pile. The adapter makes those
draws explicit chance nodes with exact probabilities and then lets the engine deal them: a
round's chosen hands are the engine's `Deal` for it (`new_game` / `apply_action` with
``deal=``), and before replacement cards are drawn `reorder_pile` puts the chosen cards on top
of the (hidden, never observed) draw pile. Each hand or draw is decided value by value: for card
value v the chance node picks how many copies c the hand gets, with the multivariate
hypergeometric probability C(n_v, c) C(n_rest, k - c) / C(n_v + n_rest, k), where k cards are
still to be drawn, n_v copies of v are in the pile and n_rest cards of higher values. So every
multiset of cards has exactly one chance history (no orderings of the same hand), and
outcomes with a single possible count are applied without a chance node.
Chance action ids are the count c (0 .. max copies).

Simultaneous choices (R4.1 replace on a two-arrow space, R5.1 duel) are sequential moves in the
engine (player_0 first); nothing of the first player's choice enters the second player's
information state until the engine reveals it (tests/test_openspiel.py checks this).

Strings and tensors. The observation (``observation_string``/``observation_tensor``) is the
AEC environment's: `tacocat.game.observation.describe` and `encode`. The information state
(``information_state_string``) is the player's perfect-recall history: its seat, then in order
every card it was dealt or drew, every move it made and every public event of the engine
(R7.2); the opponent's hidden moves leave no trace. No information-state tensor is provided.

Parameters are the rules config's fields (R1), as strings where they are not numbers; empty
string or 0 means "take it from the preset": ``preset`` (a name of `tacocat.game.presets`,
default "default"), ``deck`` ("1:2 2:3 ..."), ``board`` ("4 6 9 7 9 6 4"), ``arrow_policy``,
``arrows`` ("both player_0 ..."), ``tie_policy``, ``max_rounds``, ``round_reward`` (-1: from
the preset). `game_params(config)` writes them for any config; `load_game(config_or_preset)`
loads the game.

Serialization is plain text, never a pickle. pyspiel writes a Python game's state as its
history plus a base64 pickle of the state's attributes (``__dict__=``) and unpickles that on
load, so a crafted text would run code; a Python game cannot override that C++ path. Importing
this module therefore installs `serialize_game_and_state` and `deserialize_game_and_state` as
``pyspiel.serialize_game_and_state`` / ``pyspiel.deserialize_game_and_state``: a python_tacocat
text is OpenSpiel's envelope with the game string (the rules parameters) and the action history
(``history=player:action,...``, ``move_number=n``), and loading it replays that history through
the engine, every move checked legal and every chance outcome possible. Texts of other games go
to pyspiel unchanged. `TacocatState.serialize` and `TacocatGame.deserialize_state` are the
state-section halves. Bad text and illegal actions raise `TacocatSpielError`, which is both a
``pyspiel.SpielError`` and a ``ValueError``, and change nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyspiel
from pydantic import ValidationError

from tacocat.game.config import RulesConfig
from tacocat.game.engine import apply_action, legal_actions, new_game, reorder_pile, shaped_returns
from tacocat.game.errors import TacocatError
from tacocat.game.events import Event, ReplaceRevealed, RoundDealt
from tacocat.game.observation import ObservationLayout, describe, encode
from tacocat.game.presets import preset_config
from tacocat.game.ruleset import Ruleset, compile_rules
from tacocat.game.state import Deal, GameState

GAME_NAME = "python_tacocat"

#: game parameters and their defaults ("" / 0: taken from the preset)
PARAMETERS: dict[str, Any] = {
    "preset": "default",
    "deck": "",
    "board": "",
    "arrow_policy": "",
    "arrows": "",
    "tie_policy": "",
    "max_rounds": 0,
    "round_reward": -1.0,
}

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Python Tacocat Spelled Backwards",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=PARAMETERS,
)


class TacocatSpielError(pyspiel.SpielError, TacocatError):
    """Bad input to python_tacocat: a serialized text that is not a state of the game, or an
    action that cannot be applied where it is; nothing is changed. A ``pyspiel.SpielError``, as
    OpenSpiel raises for bad input, and a ``ValueError`` (`TacocatError`), as the package does."""


# ---------------------------------------------------------------------------------------
# parameters <-> rules config
# ---------------------------------------------------------------------------------------
def config_from_params(params: dict[str, Any]) -> RulesConfig:
    """The rules config of a parameter dict (missing or empty entries: from the preset)."""
    unknown = set(params) - set(PARAMETERS)
    if unknown:
        raise ValueError(f"{GAME_NAME}: unknown parameter(s) {sorted(unknown)}; known: {sorted(PARAMETERS)}")
    merged = {**PARAMETERS, **params}
    overrides: dict[str, Any] = {}
    if merged["deck"]:
        overrides["deck"] = _parse_deck(str(merged["deck"]))
    if merged["board"]:
        overrides["board"] = tuple(_parse_ints("board", str(merged["board"])))
    if merged["arrows"]:
        overrides["arrows"] = tuple(str(merged["arrows"]).split())
    for name in ("arrow_policy", "tie_policy", "max_rounds"):
        if merged[name]:
            overrides[name] = merged[name]
    if float(merged["round_reward"]) != -1.0:
        overrides["round_reward"] = float(merged["round_reward"])
    return preset_config(str(merged["preset"]), **overrides)


def _parse_ints(name: str, text: str) -> list[int]:
    try:
        return [int(item) for item in text.split()]
    except ValueError:
        raise ValueError(f"{GAME_NAME}: parameter {name} must be integers separated by spaces") from None


def _parse_deck(text: str) -> dict[int, int]:
    deck: dict[int, int] = {}
    for index, item in enumerate(text.split(), start=1):
        value, sep, copies = item.partition(":")
        if not sep or not value or not copies:
            raise ValueError(f"{GAME_NAME}: parameter deck: entry {index} is not value:copies")
        card = _parse_ints("deck", value)[0]
        if card in deck:
            raise ValueError(f"{GAME_NAME}: parameter deck: entry {index} repeats the value {card}")
        deck[card] = _parse_ints("deck", copies)[0]
    return deck


def game_params(config: RulesConfig) -> dict[str, Any]:
    """Explicit game parameters of a rules config (`config_from_params` inverts it)."""
    return {
        "preset": "default",
        "deck": " ".join(f"{v}:{c}" for v, c in config.deck.items()),
        "board": " ".join(str(s) for s in config.board),
        "arrow_policy": config.arrow_policy,
        "arrows": " ".join(config.arrows) if config.arrows else "",
        "tie_policy": config.tie_policy,
        "max_rounds": config.max_rounds,
        "round_reward": config.round_reward,
    }


def load_game(rules: RulesConfig | str | None = None) -> pyspiel.Game:
    """The OpenSpiel game of a rules config or preset name (None: the default rules)."""
    if rules is None or isinstance(rules, str):
        return pyspiel.load_game(GAME_NAME, {"preset": rules or "default"})
    return pyspiel.load_game(GAME_NAME, game_params(rules))


# ---------------------------------------------------------------------------------------
# the game
# ---------------------------------------------------------------------------------------
class TacocatGame(pyspiel.Game):
    """Tacocat under one rules config (see the module docstring)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        params = dict(params or {})
        self.config = config_from_params(params)
        self.rules = compile_rules(self.config)
        rules = self.rules
        largest = max(rules.board)
        # every decisive round covers a space (R6.5): at most one per space
        self.max_return = 1.0 + self.config.round_reward * min(self.config.max_rounds, rules.n_spaces)
        info = pyspiel.GameInfo(
            num_distinct_actions=rules.codec.size,
            max_chance_outcomes=min(max(rules.copies), largest) + 1,
            num_players=2,
            min_utility=-self.max_return,
            max_utility=self.max_return,
            utility_sum=0.0,
            # per round: replacing <= 2 (deal + 1) moves, then every duel, attack or answer
            # plays at least one of the deal - 1 cards each player may play
            max_game_length=4 * largest * self.config.max_rounds,
        )
        super().__init__(_GAME_TYPE, info, params)
        self.layout = ObservationLayout(rules)

    def new_initial_state(self) -> TacocatState:
        return TacocatState(self)

    def deserialize_state(self, text: str) -> TacocatState:
        """The state that `TacocatState.serialize` wrote as `text`, rebuilt by replaying its
        history through the engine (every move legal, every chance outcome possible). Raises
        `TacocatSpielError` naming the first problem; nothing in the text is unpickled."""
        if not isinstance(text, str):
            raise TacocatSpielError(f"{_TEXT}: the state must be a str, got {type(text).__name__}")
        if len(text) > MAX_TEXT_CHARS:
            raise TacocatSpielError(f"{_TEXT}: {len(text)} characters, more than the limit of {MAX_TEXT_CHARS}")
        history = _parse_state(text)
        state = self.new_initial_state()
        for index, (player, action) in enumerate(history, start=1):
            to_act = state.current_player()
            if player != to_act:
                raise TacocatSpielError(
                    f"{_TEXT}: history entry {index} is a move of {_who(player)}, but {_who(to_act)} is to act there"
                )
            try:
                state.apply_action(action)
            except TacocatSpielError as error:
                raise TacocatSpielError(f"{_TEXT}: history entry {index}: {error}") from None
        return state

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> TacocatObserver:
        if params:
            raise ValueError(f"{GAME_NAME}: observer parameters are not supported, got {params}")
        obs_type = iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False)
        return TacocatObserver(obs_type, self.layout.size)


#: the generator of engine states. Only trial moves draw from it (their deals are thrown away);
#: every real round is dealt the cards its chance nodes chose.
_UNUSED_RNG = np.random.default_rng(0)


@dataclass
class _Draws:
    """Cards to be drawn by chance before a move (or the first deal) takes effect.

    `slots` are (player, count) in the order the engine draws them; `pool` is the pile they
    come from (counts per value). `chosen[i]` are the counts decided so far for slot i.
    """

    move: int | None  # the player move waiting for the cards; None for the first deal
    new_round: bool  # the cards are dealt by a round start (else: replacement draws)
    slots: list[tuple[int, int]]
    pool: list[int]
    chosen: list[list[int]] = field(default_factory=list)
    value: int = 0  # the card value the next chance node decides, in the current slot

    def current(self) -> tuple[int, int, list[int]]:
        slot = len(self.chosen) - 1
        return slot, self.slots[slot][1], self.chosen[slot]

    def available(self, value: int) -> int:
        return self.pool[value] - sum(c[value] for c in self.chosen)


class _Box:
    """The engine state and ruleset of an OpenSpiel state. OpenSpiel clones Python states
    with `copy.deepcopy`: this copies the engine state with `GameState.clone` and shares the
    immutable ruleset."""

    __slots__ = ("engine", "rules")

    def __init__(self, rules: Ruleset, engine: GameState | None) -> None:
        self.rules = rules
        self.engine = engine

    def __deepcopy__(self, memo: dict) -> _Box:
        return _Box(self.rules, None if self.engine is None else self.engine.clone(rng=_UNUSED_RNG))


class TacocatState(pyspiel.State):
    """A Tacocat game in progress: an engine state plus the chance draws still to be made."""

    def __init__(self, game: TacocatGame, engine: GameState | None = None) -> None:
        """A new game (first deal by chance) or, given `engine`, that position (its hidden
        cards as they are); the information states of a position start with each player's
        view of it."""
        super().__init__(game)
        self._box = _Box(game.rules, engine)
        self._draws: _Draws | None = None
        self._position = engine is not None  # no action history leads to it: not serializable
        if engine is None:
            self._logs: tuple[list[str], list[str]] = (["p0"], ["p1"])
            size = game.rules.board[game.config.centre]
            self._start_draws(None, True, [(0, size), (1, size)], list(game.rules.copies))
        else:
            self._logs = (["p0", "position:", describe(engine, 0)], ["p1", "position:", describe(engine, 1)])

    # -- read access ------------------------------------------------------------------------
    @property
    def engine(self) -> GameState | None:
        """The engine state (before the pending move while chance draws are being made)."""
        return self._box.engine

    @property
    def rules(self) -> Ruleset:
        return self._box.rules

    def pending_draw(self) -> tuple[int, int, bool] | None:
        """At a chance node: (player, card value index, whether it is a round's deal) of the
        count the node decides; None elsewhere."""
        if self._draws is None:
            return None
        slot, _, _ = self._draws.current()
        return self._draws.slots[slot][0], self._draws.value, self._draws.new_round

    def private_history(self, player: int) -> list[str]:
        """What `player` has seen, in order: the information state (see module docstring)."""
        return self._logs[player]

    # -- OpenSpiel API ----------------------------------------------------------------------
    def current_player(self) -> int:
        if self._draws is not None:
            return pyspiel.PlayerId.CHANCE
        engine = self._box.engine
        assert engine is not None
        return pyspiel.PlayerId.TERMINAL if engine.is_over else engine.to_act

    def is_terminal(self) -> bool:
        engine = self._box.engine
        return self._draws is None and engine is not None and engine.is_over

    def returns(self) -> list[float]:
        engine = self._box.engine
        if not self.is_terminal() or engine is None:
            return [0.0, 0.0]
        return shaped_returns(engine)

    def _legal_actions(self, player: int) -> list[int]:
        engine = self._box.engine
        assert engine is not None and player == engine.to_act
        return list(legal_actions(engine))

    def chance_outcomes(self) -> list[tuple[int, float]]:
        draws = self._draws
        if draws is None:
            raise TacocatSpielError(f"{GAME_NAME}: chance_outcomes() at a state that is not a chance node")
        return _outcomes(draws)

    def apply_action(self, action: int) -> None:
        """pyspiel's ``apply_action`` with the action checked first: an id that is no integer,
        out of range (-1 included, which OpenSpiel's C++ side stops with an internal check),
        not legal or not a possible chance outcome raises `TacocatSpielError`, and the state
        stays as it was."""
        super().apply_action(self._checked_action(action))

    def child(self, action: int) -> TacocatState:
        """pyspiel's ``child``, the action checked as `apply_action` checks it."""
        return super().child(self._checked_action(action))

    def _checked_action(self, action: object) -> int:
        """`action` as an int if its type and range fit this state; legality of a move is left
        to the engine (`_apply_move`), so the common case costs one range check."""
        if self.is_terminal():
            raise TacocatSpielError(f"{GAME_NAME}: the game is over; no action can be applied")
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TacocatSpielError(
                f"{GAME_NAME}: an action must be an integer id, got {type(action).__name__}; {self._choices()}"
            )
        action = int(action)
        if self._draws is not None:
            if action not in dict(_outcomes(self._draws)):
                raise TacocatSpielError(f"{GAME_NAME}: chance outcome {action} is not possible here; {self._choices()}")
        elif not 0 <= action < self.rules.codec.size:
            raise TacocatSpielError(
                f"{GAME_NAME}: action {action} is out of range [0, {self.rules.codec.size}); {self._choices()}"
            )
        return action

    def _choices(self) -> str:
        if self._draws is not None:
            return "possible chance outcomes: " + ", ".join(str(c) for c, _ in _outcomes(self._draws))
        names = self.rules.codec.names  # as the engine's errors write them
        return "legal: " + ", ".join(f"{a}={names[a]!r}" for a in self.legal_actions())

    def serialize(self) -> str:
        """The state as plain text, the C++ layout without its pickled ``__dict__=`` line:
        ``history=player:action,...`` and ``move_number=n``. `TacocatGame.deserialize_state`
        replays it. A state built from a position has no history and raises."""
        if self._position:
            raise TacocatSpielError(
                f"{GAME_NAME}: a state built from a position (TacocatState(game, engine)) "
                "has no action history, so it cannot be serialized"
            )
        history = ",".join(f"{item.player}:{item.action}" for item in self.full_history())
        return f"history={history}\nmove_number={self.move_number()}"

    def _apply_action(self, action: int) -> None:
        if self._draws is not None:
            self._apply_chance(action)
        else:
            self._apply_move(action)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            draws = self._draws
            if draws is None:
                return f"chance outcome {action}"
            slot, _, _ = draws.current()
            who = draws.slots[slot][0]
            return f"chance: player_{who} gets {action} x {self.rules.values[draws.value]}"
        if not 0 <= action < self.rules.codec.size:
            return f"invalid action {action}"
        return self.rules.codec.names[action]

    def __str__(self) -> str:
        engine = self._box.engine
        if engine is None:
            return "first deal in progress"
        values = self.rules.values

        def cards(counts: list[int]) -> str:
            return " ".join(str(values[v]) for v, n in enumerate(counts) for _ in range(n)) or "-"

        pile = [0] * self.rules.n_values
        for v in engine.draw_pile:
            pile[v] += 1
        lines = [
            f"round {engine.rounds_played + 1}, space {engine.space}, covered {engine.covered}, "
            f"phase {engine.phase.name.lower()}, to act {engine.to_act}, winner {engine.winner}",
            *(
                f"player_{p}: hand {cards(engine.hands[p])}, set aside {cards(engine.set_aside[p])}, "
                f"duel {engine.duel[p]}"
                for p in (0, 1)
            ),
            f"discard {cards(engine.discard)}; draw pile {cards(pile)}",
            f"trick: attack {engine.attack} answers {engine.answers}; attacker {engine.attacker}",
        ]
        if self._draws is not None:
            lines.append(f"chance: {self._draws.slots} chosen {self._draws.chosen}")
        return "\n".join(lines)

    # -- transitions ------------------------------------------------------------------------
    def _apply_move(self, action: int) -> None:
        engine = self._box.engine
        assert engine is not None
        player = engine.to_act
        trial = engine.clone(rng=_UNUSED_RNG)
        try:
            apply_action(trial, action)
        except TacocatError as error:  # an illegal move: the state is unchanged
            raise TacocatSpielError(f"{GAME_NAME}: {error}") from None
        self._logs[player].append(self.rules.codec.names[action])
        new_events = trial.events[len(engine.events) :]
        slots: list[tuple[int, int]] = []
        new_round = False
        for event in new_events:
            # the engine appends typed events: the kind "round" is a RoundDealt, "replace" a ReplaceRevealed
            if isinstance(event, RoundDealt):  # R6.4: a new round is shuffled and dealt
                new_round = True
                slots += [(0, event.deal_size), (1, event.deal_size)]
            elif isinstance(event, ReplaceRevealed) and event.cards:  # R4.3: as many cards drawn as discarded
                slots.append((event.player, len(event.cards)))
        if not slots:
            self._box.engine = trial
            self._log_events(new_events)
            return
        pool = list(self.rules.copies) if new_round else _counts(engine.draw_pile, self.rules.n_values)
        self._start_draws(action, new_round, slots, pool)

    def _start_draws(self, move: int | None, new_round: bool, slots: list[tuple[int, int]], pool: list[int]) -> None:
        draws = _Draws(move, new_round, slots, pool, chosen=[[0] * len(pool)])
        self._draws = draws
        self._advance()

    def _apply_chance(self, count: int) -> None:
        draws = self._draws
        assert draws is not None
        if count not in dict(_outcomes(draws)):
            raise TacocatSpielError(f"{GAME_NAME}: chance outcome {count} is not possible here; {self._choices()}")
        _, _, chosen = draws.current()
        chosen[draws.value] = count
        draws.value += 1
        self._advance()

    def _advance(self) -> None:
        """Apply forced chance outcomes; finish slots; resolve the draws when all are made."""
        draws = self._draws
        assert draws is not None
        while True:
            slot, size, chosen = draws.current()
            if sum(chosen) == size:
                player = draws.slots[slot][0]
                self._logs[player].append(("dealt " if draws.new_round else "drew ") + self._cards(chosen))
                if slot + 1 == len(draws.slots):
                    self._resolve()
                    return
                draws.chosen.append([0] * len(draws.pool))
                draws.value = 0
                continue
            outcomes = _outcomes(draws)
            if len(outcomes) > 1:
                return
            chosen[draws.value] = outcomes[0][0]
            draws.value += 1

    def _resolve(self) -> None:
        """Let the engine deal or draw exactly the chosen cards, then make the pending move."""
        draws = self._draws
        assert draws is not None
        self._draws = None
        rest = list(draws.pool)
        for chosen in draws.chosen:
            rest = [n - c for n, c in zip(rest, chosen, strict=True)]
        pile = [v for v, n in enumerate(rest) for _ in range(n)]
        if draws.new_round:
            hands = {player: tuple(chosen) for (player, _), chosen in zip(draws.slots, draws.chosen, strict=True)}
            deal = Deal((hands[0], hands[1]), tuple(pile))
            if draws.move is None:
                dealt = self._box.engine = new_game(self.rules, _UNUSED_RNG, deal=deal)
                self._log_events(dealt.events)
                return
            engine = self._box.engine
            assert engine is not None
            before = len(engine.events)
            apply_action(engine, draws.move, deal=deal)
            self._log_events(engine.events[before:])
            return
        engine = self._box.engine
        assert engine is not None and draws.move is not None
        # the engine draws from the end of the pile: put the first slot's cards last
        reorder_pile(
            engine, pile + [v for chosen in reversed(draws.chosen) for v, n in enumerate(chosen) for _ in range(n)]
        )
        hands_before = [list(h) for h in engine.hands]
        before = len(engine.events)
        apply_action(engine, draws.move)
        for (player, _), chosen in zip(draws.slots, draws.chosen, strict=True):
            gained = [a - b for a, b in zip(engine.hands[player], hands_before[player], strict=True)]
            assert gained == chosen, "the engine did not draw the chance outcome"
        self._log_events(engine.events[before:])

    def _log_events(self, events: Sequence[Event]) -> None:
        for event in events:
            text = " ".join(str(x) for x in event)
            self._logs[0].append(text)
            self._logs[1].append(text)

    def _cards(self, counts: list[int]) -> str:
        values = self.rules.values
        return " ".join(str(values[v]) for v, n in enumerate(counts) for _ in range(n)) or "-"


def _counts(cards: list[int], n_values: int) -> list[int]:
    out = [0] * n_values
    for v in cards:
        out[v] += 1
    return out


def _outcomes(draws: _Draws) -> list[tuple[int, float]]:
    """(count, probability) of the copies of `draws.value` in the current slot's hand:
    multivariate hypergeometric, exact (see the module docstring)."""
    _, size, chosen = draws.current()
    value = draws.value
    k = size - sum(chosen)
    n_v = draws.available(value)
    n_rest = sum(draws.available(w) for w in range(value + 1, len(draws.pool)))
    total = math.comb(n_v + n_rest, k)
    out = []
    for c in range(max(0, k - n_rest), min(n_v, k) + 1):
        out.append((c, math.comb(n_v, c) * math.comb(n_rest, k - c) / total))
    return out


# ---------------------------------------------------------------------------------------
# serialization: the game string and the action history, replayed on load
# ---------------------------------------------------------------------------------------
#: the longest serialized text read, in characters (a 60-round game of the default rules
#: takes a few KB; the limit bounds parsing and the replay before any of it starts)
MAX_TEXT_CHARS = 16 * 2**20
_TEXT = f"{GAME_NAME} serialized state"
_SECTIONS = {"[Meta]": "meta", "[Game]": "game", "[State]": "state"}
_ENTRY = re.compile(r"(-1|0|1):(\d{1,9})")
_NUMBER = re.compile(r"\d{1,9}")
_PYSPIEL_SERIALIZE = pyspiel.serialize_game_and_state
_PYSPIEL_DESERIALIZE = pyspiel.deserialize_game_and_state


def serialize_game_and_state(game: pyspiel.Game, state: pyspiel.State) -> str:
    """OpenSpiel's game-and-state text; for python_tacocat, plain text: the game string and
    `TacocatState.serialize`. Installed as ``pyspiel.serialize_game_and_state`` (other games:
    pyspiel's own)."""
    if not isinstance(state, TacocatState):
        return _PYSPIEL_SERIALIZE(game, state)
    if not isinstance(game, TacocatGame) or game.serialize() != state.get_game().serialize():
        raise TacocatSpielError(f"{GAME_NAME}: the state is not a state of the game given with it")
    return (
        "# Automatically generated by tacocat.game.openspiel: the game and its action history\n"
        f"[Meta]\nVersion: 1\n\n[Game]\n{game.serialize()}\n[State]\n{state.serialize()}\n"
    )


def deserialize_game_and_state(text: str) -> tuple[TacocatGame, TacocatState]:
    """The game and state of a text `serialize_game_and_state` wrote, the state rebuilt by
    `TacocatGame.deserialize_state`. Raises `TacocatSpielError` naming the problem for any
    other text, another game's included."""
    if not isinstance(text, str):
        raise TacocatSpielError(f"{_TEXT}: the text must be a str, got {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise TacocatSpielError(f"{_TEXT}: {len(text)} characters, more than the limit of {MAX_TEXT_CHARS}")
    sections = _sections(text)
    missing = [header for header, name in _SECTIONS.items() if name not in sections]
    if missing:
        raise TacocatSpielError(f"{_TEXT}: the text has no {' '.join(missing)} section")
    if sections["meta"] != "Version: 1":
        raise TacocatSpielError(f"{_TEXT}: the [Meta] section is not 'Version: 1'")
    game = _game_from_string(sections["game"])
    return game, game.deserialize_state(sections["state"])


def _pyspiel_deserialize_game_and_state(text: str) -> tuple[pyspiel.Game, pyspiel.State]:
    """``pyspiel.deserialize_game_and_state`` once this module is imported: a text that names
    python_tacocat is read by `deserialize_game_and_state`; any other goes to pyspiel, after a
    check of the section layout that pyspiel would refuse too (for a message naming the line)."""
    if isinstance(text, str) and GAME_NAME not in text:
        _sections(text)
        return _PYSPIEL_DESERIALIZE(text)
    return deserialize_game_and_state(text)


def _sections(text: str) -> dict[str, str]:
    """The sections of OpenSpiel's layout, read as its C++ reader reads them: blank and '#'
    lines skipped, the headers [Meta], [Game], [State] once each and in that order."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        if not line or line.startswith("#"):
            continue
        if line in _SECTIONS:
            if list(_SECTIONS).index(line) != len(found):
                raise TacocatSpielError(
                    f"serialized game and state: line {number}: the section {line} is "
                    "out of order or repeated (expected [Meta], [Game], [State])"
                )
            current = _SECTIONS[line]
            found[current] = []
        elif current is None:
            raise TacocatSpielError(
                f"serialized game and state: line {number} comes before the [Meta] section "
                "(not an OpenSpiel game-and-state text)"
            )
        else:
            found[current].append(line)
    return {name: "\n".join(lines) for name, lines in found.items()}


def _game_from_string(text: str) -> TacocatGame:
    """The game of a ``python_tacocat(name=value,...)`` string, each value typed by
    `PARAMETERS` (read here, so that errors name the parameter)."""
    prefix = f"{GAME_NAME}("
    if not (text.startswith(prefix) and text.endswith(")")):
        if text.startswith(prefix):
            what = "cut short: its game string has no closing ')'"
        elif GAME_NAME in text:
            what = "python_tacocat inside another game, whose state would be unpickled"
        else:
            what = "not a python_tacocat game"
        raise TacocatSpielError(f"{_TEXT}: the [Game] section is {what} (expected {GAME_NAME}(name=value,...))")
    params: dict[str, Any] = {}
    body = text[len(prefix) : -1]
    for item in body.split(",") if body else []:
        name, sep, value = item.partition("=")
        if not sep or name not in PARAMETERS or name in params:
            raise TacocatSpielError(
                f"{_TEXT}: the [Game] section has an entry that is not one of "
                f"{sorted(PARAMETERS)} = value, or a parameter twice"
            )
        kind = type(PARAMETERS[name])
        try:
            params[name] = kind(value)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise TacocatSpielError(f"{_TEXT}: the [Game] parameter {name} is not {what}") from None
    try:
        game = pyspiel.load_game(GAME_NAME, params)
    except ValidationError as error:  # one line, without pydantic's echo of the values
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'rules'}: {e['msg'].removeprefix('Value error, ')}"
            for e in error.errors()
        )
        raise TacocatSpielError(f"{_TEXT}: the [Game] section's rules are invalid: {problems}") from None
    except (ValueError, pyspiel.SpielError) as error:
        raise TacocatSpielError(f"{_TEXT}: the [Game] section: {str(error).removeprefix(GAME_NAME + ': ')}") from None
    assert isinstance(game, TacocatGame)
    return game


def _parse_state(text: str) -> list[tuple[int, int]]:
    """The history of a state section (``history=...`` then ``move_number=n``), checked for form."""
    lines = text.split("\n")
    if any(line.startswith("__dict__=") for line in lines):
        raise TacocatSpielError(
            f"{_TEXT}: it holds a pickled Python state (__dict__=), which is never loaded; "
            f"{GAME_NAME} states are their action history"
        )
    if len(lines) != 2 or not lines[0].startswith("history=") or not lines[1].startswith("move_number="):
        raise TacocatSpielError(
            f"{_TEXT}: the [State] section must be two lines, history=player:action,... and move_number=n"
        )
    entries = lines[0][len("history=") :]
    history: list[tuple[int, int]] = []
    for index, entry in enumerate(entries.split(",") if entries else [], start=1):
        match = _ENTRY.fullmatch(entry)
        if match is None:
            raise TacocatSpielError(
                f"{_TEXT}: history entry {index} is not player:action "
                "(player -1 for chance, 0 or 1; action a non-negative id)"
            )
        history.append((int(match[1]), int(match[2])))
    number = lines[1][len("move_number=") :]
    if _NUMBER.fullmatch(number) is None or int(number) != len(history):
        raise TacocatSpielError(f"{_TEXT}: move_number is not the number of history entries ({len(history)})")
    return history


def _who(player: int) -> str:
    if player == pyspiel.PlayerId.CHANCE:
        return "chance"
    if player == pyspiel.PlayerId.TERMINAL:
        return "nobody (the game is over)"
    return f"player_{player}"


# ---------------------------------------------------------------------------------------
# observations
# ---------------------------------------------------------------------------------------
class TacocatObserver:
    """Observation: the AEC env's `encode` vector and `describe` text. Information state
    (perfect recall): the player's private history as text, no tensor."""

    def __init__(self, iig_obs_type: Any, size: int) -> None:
        if not iig_obs_type.public_info or iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER:
            raise ValueError(f"{GAME_NAME}: only observers of one player's own information are supported")
        self.perfect_recall = bool(iig_obs_type.perfect_recall)
        self.tensor = np.zeros(0 if self.perfect_recall else size, np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: TacocatState, player: int) -> None:
        if self.perfect_recall:
            return
        engine = state.engine
        if engine is None:  # the first deal is being made
            self.tensor.fill(0)
        else:
            self.tensor[:] = encode(engine, player)

    def string_from(self, state: TacocatState, player: int) -> str:
        if self.perfect_recall:
            return "\n".join(state.private_history(player))
        engine = state.engine
        return "dealing the first round" if engine is None else describe(engine, player)


pyspiel.register_game(_GAME_TYPE, TacocatGame)
pyspiel.serialize_game_and_state = serialize_game_and_state
pyspiel.deserialize_game_and_state = _pyspiel_deserialize_game_and_state
