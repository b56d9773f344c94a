"""The games the web app holds, and what each viewer of a game is sent.

Three kinds of game live on the server, each under an unguessable id (`secrets.token_urlsafe`):

* `PlayGame`: a person in one seat against an agent. Everything sent to the person is built
  from their `PlayerView` (own cards and public information, R7.3) and from the settings they
  chose; never the seed while the game is on (it fixes every deal) nor anything the agent
  knows. The move counter (`version`) counts the person's own moves, not all actions: the
  number of cards an agent set aside on a two-arrow space is hidden until both players finish
  (R4.1). The finished game's file holds the seed: nothing is hidden any more. A move's answer
  carries the agent's replies to it for the page to step through: the person's view after
  each agent action that made public events (actions without any, set-asides and a duel card
  chosen face down, make no reply, so their number stays hidden).
* `WatchGame`: two agents. Nobody's cards are hidden from the viewer (both hands, the seed);
  `version` counts every action.
* `ReplayGame`: a saved game (a line of a game file, `tacocat.evaluation.game_files`), replayed once when it is
  loaded; every state of it can be looked at, both hands shown (a post-mortem). It keeps a
  copy of the state without history every `CHECKPOINT_EVERY` actions and the public history
  once, so its memory is linear in the game's length, and a frame replays at most
  `CHECKPOINT_EVERY - 1` actions.

Agent moves use the same loop as `tacocat.cli.human.play_human`: the acting agent's `AgentInput`
from the state, then `apply_action`, each after `Budget.check` (tacocat.web.work: the request's
deadline, or its client gone). A person's move is the engine's to judge: `apply_action` on a
copy of the game, its refusal (an illegal action, a finished game) turned into the WebError.
Every refusal is a `WebError` with an HTTP status and a one-line message, raised before
anything changes.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import threading
import time
from abc import ABC, abstractmethod
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from starlette.concurrency import run_in_threadpool

from tacocat.agents.base import AgentInput
from tacocat.evaluation.arena import GameRecord, agent_rngs
from tacocat.evaluation.game_files import ReplayError, check_game, game_to_dict, replay_game
from tacocat.game.actions import ActionCodec
from tacocat.game.config import RulesConfig
from tacocat.game.engine import apply_action, new_game
from tacocat.game.errors import ActionOutOfRangeError, GameOverError, IllegalActionError, one_line
from tacocat.game.events import EventKind
from tacocat.game.presets import PRESETS, preset_config
from tacocat.game.render.svg import render_svg
from tacocat.game.render.text import describe_event, distinct_names, render_text, render_view
from tacocat.game.ruleset import Ruleset
from tacocat.game.state import GameState
from tacocat.game.view import PlayerView, player_view
from tacocat.web.errors import WebError, check_text

if TYPE_CHECKING:
    from tacocat.web.specs import AgentChoice
    from tacocat.web.work import Budget

#: games kept at once, and the actions they may hold together (a replay holds its length)
MAX_GAMES = 256
MAX_HELD_ACTIONS = 1_000_000
#: a person's game not over and used within this many seconds is never dropped for another
IDLE_S = 30 * 60.0
#: games a game file may hold, and the longest game a replay accepts (actions)
MAX_FILE_GAMES = 10_000
MAX_REPLAY_ACTIONS = 100_000
#: a replay keeps the state (without history) every this many actions
CHECKPOINT_EVERY = 64
#: a seed the client may choose (and the range of the seeds the server draws)
SEED_LIMIT = 2**32
#: how often a read waiting for a change in progress looks again (s)
LOCK_POLL_S = 0.02
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
T = TypeVar("T")


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


def _as_line(game: dict[str, Any]) -> str:
    return json.dumps(game, separators=(",", ":"))


def _history(events: Any, rules: Ruleset, names: tuple[str, str]) -> list[str]:
    return [describe_event(event, rules, names) for event in events]


def _tables(subject: GameState | PlayerView, names: tuple[str, str], reveal: bool = False) -> dict[str, str]:
    """The table as SVG, wide and for narrow screens (the page shows the one that fits)."""
    return {
        "svg": render_svg(subject, reveal=reveal, names=names),
        "svg_narrow": render_svg(subject, reveal=reveal, names=names, narrow=True),
    }


class Game(ABC):
    """What every kind of game has: a lock, so that two tabs cannot change it at once, what
    its viewer is sent, its game file, (except a replay) a rematch, and what the store needs
    to know: whether a person is playing it, how many actions it holds, when it was last used."""

    kind = ""

    def __init__(self, slow: bool = False) -> None:
        self._lock = threading.Lock()
        self.slow = slow  # its agents think slowly (tacocat.web.work.Thinking)
        self.used = time.monotonic()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the game's lock; WebError 409 if another request holds it."""
        if not self._lock.acquire(blocking=False):
            raise WebError(409, "another request is changing this game (a second tab?); reload it")
        try:
            yield
        finally:
            self._lock.release()

    async def read(self, read: Callable[[], T], wait: float) -> T:
        """`read()` in a worker thread under the game's lock; waits up to `wait` s for a change
        in progress (an agent thinking) without holding a thread, then WebError 409."""
        waited = 0.0
        while not self._lock.acquire(blocking=False):
            if waited >= wait:
                raise WebError(409, f"another request has been changing this game for {wait:g} s; try again")
            await asyncio.sleep(LOCK_POLL_S)
            waited += LOCK_POLL_S
        try:
            return await run_in_threadpool(read)
        finally:
            self._lock.release()

    @property
    def in_progress(self) -> bool:
        """A person is playing it and it is not over (the store keeps it while it is used)."""
        return False

    @property
    @abstractmethod
    def size(self) -> int:
        """The actions it holds."""

    @abstractmethod
    def payload(self, game_id: str) -> dict[str, Any]:
        """The game as its viewer may see it now (the JSON of every answer about it)."""

    @abstractmethod
    def game_file(self) -> str:
        """The game as a line of a game file (tacocat.evaluation.game_files), without the newline."""

    def rematch(self, swap: bool, budget: Budget) -> Game:
        """A new game with the same settings and a new deal (`swap`: the seats swapped)."""
        raise WebError(400, f"a {self.kind} has no rematch; load the file again")


