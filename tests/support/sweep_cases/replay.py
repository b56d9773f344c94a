"""Bad-input sweep: `tacocat replay --gif`, issue 24.

Output paths that cannot be written and games that cannot be replayed must be refused before
any frame is drawn (drawing a whole game takes tens of seconds) and leave no progress bar.
Each CLI case runs the CLI in-process with frame drawing made to fail, so a case that draws a
frame before refusing, prints a traceback or a progress bar, or exits 0 is not "clear".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

from .case import Case, CliRefused, run_cli


def _no_frame(state: object) -> None:
    raise RuntimeError("a frame was drawn before the input was refused")


def _invoke(args: list[str]) -> None:
    """The CLI with frame drawing made to fail; a progress bar after the error is not clear."""
    with mock.patch("tacocat.game.render.raster.render_image", _no_frame):
        run_cli(args, never_printed=("drawing frames",))


def _illegal(game: dict) -> dict:
    """`game` with its sixth action replaced by one that is not legal there."""
    from tacocat import RulesConfig, apply_action, legal_actions, new_game

    state = new_game(RulesConfig(), game["seed"])
    for player, action, _name in game["actions"][:5]:
        apply_action(state, action, player)
    illegal = next(a for a in range(state.rules.codec.size) if a not in legal_actions(state))
    return {**game, "actions": [*game["actions"][:5], [state.to_act, illegal], *game["actions"][6:]]}


def cases(tmp: Path) -> Iterator[Case]:
    from tacocat import RulesConfig
    from tacocat.agents.registry import make_agent
    from tacocat.evaluation.arena import play_game
    from tacocat.evaluation.game_files import check_output_file, game_to_dict

    good = game_to_dict(
        play_game([make_agent("random"), make_agent("highcard")], seed=5), ["random", "highcard"], RulesConfig()
    )
    files = {
        "good": good,
        "illegal": _illegal(good),
        "winner": {**good, "winner": 1 - good["winner"] if good["winner"] is not None else 0},
        "hash": {**good, "ruleset_hash": "0" * 16},
    }
    for name, game in files.items():
        (tmp / f"{name}.jsonl").write_text(json.dumps(game) + "\n")
    (tmp / "other_rules.yaml").write_text("max_rounds: 5\n")
    (tmp / "notjson.jsonl").write_text("{seed: 1\n")
    (tmp / "folder").mkdir(exist_ok=True)
    t = str(tmp)
    unwritable = "/proc/tacocat.gif" if Path("/proc").is_dir() else "/dev/null/tacocat.gif"
    commands = [
        # the cases
        ["replay", f"{t}/good.jsonl", "--gif", unwritable],
        ["replay", f"{t}/illegal.jsonl", "--gif", f"{t}/out.gif"],
        # more of the same surface
        ["replay", f"{t}/good.jsonl", "--gif", f"{t}/folder"],
        ["replay", f"{t}/good.jsonl", "--gif", f"{t}/missing/x.gif"],
        ["replay", f"{t}/good.jsonl", "--gif", f"{t}/good.jsonl/x.gif"],
        ["replay", f"{t}/good.jsonl", "--gif", f"{t}/x.png"],
        ["replay", f"{t}/good.jsonl", "--gif", ""],
        ["replay", f"{t}/good.jsonl", "--gif", "/dev/null"],
        ["replay", f"{t}/winner.jsonl", "--gif", f"{t}/out.gif"],
        ["replay", f"{t}/hash.jsonl", "--gif", f"{t}/out.gif"],
        ["replay", f"{t}/good.jsonl", "--gif", f"{t}/out.gif", "--rules", f"{t}/other_rules.yaml"],
        ["replay", f"{t}/good.jsonl", "--gif", f"{t}/out.gif", "--game", "3"],
        ["replay", f"{t}/notjson.jsonl", "--gif", f"{t}/out.gif"],
    ]
    for args in commands:
        yield Case(
            "replay",
            "tacocat " + " ".join(a.replace(t, "$TMP") for a in args),
            lambda a=args: _invoke(a),
            (CliRefused,),
        )
    for name, path in (
        ("a folder", tmp / "folder"),
        ("a .txt name", tmp / "x.txt"),
        ("under a file", tmp / "good.jsonl" / "x.gif"),
        ("in /proc", Path(unwritable)),
    ):
        yield Case(
            "replay", f"check_output_file({name})", lambda p=path: check_output_file(p, ".gif"), (ValueError, OSError)
        )
