"""Game files: games saved as JSON lines, and replays narrated as text.

One game per line, a JSON object::

    {"format": "tacocat-game/1", "seed": <engine seed>, "ruleset_hash": "...",
     "rules": {... RulesConfig.canonical_dict() ...}, "agents": [<player_0 spec>, <player_1 spec>],
     "actions": [[player, action id, readable name], ...], "winner": 0 | 1 | null,
     "truncated": bool, "rounds": int, ...optional extra fields (match seed, deal index)}

A replay rebuilds the game with `new_game(rules, seed)` and re-applies the actions: the
engine's shuffles come from the seed, so the same cards are dealt again. The stored ruleset
hash must match the hash of the stored rules (and of a config the caller insists on), and the
stored action names and winner must match the replay; otherwise a `ReplayError` says why.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TextIO

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError, field_validator

from tacocat.evaluation.arena import GameRecord
from tacocat.game.config import RulesConfig
from tacocat.game.engine import apply_action, new_game
from tacocat.game.errors import TacocatError
from tacocat.game.events import EventKind
from tacocat.game.render.text import SEATS, board_line, describe_event, distinct_names, render_text
from tacocat.game.state import GameState

FORMAT: Final = "tacocat-game/1"


class ReplayError(ValueError):
    """A game file line that cannot be replayed faithfully."""


class GameLine(BaseModel):
    """The schema of one saved game; every field is checked before a replay starts.

    Extra fields (match seed, deal index, ...) are allowed and kept."""

    model_config = ConfigDict(extra="allow")
    format: Literal["tacocat-game/1"] = FORMAT
    seed: StrictInt = Field(ge=0, description="the engine seed of the deal")
    ruleset_hash: StrictStr | None = None
    rules: dict[str, Any] | None = None
    agents: list[StrictStr] | None = Field(default=None, min_length=2, max_length=2)
    actions: list[list[Any]]
    winner: Literal[0, 1] | None = None
    truncated: StrictBool | None = None
    rounds: StrictInt | None = Field(default=None, ge=0)

    @field_validator("actions")
    @classmethod
    def _check_actions(cls, actions: list[list[Any]]) -> list[list[Any]]:
        for index, entry in enumerate(actions):
            if len(entry) not in (2, 3):
                raise ValueError(f"entry {index} {entry!r}: needs [player, action id] or [player, action id, name]")
            player, action = entry[0], entry[1]
            if isinstance(player, bool) or player not in (0, 1):
                raise ValueError(f"entry {index} {entry!r}: the player must be 0 or 1, got {player!r}")
            if isinstance(action, bool) or not isinstance(action, int) or action < 0:
                raise ValueError(
                    f"entry {index} {entry!r}: the action id must be a non-negative integer, got {action!r}"
                )
            if len(entry) == 3 and not isinstance(entry[2], str):
                raise ValueError(f"entry {index} {entry!r}: the action name must be a string, got {entry[2]!r}")
        return actions


def check_game(game: Any, where: str = "game") -> dict[str, Any]:
    """Validate one saved game against `GameLine`; ReplayError names the field (and entry)."""
    if not isinstance(game, dict):
        raise ReplayError(f"{where}: a game must be a JSON object, got {type(game).__name__}")
    try:
        GameLine(**game)
    except ValidationError as err:
        first = err.errors()[0]
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
        message = first["msg"].removeprefix("Value error, ")
        raise ReplayError(f"{where}: field {field or '(root)'}: {message}") from None
    return game


def game_to_dict(
    record: GameRecord,
    agents: Sequence[str],
    config: RulesConfig,
    **extra: Any,
) -> dict[str, Any]:
    """The JSON-ready line of one game."""
    if record.ruleset_hash != config.ruleset_hash():
        raise ValueError(f"the record's ruleset hash {record.ruleset_hash} is not the config's {config.ruleset_hash()}")
    names = _codec_names(config)
    return {
        "format": FORMAT,
        "seed": int(record.seed),
        "ruleset_hash": record.ruleset_hash,
        "rules": config.canonical_dict(),
        "agents": list(agents),
        "actions": [[int(p), int(a), names[a]] for p, a in record.actions],
        "winner": record.winner,
        "truncated": record.truncated,
        "rounds": record.rounds,
        **extra,
    }


def _codec_names(config: RulesConfig) -> tuple[str, ...]:
    from tacocat.game.ruleset import compile_rules

    return compile_rules(config).codec.names


def save_games(
    path: str | Path,
    games: Iterable[tuple[GameRecord, Sequence[str]]] | Iterable[dict[str, Any]],
    config: RulesConfig | None = None,
    append: bool = False,
) -> int:
    """Write games as JSON lines: (record, (player_0 spec, player_1 spec)) pairs with `config`,
    or ready dicts from `game_to_dict`. Returns the number of lines written."""
    count = 0
    with Path(path).open("a" if append else "w") as f:
        for game in games:
            if isinstance(game, dict):
                line = game
            else:
                if config is None:
                    raise ValueError("save_games needs the rules config to save GameRecords")
                record, agents = game
                line = game_to_dict(record, agents, config)
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
            count += 1
    return count


def iter_games(path: str | Path) -> Iterator[dict[str, Any]]:
    """The games of a file, in order (blank lines skipped)."""
    path = Path(path)
    if path.is_dir():
        raise ReplayError(f"{path} is a folder, not a game file")
    with path.open(encoding="utf-8", errors="strict") as f:
        for number, line in enumerate(_lines(f, path), 1):
            if not line.strip():
                continue
            try:
                game = json.loads(line)
            except json.JSONDecodeError as err:
                raise ReplayError(f"{path}, line {number}: not valid JSON ({err})") from None
            if not isinstance(game, dict) or "seed" not in game or "actions" not in game:
                raise ReplayError(f"{path}, line {number}: not a game record (needs 'seed' and 'actions')")
            yield check_game(game, f"{path}, line {number}")


def _lines(f: TextIO, path: Path) -> Iterator[str]:
    try:
        yield from f
    except UnicodeDecodeError as err:
        raise ReplayError(f"{path}: not a text file ({err.reason} at byte {err.start})") from None


def load_games(path: str | Path) -> list[dict[str, Any]]:
    return list(iter_games(path))


def check_folder_writable(folder: Path) -> None:
    """OSError naming `folder` unless a new file can be made in it, tried for real (a probe
    file made and removed at once): permission bits say nothing for root, on read-only file
    systems or in places such as /proc."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise OSError(f"cannot write in {folder}: {err.strerror or err}") from None