# ---------------------------------------------------------------------------------------
# a person against an agent
# ---------------------------------------------------------------------------------------
class PlayGame(Game):
    """A person in `seat` against the agent `opponent` (a spec the server accepted)."""

    kind = "play"

    def __init__(self, rules: Rules, opponent: AgentChoice, seat: int, seed: int | None, budget: Budget) -> None:
        super().__init__(opponent.slow)
        self.rules, self.choice, self.seat = rules, opponent, seat
        self.opponent = opponent.text
        self.agent = opponent.build(rules.config, "opponent")
        self.seed = fresh_seed() if seed is None else seed
        self.state = new_game(rules.config, self.seed)
        self.agent.reset(1 - seat, agent_rngs(self.seed, 0)[1 - seat])
        self.version = 0  # the person's moves so far
        self.replies = self._agent_moves(self.state, budget)

    @property
    def names(self) -> tuple[str, str]:
        """The players as the person reads them: "you" and the agent's name."""
        return ("you", self.opponent) if self.seat == 0 else (self.opponent, "you")

    def _agent_moves(self, state: GameState, budget: Budget) -> list[dict[str, Any]]:
        """The agent acts until it is the person's turn or the game is over. Returns its
        replies as the page steps through them: after each of its actions that made public
        events, the person's table then and those events in words. (Only actions with public
        events: how many cards it set aside, or when it chose its duel card, stay hidden, R4.1.)"""
        replies: list[dict[str, Any]] = []
        while not state.is_over and state.to_act != self.seat:
            budget.check()
            player = state.to_act
            seen = len(state.events)
            apply_action(state, self.agent.act(AgentInput.from_state(state, player)), player)
            if len(state.events) > seen:
                view = player_view(state, self.seat)
                lines = _history(view.events[seen:], view.rules, self.names)
                replies.append({"seat": player, "lines": lines, **_tables(view, self.names)})
        return replies

    def view(self) -> PlayerView:
        return player_view(self.state, self.seat)

    @property
    def in_progress(self) -> bool:
        return not self.state.is_over

    @property
    def size(self) -> int:
        return len(self.state.actions)

    def move(self, action: int, version: int, budget: Budget) -> None:
        """The person's move, made when the game was at `version`; then the agent's replies.
        They are played on a copy, which becomes the game only if every reply was made: a
        request stopped by its budget changes nothing (the agent's generator is put back)."""
        if version != self.version:
            raise WebError(
                409,
                f"stale move: it was made at move {version}, but the game is at move "
                f"{self.version} (another tab?); reload the game",
            )
        trial = self.state.clone()
        generator = self.agent.rng.bit_generator.state
        try:
            apply_action(trial, action, self.seat)  # the engine's refusal leaves `trial` (and the game) unchanged
        except (GameOverError, IllegalActionError) as err:
            raise _refused_move(err, action, trial.rules.codec) from None
        try:
            replies = self._agent_moves(trial, budget)
        except BaseException:
            self.agent.rng.bit_generator.state = generator
            raise
        self.state, self.version, self.replies = trial, self.version + 1, replies

    def payload(self, game_id: str) -> dict[str, Any]:
        """What the person is sent: a function of their view and their own settings only."""
        view = self.view()
        names = self.names
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
            "game": game_id,
            "kind": self.kind,
            "version": self.version,
            "seat": self.seat,
            "opponent": self.opponent,
            "names": list(names),
            "rules": self.rules.public(),
            **_tables(view, names),
            "text": render_view(view, self.opponent),
            "history": _history(view.events, view.rules, names),
            "moves": [
                {"action": int(a), "name": codec.names[a], "label": _label(view, int(a))} for a in mask.nonzero()[0]
            ],
            "replies": self.replies,
            "over": over,
            "winner": view.winner if over else None,
            "result": result,
        }

    def game_file(self) -> str:
        if not self.state.is_over:
            raise WebError(409, "the game file is available once the game is over")
        agents = ["human", self.opponent] if self.seat == 0 else [self.opponent, "human"]
        return _as_line(game_to_dict(GameRecord.of(self.state, self.seed), agents, self.rules.config, finished=True))

    def rematch(self, swap: bool, budget: Budget) -> PlayGame:
        return PlayGame(self.rules, self.choice, 1 - self.seat if swap else self.seat, None, budget)


