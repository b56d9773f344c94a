"""The games the web app holds, and what each viewer of a game is sent.

Three kinds of game live on the server, each under an unguessable id (`secrets.token_urlsafe`):

* `PlayGame`: a person in one seat against an agent. Everything sent to the person is built
  from their `PlayerView` (own cards and public information, R7.3) and from the settings they
  chose; never the seed (it fixes every deal) nor anything the agent knows. The move counter
  (`version`) counts the person's own moves, not all actions: the number of cards an agent
  set aside on a two-arrow space is hidden until both players finish (R4.1).
* `WatchGame`: two agents. Nobody's cards are hidden from the viewer (both hands, the seed);
  `version` counts every action.
* `ReplayGame`: a saved game (a line of a game file, `agents.replay`), replayed once when it is
  loaded; every state of it can be looked at, both hands shown (a post-mortem).

Agent moves use the same loop as `agents.human.play_human`: the acting agent's `AgentInput`
from the state, then `apply_action`. Every refusal is a `WebError` with an HTTP status and a
one-line message, raised before anything changes.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agents.arena import GameRecord, agent_rngs
from agents.base import Agent, AgentInput
from agents.registry import make_agent
from agents.replay import ReplayError, check_game, game_to_dict, replay_game
from tacocat_env.config import RulesConfig
from tacocat_env.engine import GameState, apply_action, new_game
from tacocat_env.presets import PRESETS, preset_config
from tacocat_env.render import describe_event, render_svg, render_text, render_view
from tacocat_env.view import PlayerView, player_view

#: games kept at once; the least recently used one is dropped beyond this
MAX_GAMES = 256
#: games a game file may hold, and the longest game a replay accepts (actions)
MAX_FILE_GAMES = 10_000
MAX_REPLAY_ACTIONS = 100_000
#: a seed the client may choose (and the range of the seeds the server draws)
SEED_LIMIT = 2**32
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class WebError(Exception):
    """A refused request: an HTTP status (4xx) and a one-line message; nothing was changed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = one_line(message)


def one_line(err: BaseException | str) -> str:
    """An error on one line (a pydantic report as its first problem, with the field)."""
    if isinstance(err, ValidationError):
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        return f"{where}: {message}" if where else message
    return " ".join(str(err).split()) or type(err).__name__


def fresh_seed() -> int:
    return secrets.randbelow(SEED_LIMIT)


# ---------------------------------------------------------------------------------------
# settings shared by the kinds of game
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rules:
    """The rules of a game as the client asked for them: a preset and field overrides."""

    preset: str
    overrides: dict[str, Any]
    config: RulesConfig

    @classmethod
    def make(cls, preset: str | None, overrides: dict[str, Any] | None) -> Rules:
        name = preset or "default"
        if name not in PRESETS:
            raise WebError(400, f"unknown rules preset {name!r}; presets: {', '.join(PRESETS)}")
        try:
            config = preset_config(name, **(overrides or {}))
        except (ValueError, TypeError) as err:
            raise WebError(400, f"rules: {one_line(err)}") from None
        return cls(name, dict(overrides or {}), config)

    def public(self) -> dict[str, Any]:
        return {"preset": self.preset, "overrides": self.overrides, "hash": self.config.ruleset_hash()}


def build_agent(spec: str, config: RulesConfig, where: str) -> Agent:
    """The agent of `spec`, checked against the rules (a trained policy is made for one
    ruleset); WebError 400 naming `where` otherwise."""
    try:
        agent = make_agent(spec)
        if hasattr(agent, "check_ruleset"):
            agent.check_ruleset(config.ruleset_hash())
    except (ValueError, OSError) as err:
        raise WebError(400, f"{where}: {one_line(err)}") from None
    return agent


def _record(state: GameState, seed: int) -> GameRecord:
    return GameRecord(seed=seed, ruleset_hash=state.rules.hash, winner=state.winner, truncated=state.truncated,
                      rounds=state.rounds_played, actions=list(state.actions), events=list(state.events))


def _history(events: Any, values: tuple[int, ...]) -> list[str]:
    return [describe_event(event, values) for event in events]


class Game(ABC):
    """What every kind of game has: a lock, so that two tabs cannot change it at once, what
    its viewer is sent, its game file and (except a replay) a rematch."""

    kind = ""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @contextmanager
    def locked(self, wait: float = 0.0) -> Iterator[None]:
        """Hold the game's lock; WebError 409 if another request holds it (after `wait` s)."""
        acquired = self._lock.acquire(timeout=wait) if wait > 0 else self._lock.acquire(blocking=False)
        if not acquired:
            raise WebError(409, "another request is changing this game (a second tab?); reload it")
        try:
            yield
        finally:
            self._lock.release()

    @abstractmethod
    def payload(self, game_id: str) -> dict[str, Any]:
        """The game as its viewer may see it now (the JSON of every answer about it)."""

    @abstractmethod
    def game_file(self) -> dict[str, Any]:
        """The game as a line of a game file (agents.replay)."""

    def rematch(self, swap: bool = False) -> Game:
        """A new game with the same settings and a new deal (`swap`: the seats swapped)."""
        raise WebError(400, f"a {self.kind} has no rematch; load the file again")