def check_output_file(path: Path, suffix: str) -> None:
    """Fail before any work (drawing a replay's frames takes seconds) unless `path` can be
    written: a file name ending in `suffix`, not a folder, in an existing folder that accepts
    a new file, and not a read-only file. The folder is tried for real (a probe file is made
    and removed at once), which also catches read-only file systems and places such as /proc,
    where permission bits say nothing (for root, say). ValueError or OSError naming the path."""
    if path.is_dir():
        raise ValueError(f"{path} is a folder; give a file name")
    if path.suffix.lower() != suffix:
        raise ValueError(f"{path}: the file name must end in {suffix}")
    folder = path.parent
    if not folder.is_dir():
        raise ValueError(f"{folder} is not an existing folder, so {path.name} cannot be written there")
    check_folder_writable(folder)
    if path.exists() and not os.access(path, os.W_OK):
        raise PermissionError(f"cannot write {path}: the file is read-only")


def game_config(game: dict[str, Any], config: RulesConfig | None = None) -> RulesConfig:
    """The rules of a saved game, checked against its ruleset hash (and `config`, if given)."""
    stored = game.get("ruleset_hash")
    if game.get("rules") is not None:
        try:
            cfg = RulesConfig(**game["rules"])
        except ValueError as err:
            raise ReplayError(f"field rules: not a valid rules config: {' '.join(str(err).split())}") from None
    elif config is not None:
        cfg = config
    else:
        raise ReplayError("the game has no 'rules' and no config was given to replay it with")
    if stored is not None and cfg.ruleset_hash() != stored:
        raise ReplayError(
            f"ruleset hash mismatch: the game was saved under ruleset {stored}, but its rules "
            f"hash to {cfg.ruleset_hash()} (edited file, or another version of the config)"
        )
    if config is not None and config.ruleset_hash() != cfg.ruleset_hash():
        raise ReplayError(
            f"ruleset hash mismatch: the game was played under ruleset {cfg.ruleset_hash()}, "
            f"not the requested {config.ruleset_hash()}"
        )
    return cfg


@dataclass
class Replay:
    """A replayed game: the final state and the narration lines."""

    state: GameState
    lines: list[str]


def replay_game(
    game: dict[str, Any],
    config: RulesConfig | None = None,
    show_actions: bool = False,
    out: TextIO | None = None,
    on_state: Callable[[GameState], None] | None = None,
) -> Replay:
    """Re-apply a saved game's actions and narrate its public events (describe_event).

    `show_actions` also prints every action, hidden ones included (set-asides, duel cards):
    a replay is a post-mortem. `on_state` is called with the state at the start and after
    every action (e.g. to draw frames). Raises ReplayError on a hash mismatch, an action that
    is not legal, a name that does not match its id, or a different outcome.
    """
    check_game(game)
    cfg = game_config(game, config)
    state = new_game(cfg, int(game["seed"]))
    if on_state is not None:
        on_state(state)
    names = state.rules.codec.names
    agents = game.get("agents") or ["?", "?"]
    people = distinct_names((str(agents[0]), str(agents[1]))) if game.get("agents") else SEATS
    lines: list[str] = []

    def emit(text: str) -> None:
        lines.append(text)
        if out is not None:
            print(text, file=out)

    emit(f"Game: seed {game['seed']}, ruleset {cfg.ruleset_hash()}, player_0 = {agents[0]}, player_1 = {agents[1]}")
    seen = 0
    for step, entry in enumerate(game["actions"]):
        while seen < len(state.events):
            event = state.events[seen]
            if event.kind is EventKind.ROUND:
                emit("")
                emit(board_line(state))
            emit(describe_event(event, state.rules, people))
            seen += 1
        player, action = int(entry[0]), int(entry[1])
        if action >= len(names):
            raise ReplayError(f"field actions[{step}] {entry!r}: action id {action} is out of range [0, {len(names)})")
        if len(entry) > 2 and entry[2] != names[action]:
            raise ReplayError(
                f"action {step}: id {action} is {names[action]!r} under this ruleset, but the file says {entry[2]!r}"
            )
        if show_actions:
            emit(f"    player_{player} ({agents[player]}): {names[action]}")
        try:
            apply_action(state, action, player)
        except TacocatError as err:
            raise ReplayError(f"action {step} ({entry}) cannot be replayed: {err}") from None
        if on_state is not None:
            on_state(state)
    while seen < len(state.events):
        emit(describe_event(state.events[seen], state.rules, people))
        seen += 1
    emit("")
    emit(render_text(state, people))
    if "winner" in game and game["winner"] != state.winner:
        raise ReplayError(f"the replay ends with winner {state.winner}, the file says {game['winner']}")
    if not state.is_over:
        emit("(the saved game stops before the end)")
    return Replay(state, lines)