def _label(view: PlayerView, action: int) -> str:
    """A move's button: its name without the group ("play a 7"); a sacrifice names the card
    it plays (R5.5: the lowest)."""
    name = view.rules.codec.names[action].split(": ", 1)[-1]
    if name == "sacrifice":
        lowest = next(v for v, n in enumerate(view.hand) if n)
        return f"sacrifice your lowest card, {view.rules.values[lowest]}"
    return name


def _refused_move(err: GameOverError | IllegalActionError, action: int, codec: ActionCodec) -> WebError:
    """The engine's refusal of a person's `action` as a WebError: 409 when the game is over, 400
    for an action that is not legal (out of range or not legal now), naming the legal moves.
    (The person always moves in their own turn: the agent's replies run until it comes, so the
    engine's NotYourTurnError would be the server's fault, a 500.)"""
    if isinstance(err, GameOverError):
        return WebError(409, "the game is over; start a rematch")
    legal = ", ".join(f"{a} ({name})" for a, name in zip(err.legal_actions, err.legal_moves, strict=True))
    if isinstance(err, ActionOutOfRangeError):
        return WebError(
            400, f"illegal move: {action} is not an action of these rules (0..{codec.size - 1}); legal moves: {legal}"
        )
    return WebError(400, f"illegal move: {action} ({codec.names[action]}) is not legal now; legal moves: {legal}")