# ---------------------------------------------------------------------------------------
# a person against an agent
# ---------------------------------------------------------------------------------------
class PlayGame(Game):
    """A person in `seat` against the agent `opponent` (any agent spec)."""

    kind = "play"

    def __init__(self, rules: Rules, opponent: str, seat: int, seed: int | None = None) -> None:
        super().__init__()
        self.rules, self.opponent, self.seat = rules, opponent, seat
        self.agent = build_agent(opponent, rules.config, "opponent")
        self.seed = fresh_seed() if seed is None else seed
        self.state = new_game(rules.config, self.seed)
        self.agent.reset(1 - seat, agent_rngs(self.seed, 0)[1 - seat])
        self.version = 0  # the person's moves so far
        self._agent_moves()

    def _agent_moves(self) -> None:
        """The agent acts until it is the person's turn or the game is over."""
        state = self.state
        while not state.is_over and state.to_act != self.seat:
            player = state.to_act
            apply_action(state, self.agent.act(AgentInput.from_state(state, player)), player)

    def view(self) -> PlayerView:
        return player_view(self.state, self.seat)

    def move(self, action: int, version: int) -> None:
        """The person's move, made when the game was at `version`; then the agent's replies."""
        if version != self.version:
            raise WebError(409, f"stale move: it was made at move {version}, but the game is at move "
                                f"{self.version} (another tab?); reload the game")
        view = self.view()
        if self.state.is_over:
            raise WebError(409, "the game is over; start a rematch")
        codec = view.rules.codec
        if action >= codec.size:
            raise WebError(400, f"illegal move: {action} is not an action of these rules (0..{codec.size - 1})")
        if action not in view.legal_actions:
            legal = ", ".join(f"{a} ({codec.names[a]})" for a in view.legal_actions)
            raise WebError(400, f"illegal move: {action} ({codec.names[action]}) is not legal now; legal moves: {legal}")
        apply_action(self.state, action, self.seat)
        self.version += 1
        self._agent_moves()

    def payload(self, game_id: str) -> dict[str, Any]:
        """What the person is sent: a function of their view and their own settings only."""
        view = self.view()
        names = ["you", self.opponent] if self.seat == 0 else [self.opponent, "you"]
        mask = AgentInput(view).action_mask
        codec = view.rules.codec
        over = self.state.is_over
        if not over:
            result = None
        elif view.winner is None:
            result = "No winner: the game was truncated."
        else:
            result = "You won!" if view.winner == self.seat else f"{self.opponent} won."
        return {
            "game": game_id, "kind": self.kind, "version": self.version, "seat": self.seat,
            "opponent": self.opponent, "names": names, "rules": self.rules.public(),
            "svg": render_svg(view, names=(names[0], names[1])), "text": render_view(view),
            "history": _history(view.events, view.rules.values),
            "moves": [{"action": int(a), "name": codec.names[a]} for a in mask.nonzero()[0]],
            "over": over, "winner": view.winner if over else None, "result": result,
        }

    def game_file(self) -> dict[str, Any]:
        if not self.state.is_over:
            raise WebError(409, "the game file is available once the game is over")
        agents = ["human", self.opponent] if self.seat == 0 else [self.opponent, "human"]
        return game_to_dict(_record(self.state, self.seed), agents, self.rules.config, finished=True)

    def rematch(self, swap: bool = False) -> PlayGame:
        return PlayGame(self.rules, self.opponent, 1 - self.seat if swap else self.seat)


# ---------------------------------------------------------------------------------------
# two agents
# ---------------------------------------------------------------------------------------
class WatchGame(Game):
    """Two agents play; the viewer sees everything (both hands), one action at a time."""

    kind = "watch"

    def __init__(self, rules: Rules, agents: tuple[str, str], seed: int | None = None) -> None:
        super().__init__()
        self.rules, self.specs = rules, agents
        self.agents = [build_agent(spec, rules.config, f"agents[{i}]") for i, spec in enumerate(agents)]
        self.seed = fresh_seed() if seed is None else seed
        self.state = new_game(rules.config, self.seed)
        for player, (agent, rng) in enumerate(zip(self.agents, agent_rngs(self.seed, 0))):
            agent.reset(player, rng)

    @property
    def version(self) -> int:
        return len(self.state.actions)

    def step(self, version: int) -> None:
        """One action of the agent to act, asked for when the game was at `version`."""
        if version != self.version:
            raise WebError(409, f"stale step: it was asked for at action {version}, but the game is at action "
                                f"{self.version} (another tab?); reload the game")
        if self.state.is_over:
            raise WebError(409, "the game is over; start a rematch")
        player = self.state.to_act
        apply_action(self.state, self.agents[player].act(AgentInput.from_state(self.state, player)), player)

    def payload(self, game_id: str) -> dict[str, Any]:
        state = self.state
        names = (self.specs[0], self.specs[1])
        last = None
        if state.actions:
            player, action = state.actions[-1]
            last = f"player_{player} ({names[player]}): {state.rules.codec.names[action]}"
        over = state.is_over
        return {
            "game": game_id, "kind": self.kind, "version": self.version, "seed": self.seed, "names": list(names),
            "rules": self.rules.public(), "svg": render_svg(state, reveal=True, names=names),
            "text": render_text(state), "history": _history(state.events, state.rules.values), "last": last,
            "over": over, "winner": state.winner if over else None,
            "result": _result(state, names) if over else None,
        }

    def game_file(self) -> dict[str, Any]:
        if not self.state.is_over:
            raise WebError(409, "the game file is available once the game is over")
        return game_to_dict(_record(self.state, self.seed), list(self.specs), self.rules.config, finished=True)

    def rematch(self, swap: bool = False) -> WatchGame:
        return WatchGame(self.rules, (self.specs[1], self.specs[0]) if swap else self.specs)