# ---------------------------------------------------------------------------------------
# two agents
# ---------------------------------------------------------------------------------------
class WatchGame(Game):
    """Two agents play; the viewer sees everything (both hands), one action at a time."""

    kind = "watch"

    def __init__(self, rules: Rules, agents: tuple[AgentChoice, AgentChoice], seed: int | None = None) -> None:
        super().__init__(agents[0].slow or agents[1].slow)
        self.rules, self.choices = rules, agents
        self.specs = (agents[0].text, agents[1].text)
        self.names = distinct_names(self.specs)
        self.agents = [choice.build(rules.config, f"agents[{i}]") for i, choice in enumerate(agents)]
        self.seed = fresh_seed() if seed is None else seed
        self.state = new_game(rules.config, self.seed)
        for player, (agent, rng) in enumerate(zip(self.agents, agent_rngs(self.seed, 0), strict=True)):
            agent.reset(player, rng)

    @property
    def version(self) -> int:
        return len(self.state.actions)

    @property
    def size(self) -> int:
        return len(self.state.actions)

    def step(self, version: int, budget: Budget) -> None:
        """One action of the agent to act, asked for when the game was at `version`."""
        if version != self.version:
            raise WebError(
                409,
                f"stale step: it was asked for at action {version}, but the game is at action "
                f"{self.version} (another tab?); reload the game",
            )
        if self.state.is_over:
            raise WebError(409, "the game is over; start a rematch")
        budget.check()
        player = self.state.to_act
        apply_action(self.state, self.agents[player].act(AgentInput.from_state(self.state, player)), player)

    def payload(self, game_id: str) -> dict[str, Any]:
        state = self.state
        names = self.names
        last = None
        if state.actions:
            player, action = state.actions[-1]
            last = f"last move: {names[player]}: {state.rules.codec.names[action]}"
        over = state.is_over
        return {
            "game": game_id,
            "kind": self.kind,
            "version": self.version,
            "seed": self.seed,
            "names": list(names),
            "rules": self.rules.public(),
            **_tables(state, names, reveal=True),
            "text": render_text(state, names),
            "history": _history(state.events, state.rules, names),
            "last": last,
            "over": over,
            "winner": state.winner if over else None,
            "result": _result(state, names) if over else None,
        }

    def game_file(self) -> str:
        if not self.state.is_over:
            raise WebError(409, "the game file is available once the game is over")
        return _as_line(
            game_to_dict(GameRecord.of(self.state, self.seed), list(self.specs), self.rules.config, finished=True)
        )

    def rematch(self, swap: bool, budget: Budget) -> WatchGame:
        first, second = self.choices
        return WatchGame(self.rules, (second, first) if swap else (first, second))


def _result(state: GameState, names: tuple[str, str]) -> str:
    if state.winner is None:
        return "No winner: the game was truncated."
    return f"{names[state.winner]} won."