def _result(state: GameState, names: tuple[str, str]) -> str:
    if state.winner is None:
        return "No winner: the game was truncated."
    return f"{names[state.winner]} (player_{state.winner}) won."


# ---------------------------------------------------------------------------------------
# a saved game
# ---------------------------------------------------------------------------------------
def read_game_file(text: str, index: int) -> dict[str, Any]:
    """Game `index` of a game file's text (JSON lines, agents.replay), checked; WebError 400
    naming the line otherwise."""
    games = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            game = json.loads(line)
        except (ValueError, RecursionError) as err:
            raise WebError(400, f"line {number}: not valid JSON ({one_line(err)})") from None
        if not isinstance(game, dict) or "seed" not in game or "actions" not in game:
            raise WebError(400, f"line {number}: not a game record (needs 'seed' and 'actions')")
        games.append((number, game))
        if len(games) > MAX_FILE_GAMES:
            raise WebError(400, f"the file holds more than {MAX_FILE_GAMES} games")
    if not games:
        raise WebError(400, "the file holds no games")
    if index >= len(games):
        raise WebError(400, f"game {index}: the file holds {len(games)} game(s) (0..{len(games) - 1})")
    number, game = games[index]
    try:
        check_game(game, f"line {number}")
    except ReplayError as err:
        raise WebError(400, str(err)) from None
    if len(game["actions"]) > MAX_REPLAY_ACTIONS:
        raise WebError(400, f"line {number}: more than {MAX_REPLAY_ACTIONS} actions")
    return game


@dataclass
class _Frame:
    state: GameState
    action: str | None = None


class ReplayGame(Game):
    """A saved game, replayed once; `payload(game_id, step)` shows the state after `step`
    actions (the deal by default)."""

    kind = "replay"

    def __init__(self, game: dict[str, Any]) -> None:
        super().__init__()
        states: list[GameState] = []
        try:
            replay_game(game, on_state=lambda state: states.append(state.clone()))
        except (ReplayError, ValueError) as err:
            raise WebError(400, f"the game cannot be replayed: {one_line(err)}") from None
        self.game = game
        agents = game.get("agents") or ["player_0", "player_1"]
        self.names = (str(agents[0]), str(agents[1]))
        names = states[0].rules.codec.names
        self.frames = [_Frame(states[0])]
        for state, (player, action, *_) in zip(states[1:], game["actions"]):
            self.frames.append(_Frame(state, f"player_{player} ({self.names[player]}): {names[action]}"))

    @property
    def steps(self) -> int:
        return len(self.frames) - 1

    def payload(self, game_id: str, step: int = 0) -> dict[str, Any]:
        if not 0 <= step <= self.steps:
            raise WebError(400, f"step {step} is out of range: the game has steps 0..{self.steps}")
        frame = self.frames[step]
        state = frame.state
        over = state.is_over
        return {
            "game": game_id, "kind": self.kind, "step": step, "steps": self.steps, "seed": self.game["seed"],
            "names": list(self.names), "svg": render_svg(state, reveal=True, names=self.names),
            "text": render_text(state), "history": _history(state.events, state.rules.values), "last": frame.action,
            "over": over, "winner": state.winner if over else None,
            "result": _result(state, self.names) if over else None,
        }

    def game_file(self) -> dict[str, Any]:
        return self.game


# ---------------------------------------------------------------------------------------
# the store
# ---------------------------------------------------------------------------------------
@dataclass
class GameStore:
    """The games by id, at most `limit` (the least recently used one is dropped first)."""

    limit: int = MAX_GAMES
    _games: OrderedDict[str, Game] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, game: Game) -> str:
        game_id = secrets.token_urlsafe(18)
        with self._lock:
            self._games[game_id] = game
            while len(self._games) > self.limit:
                self._games.popitem(last=False)
        return game_id

    def get(self, game_id: str) -> Game:
        with self._lock:
            game = self._games.get(game_id) if _ID.fullmatch(game_id) else None
            if game is None:
                raise WebError(404, "unknown game id (games are kept while the server runs, the newest "
                                    f"{self.limit}); start a new game")
            self._games.move_to_end(game_id)
            return game

    def __len__(self) -> int:
        return len(self._games)