# ---------------------------------------------------------------------------------------
# a saved game
# ---------------------------------------------------------------------------------------
def read_game_file(text: str, index: int) -> dict[str, Any]:
    """Game `index` of a game file's text (JSON lines, tacocat.evaluation.game_files), checked; WebError 400
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
    check_text(game, f"line {number}")
    try:
        check_game(game, f"line {number}")
    except ReplayError as err:
        raise WebError(400, str(err)) from None
    if len(game["actions"]) > MAX_REPLAY_ACTIONS:
        raise WebError(400, f"line {number}: more than {MAX_REPLAY_ACTIONS} actions")
    return game


class ReplayGame(Game):
    """A saved game, replayed once; `payload(game_id, step)` shows the state after `step`
    actions (the deal by default), rebuilt from the checkpoint before it."""

    kind = "replay"

    def __init__(self, game: dict[str, Any], budget: Budget) -> None:
        super().__init__()
        self._checkpoints: list[GameState] = []
        self._events = array("I")  # the number of public events after each step
        try:
            final = replay_game(game, on_state=lambda state: self._keep(state, budget)).state
        except (ReplayError, ValueError) as err:
            raise WebError(400, f"the game cannot be replayed: {one_line(err)}") from None
        self._players = array("B", (entry[0] for entry in game["actions"]))
        self._actions = array("I", (entry[1] for entry in game["actions"]))
        agents = game.get("agents") or ["player_0", "player_1"]
        self.names = distinct_names((str(agents[0]), str(agents[1])))
        # the Tacocat's moves (at most one a decisive round, R6.5) and the event each is: all
        # a picture or text of a step reads of the public history (the score)
        self._moves = [(i, event) for i, event in enumerate(final.events) if event.kind is EventKind.MOVE]
        self._history = _history(final.events, final.rules, self.names)
        self._names = final.rules.codec.names
        self.seed = game["seed"]
        self._line = _as_line(game)

    def _keep(self, state: GameState, budget: Budget) -> None:
        """Called with the state after every step (the deal first)."""
        if len(self._events) % CHECKPOINT_EVERY == 0:
            budget.check()
            self._checkpoints.append(state.clone(history=False))
        self._events.append(len(state.events))

    @property
    def steps(self) -> int:
        return len(self._events) - 1

    @property
    def size(self) -> int:
        return self.steps

    def state_at(self, step: int) -> GameState:
        """The state after `step` actions, without history (the public events are `_history`)."""
        first = step - step % CHECKPOINT_EVERY
        state = self._checkpoints[first // CHECKPOINT_EVERY].clone(history=False)
        for index in range(first, step):
            apply_action(state, self._actions[index], self._players[index])
        return state

    def payload(self, game_id: str, step: int = 0) -> dict[str, Any]:
        if not 0 <= step <= self.steps:
            raise WebError(400, f"step {step} is out of range: the game has steps 0..{self.steps}")
        state = self.state_at(step)
        state.events = [event for i, event in self._moves if i < self._events[step]]  # (the score)
        last = None
        if step:
            player = self._players[step - 1]
            last = f"last move: {self.names[player]}: {self._names[self._actions[step - 1]]}"
        over = state.is_over
        return {
            "game": game_id,
            "kind": self.kind,
            "step": step,
            "steps": self.steps,
            "seed": self.seed,
            "names": list(self.names),
            **_tables(state, self.names, reveal=True),
            "text": render_text(state, self.names),
            "history": self._history[: self._events[step]],
            "last": last,
            "over": over,
            "winner": state.winner if over else None,
            "result": _result(state, self.names) if over else None,
        }

    def game_file(self) -> str:
        return self._line


# ---------------------------------------------------------------------------------------
# the store
# ---------------------------------------------------------------------------------------
@dataclass
class GameStore:
    """The games by id: at most `limit`, holding at most `max_actions` actions together.
    Beyond either, games nobody is playing (finished, watched, replayed, or a person's game
    idle for `idle_s`) are dropped, the least recently used first; a person's game in progress
    never is: when only those are left, a new game is refused (503)."""

    limit: int = MAX_GAMES
    max_actions: int = MAX_HELD_ACTIONS
    idle_s: float = IDLE_S
    _games: OrderedDict[str, Game] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def new_id() -> str:
        return secrets.token_urlsafe(18)

    def add(self, game_id: str, game: Game) -> None:
        """Keep `game` under `game_id`, dropping others if need be; WebError 503 (and `game` not
        kept) when only people's games in progress are left to drop."""
        with self._lock:
            now = time.monotonic()
            held = sum(g.size for g in self._games.values()) + game.size
            for old_id in [i for i, g in self._games.items() if not self._kept(g, now)]:
                if len(self._games) < self.limit and held <= self.max_actions:
                    break
                held -= self._games.pop(old_id).size
            if len(self._games) >= self.limit or held > self.max_actions:
                raise WebError(
                    503, f"the server holds {len(self._games)} games in progress, as many as it may; try again later"
                )
            game.used = now
            self._games[game_id] = game

    def _kept(self, game: Game, now: float) -> bool:
        """A person's game in progress, used within `idle_s`: never dropped."""
        return game.in_progress and now - game.used < self.idle_s

    def get(self, game_id: str) -> Game:
        with self._lock:
            game = self._games.get(game_id) if _ID.fullmatch(game_id) else None
            if game is None:
                raise WebError(
                    404,
                    "unknown game id (games are kept while the server runs, unless dropped for "
                    "newer ones when nobody is playing them); start a new game",
                )
            self._games.move_to_end(game_id)
            game.used = time.monotonic()
            return game

    def __len__(self) -> int:
        return len(self._games)
