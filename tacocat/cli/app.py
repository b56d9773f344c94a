"""The `tacocat` command line: list agents, run matches and tournaments, play, replay.

    tacocat agents
    tacocat match random highcard --deal-pairs 200 --seed 1 --workers 2 --json out.json --save-games g.jsonl
    tacocat tournament --agents random,highcard,planner --deal-pairs 100 --seed 1 --workers 2 --out results/t1
    tacocat play --opponent planner --seat 1 --seed 7
    tacocat replay g.jsonl --game 3 --gif game3.gif
    tacocat serve --port 8000                        # play, watch and replay in the browser
    tacocat train --config tacocat/train/configs/ppo_vs_heuristics.yaml --seed 1 --set algo.learning_rate=1e-3
    tacocat evaluate runs/main_s0_<stamp>            # a finished run of any backend vs the ladder
    tacocat compare RUN_A RUN_B --opponent counter --deal-pairs 1000 --seed 2
    tacocat tune --config tacocat/train/configs/tune_ppo.yaml --trials 20 --workers 2
    tacocat exploit champion --seeds 3 --workers 2  # a best response to the champion: exploitability >= ...
    tacocat exploit counter --preset skirmish --exact

Also runnable as `python -m tacocat.cli.app`. Matches and tournaments use the duplicate
format: `--deal-pairs N` is the number of deal pairs (2N games, seats swapped on each deal).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

try:  # typer vendors its own click since 0.24
    from typer._click.core import Context
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - older typer
    from click.core import Context  # type: ignore[assignment]  # click's own classes
    from click.exceptions import ClickException, UsageError  # type: ignore[assignment]  # click's own classes

from tacocat.agents.registry import split_specs
from tacocat.game.errors import one_line
from tacocat.train.config_files import UnreadableInputError
from tacocat.train.distributed import TIMEOUT_S as JOIN_TIMEOUT_S
from tacocat.train.settings import MAX_WORKERS

#: errors caused by what the user gave (arguments, files, configs): one line, no traceback
USER_ERRORS = (ValueError, OSError, yaml.YAMLError)


class _UserErrorGroup(TyperGroup):
    """Turns a user error raised by any command into one `error: ...` line and exit status 1,
    or 2 for an input file or folder that is not there to read (`UnreadableInputError`), as
    typer's own usage errors (`tacocat --debug ...` or TACOCAT_DEBUG=1 re-raises it with its
    traceback)."""

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as err:  # a bad argument: one line, not a framed box
            if ctx.meta.get("tacocat_debug") or os.environ.get("TACOCAT_DEBUG"):
                raise
            typer.echo(f"error: {one_line(err.format_message())}", err=True)
            ctx.exit(2)
        except ClickException:
            raise
        except USER_ERRORS as err:
            if ctx.meta.get("tacocat_debug") or os.environ.get("TACOCAT_DEBUG"):
                raise
            typer.echo(f"error: {one_line(err)}", err=True)
            ctx.exit(2 if isinstance(err, UnreadableInputError) else 1)


app = typer.Typer(
    name="tacocat",
    help="Tacocat Spelled Backwards research environment: agents, matches, tournaments, play, replay, train.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_UserErrorGroup,
)


def _print_version(value: bool) -> None:
    if value:
        from tacocat import __version__

        typer.echo(f"tacocat {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show the Python traceback of an error."),
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    ctx.meta["tacocat_debug"] = debug


RulesOption = typer.Option(None, "--rules", help="Rules config YAML (default: RULES_REFERENCE defaults).")
#: the variance-reduced return (`_reduction`), in every command that plays matches against a fixed opponent
ValueOption = typer.Option(None, "--value", help="Value file for the variance-reduced return (implies --reduce).")
ReduceOption = typer.Option(
    False,
    "--reduce/--no-reduce",
    help="Also report the variance-reduced (AIVAT) return beside the plain one (the shipped value file).",
)
RolloutsOption = typer.Option(
    0,
    "--rollouts",
    min=0,
    help="With --value/--reduce: rollouts of the round per chance expectation past the replace phase "
    "(0: the value file alone; docs/EVALUATION.md says when they pay).",
)
PlayoutsOption = typer.Option(
    1, "--playouts", min=1, help="With --rollouts: playouts averaged per value where an agent samples its moves."
)
StandInOption = typer.Option(
    None,
    "--stand-in",
    help="With --rollouts: AGENT@STAND_IN, STAND_IN plays AGENT's part in the rollouts, e.g. "
    "champion:deterministic=false@champion (repeatable; AGENT: an opponent of the matches).",
)

ReplayOption = typer.Option(
    False,
    "--replay",
    help="With --rollouts: an agent that samples with unknown probabilities (counter, search) plays its "
    "rollouts from its own generator as the game left it (docs/EVALUATION.md).",
)


def _console() -> Console:
    return Console(soft_wrap=True)


def _config(rules: Path | None):
    from tacocat.game.config import make_config

    try:
        return make_config(rules)
    except OSError as err:
        raise typer.BadParameter(
            f"{rules}: cannot read the rules config ({err.strerror or err})", param_hint="--rules"
        ) from None
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--rules") from None


def _check_agent(spec: str, hint: str, config=None) -> str:
    """Build the agent once (a bad spec or model file fails before any game) and, for a trained
    model, check that it was made for these rules."""
    from tacocat.agents.registry import make_agent

    try:
        agent = make_agent(spec)
        if config is not None and hasattr(agent, "check_ruleset"):
            agent.check_ruleset(config.ruleset_hash())
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint=hint) from None
    return spec


def _check_agent_file(spec: str, hint: str) -> None:
    """The policy or model file that agent `spec` plays, checked before any work: one that is
    missing or not a valid file is a usage error (exit status 2), as in `match`. Other errors
    of the spec are left to the command's own checks."""
    from tacocat.agents.policy_file import PolicyFileError
    from tacocat.agents.registry import make_agent

    try:
        make_agent(spec)
    except PolicyFileError as err:  # a refused SB3 model too (ModelFileError is one)
        raise typer.BadParameter(str(err), param_hint=hint) from None
    except ValueError:
        return


def _check_output_file(path: Path | None, option: str) -> None:
    """Fail before any work when `path` cannot be written as a file."""
    if path is None:
        return
    if path.is_dir():
        raise typer.BadParameter(f"{path} is a folder; give a file name", param_hint=option)
    _check_parent(path, option)


def _check_output_dir(path: Path, option: str) -> None:
    """Fail before any work when `path` cannot be used as an output folder."""
    if path.exists() and not path.is_dir():
        raise typer.BadParameter(f"{path} is a file; give a folder", param_hint=option)
    _check_parent(path, option)


def _check_parent(path: Path, option: str) -> None:
    """The nearest existing folder above `path` must accept a new file (tried for real)."""
    from tacocat.evaluation.game_files import check_folder_writable

    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise typer.BadParameter(f"{parent} is a file, so {path} cannot be created", param_hint=option)
            try:
                check_folder_writable(parent)
            except OSError as err:
                raise typer.BadParameter(f"{err}", param_hint=option) from None
            return


# ---------------------------------------------------------------------------------------
@app.command("agents")
def agents_command() -> None:
    """List the registered agents (name and description)."""
    from tacocat.agents.registry import list_agents

    table = Table(title="Agents", show_lines=False)
    table.add_column("name", style="bold")
    table.add_column("description")
    for name, doc in list_agents():
        table.add_row(name, doc)
    _console().print(table)


# ---------------------------------------------------------------------------------------
def match_table(result) -> Table:
    """A rich table of a MatchResult."""
    per = result.per_agent()
    table = Table(
        title=f"{result.agent_a} (A) vs {result.agent_b} (B): {result.games} deal pairs, {result.n_games} games",
        caption=(
            f"win rate A {result.win_rate_a:.3f}  95% paired (deal pairs) [{result.ci_low:.3f}, {result.ci_high:.3f}]  "
            f"Wilson (games) [{result.wilson_low:.3f}, {result.wilson_high:.3f}] (draws count half)\n"
            f"{return_text(result)}\n"
            f"mean length {result.mean_length:.1f} actions, {result.mean_rounds:.2f} rounds; "
            f"truncated {result.truncated}\n{result.speed}, {result.wall_s:.2f} s, "
            f"{result.workers} worker(s); seed {result.seed}, ruleset {result.ruleset_hash}"
        ),
    )
    table.add_column("agent")
    for col in ("W-L-D", "as player_0", "as player_1", "score"):
        table.add_column(col, justify="right")

    def wld(d: dict) -> str:
        return f"{d['wins']}-{d['losses']}-{d['draws']}"

    for key, spec in (("A", result.agent_a), ("B", result.agent_b)):
        row = per[key]
        total = row["total"]
        table.add_row(
            f"{key}: {spec}",
            wld(total),
            wld(row["player_0"]),
            wld(row["player_1"]),
            f"{total['wins'] + 0.5 * total['draws']:g}",
        )
    return table


def return_text(result) -> str:
    """A's mean return per game with its paired interval, and the variance-reduced estimate
    beside it when the match had a value file."""
    from tacocat.evaluation.variance import describe_reduction

    low, high = result.return_ci
    text = f"mean return A {result.mean_return_a:+.3f}  95% paired (deal pairs) [{low:+.3f}, {high:+.3f}]"
    if result.reduced_ci is not None:
        low, high = result.reduced_ci
        text += (
            f"\nreduced (AIVAT) {result.reduced_return_a:+.3f}  95% paired [{low:+.3f}, {high:+.3f}]  "
            f"variance ratio {result.variance_ratio():.2f}  ({describe_reduction(result.reduction.to_dict())})"
        )
    return text


def _reduction(
    value: Path | None,
    reduce: bool,
    cfg,
    opponents: Sequence[str],
    pairing: tuple[str, str] | None = None,
    rollouts: int = 0,
    playouts: int = 1,
    stand_ins: Sequence[str] | None = None,
    replay: bool = False,
):
    """The variance reduction of a command's matches (`tacocat.evaluation.variance.Reduction`),
    None without --value or --reduce. The value file: --value (checked: one line if it does not
    fit the rules, or is seated for another pairing than `pairing`; None: games of several
    pairings), else with --reduce the shipped one for these rules and the pairing. --rollouts,
    --playouts, --stand-in and --replay shape it (one line if given without it); a stand-in names
    one of `opponents` and an agent that builds."""
    from tacocat.agents.registry import make_agent
    from tacocat.evaluation.variance import Reduction, ValueFileError, parse_stand_in, resolve_value_file

    stand_ins = list(stand_ins or ())
    if value is None and not reduce:
        given = {
            "--stand-in": bool(stand_ins),
            "--playouts": playouts > 1,
            "--replay": replay,
            "--rollouts": rollouts > 0,
        }
        shaping = next((flag for flag, on in given.items() if on), None)
        if shaping is not None:
            raise typer.BadParameter(
                "it shapes the variance reduction, which is off: add --reduce or --value", param_hint=shaping
            )
        return None
    try:
        value_file = resolve_value_file(value, cfg, pairing)
    except ValueFileError as err:
        raise typer.BadParameter(str(err), param_hint="--reduce" if value is None else "--value") from None
    try:
        pairs = tuple(parse_stand_in(text) for text in stand_ins)
        canonical = {make_agent(spec).spec: spec for spec in opponents}
        for agent, _ in pairs:
            if make_agent(agent).spec not in canonical:
                raise ValueError(f"{agent} is not an opponent of these matches ({', '.join(opponents)})")
        reduction = Reduction(str(value_file), rollouts=rollouts, playouts=playouts, stand_ins=pairs, replay=replay)
        reduction.estimator(cfg)  # every stand-in builds
    except ValueError as err:
        hint = "--stand-in" if stand_ins else "--replay" if replay else "--playouts"
        raise typer.BadParameter(str(err), param_hint=hint) from None
    return reduction


@app.command("match")
def match_command(
    agent_a: str = typer.Argument(..., help="Agent A spec, e.g. random or search:simulations=200."),
    agent_b: str = typer.Argument(..., help="Agent B spec."),
    games: int = typer.Option(
        100,
        "--deal-pairs",
        "-n",
        min=1,
        help="Deal pairs: each deal is played twice, seats swapped.",
    ),
    seed: int = typer.Option(0, "--seed", "-s", min=0, help="Match seed (deals and agents' randomness)."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Worker processes (results do not depend on it)."),
    json_path: Path | None = typer.Option(None, "--json", help="Write the result summary as JSON here."),
    save_games: Path | None = typer.Option(None, "--save-games", help="Save every game as JSON lines here."),
    rules: Path | None = RulesOption,
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    value: Path | None = ValueOption,
    reduce: bool = ReduceOption,
    rollouts: int = RolloutsOption,
    playouts: int = PlayoutsOption,
    stand_in: list[str] | None = StandInOption,
    replay: bool = ReplayOption,
) -> None:
    """Play a duplicate match between two agents and print the result."""
    from tacocat.evaluation.game_files import game_to_dict
    from tacocat.evaluation.game_files import save_games as write_games
    from tacocat.evaluation.matches import match

    cfg = _config(rules)
    _check_agent(agent_a, "AGENT_A", cfg)
    _check_agent(agent_b, "AGENT_B", cfg)
    _check_output_file(json_path, "--json")
    _check_output_file(save_games, "--save-games")
    reduction = _reduction(
        value, reduce, cfg, (agent_a, agent_b), (agent_a, agent_b), rollouts, playouts, stand_in, replay
    )
    result = match(
        agent_a,
        agent_b,
        games,
        seed,
        workers=workers,
        config=cfg,
        progress=progress,
        keep_records=save_games is not None,
        reduction=reduction,
    )
    _console().print(match_table(result))
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result.to_dict(), indent=2) + "\n")
        typer.echo(f"wrote {json_path}")
    if save_games is not None:
        save_games.parent.mkdir(parents=True, exist_ok=True)
        lines = (
            game_to_dict(record, seats, cfg, match_seed=seed, deal=index // 2, game=index)
            for index, (seats, record) in enumerate(zip(result.seat_pairs(), result.records or [], strict=False))
        )
        count = write_games(save_games, lines)
        typer.echo(f"saved {count} games to {save_games}")


# ---------------------------------------------------------------------------------------
@app.command("tournament")
def tournament_command(
    agents: list[str] = typer.Option(
        ..., "--agents", "-a", help="Agent specs, comma-separated (or the option repeated)."
    ),
    games: int = typer.Option(
        100,
        "--deal-pairs",
        "-n",
        min=1,
        help="Deal pairs per pairing (2 games each, seats swapped).",
    ),
    seed: int = typer.Option(0, "--seed", "-s", min=0, help="Seed: every pairing plays the same deals."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Worker processes."),
    out: Path = typer.Option(Path("results/tournament"), "--out", "-o", help="Output folder."),
    boot: int = typer.Option(1000, "--boot", min=0, help="Bootstrap resamples of deal pairs for the rating intervals."),
    boot_seed: int = typer.Option(0, "--boot-seed", min=0, help="Seed of the bootstrap."),
    anchor: str | None = typer.Option(None, "--anchor", help="Agent fixed at rating 0 (default: mean 0)."),
    rules: Path | None = RulesOption,
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Round robin in the duplicate format; Bradley–Terry ratings with bootstrap intervals."""
    from tacocat.evaluation.tournament import tournament

    specs = split_specs(agents)
    if len(specs) < 2:
        raise typer.BadParameter(f"need at least two agents, got {specs}", param_hint="--agents")
    if len(set(specs)) != len(specs):
        raise typer.BadParameter(f"agent specs must be distinct, got {specs}", param_hint="--agents")
    cfg = _config(rules)
    for spec in specs:
        _check_agent(spec, "--agents", cfg)
    if anchor is not None and anchor not in specs:
        raise typer.BadParameter(f"{anchor!r} is not one of {specs}", param_hint="--anchor")
    _check_output_dir(out, "--out")
    result = tournament(
        specs, games, seed, workers, out, config=cfg, n_boot=boot, boot_seed=boot_seed, anchor=anchor, progress=progress
    )
    table = Table(title=f"Tournament: {games} deal pairs per pairing, seed {seed}, ruleset {result.ruleset_hash}")
    for col in ("rank", "agent", "rating", "95% interval", "score", "games"):
        table.add_column(col, justify="left" if col == "agent" else "right")
    for rank, row in enumerate(result.leaderboard(), 1):
        table.add_row(
            str(rank),
            row["agent"],
            f"{row['rating']:.0f}",
            f"[{row['low']:.0f}, {row['high']:.0f}]",
            f"{row['score']:g}",
            str(row["games"]),
        )
    console = _console()
    console.print(table)
    matrix = Table(title="Win rate of row vs column (draws half)")
    matrix.add_column("")
    for name in specs:
        matrix.add_column(name, justify="right")
    for name, row in zip(specs, result.matrix, strict=True):
        matrix.add_row(name, *("-" if x != x else f"{x:.3f}" for x in row))
    console.print(matrix)
    typer.echo(f"wrote results.json, matrix.csv, ratings.csv, tournament.md, heatmap.png, ratings.png to {out}")


# ---------------------------------------------------------------------------------------
@app.command("play")
def play_command(
    opponent: str = typer.Option("random", "--opponent", "-o", help="Opponent agent spec."),
    seat: int = typer.Option(0, "--seat", min=0, max=1, help="Your seat: 0 (player_0) or 1 (player_1)."),
    seed: int | None = typer.Option(None, "--seed", "-s", min=0, help="Deal seed (default: random, printed)."),
    save_game: Path | None = typer.Option(None, "--save-game", help="Append the game to this JSON-lines file."),
    rules: Path | None = RulesOption,
    confirm_forced: bool = typer.Option(
        False, "--confirm-forced", help="Ask before a move that is the only legal one (default: played after a notice)."
    ),
) -> None:
    """Play a game against an agent in the terminal (enter move numbers; ? explains the game; q quits)."""
    from tacocat.cli.human import play_human
    from tacocat.evaluation.game_files import game_to_dict, save_games

    cfg = _config(rules)
    _check_agent(opponent, "--opponent", cfg)
    _check_output_file(save_game, "--save-game")
    result = play_human(opponent, seat=seat, seed=seed, config=cfg, confirm_forced=confirm_forced)
    if save_game is not None:
        seats = ["human", opponent] if seat == 0 else [opponent, "human"]
        save_games(save_game, [game_to_dict(result.record, seats, cfg, finished=not result.quit)], append=True)
        typer.echo(f"saved the game to {save_game}")


# ---------------------------------------------------------------------------------------
@app.command("replay")
def replay_command(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="A JSON-lines game file."),
    game: int = typer.Option(0, "--game", "-g", min=0, help="Index of the game in the file (0 = first)."),
    actions: bool = typer.Option(False, "--actions", help="Also show every action, hidden ones included."),
    rules: Path | None = typer.Option(None, "--rules", help="Insist the game was played under this rules YAML."),
    gif: Path | None = typer.Option(None, "--gif", help="Also draw the game, one frame per action, as this GIF."),
) -> None:
    """Replay a saved game and narrate it (and draw it as an animated GIF with --gif)."""
    from tacocat.evaluation.game_files import ReplayError, check_output_file, load_games, replay_game

    cfg = _config(rules) if rules is not None else None
    if gif is not None:
        try:  # before any work: a bad path must not wait for every frame to be drawn
            check_output_file(gif, ".gif")
        except (ValueError, OSError) as err:
            raise typer.BadParameter(str(err), param_hint="--gif") from None
    try:
        games = load_games(file)
    except ReplayError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None
    if not games:
        typer.echo(f"error: {file} holds no games", err=True)
        raise typer.Exit(1)
    if game >= len(games):
        raise typer.BadParameter(f"{file} holds {len(games)} game(s) (0..{len(games) - 1})", param_hint="--game")
    states: list = []  # with --gif: every state of the replay, drawn once the whole game replayed
    keep = None if gif is None else (lambda state: states.append(state.clone()))
    try:
        replay = replay_game(games[game], config=cfg, show_actions=actions, on_state=keep)
    except ReplayError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None
    typer.echo("\n".join(replay.lines))
    if gif is not None:
        from tqdm import tqdm

        from tacocat.game.render.raster import render_image, save_gif

        frames = [render_image(state) for state in tqdm(states, desc="drawing frames", unit="frame")]
        typer.echo(f"wrote {save_gif(frames, gif, seconds_per_frame=0.5)} ({len(frames)} frames)")


@app.command("serve")
def serve_command(
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (default: this machine only; 0.0.0.0: every network)."
    ),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free port)."),
    policies: list[Path] = typer.Option(
        [],
        "--policies",
        help="A folder whose policy files agent specs may load "
        "(path=...; repeatable; default: the shipped champion's folder and runs/).",
    ),
    allowed_hosts: list[str] = typer.Option(
        [],
        "--allowed-host",
        help="A host name the server answers requests for (repeatable; required with a --host other than loopback).",
    ),
) -> None:
    """Play against an agent, watch two agents and replay game files in the browser (a local web app)."""
    try:
        from tacocat.web.server import serve
    except ImportError as err:
        typer.echo(f"error: tacocat serve needs the 'web' extra (pip install -e '.[web]'): {err}", err=True)
        raise typer.Exit(2) from None
    serve(host, port, policies, allowed_hosts, echo=typer.echo)


@app.command("train")
def train_command(
    config: Path | None = typer.Option(None, "--config", help="Experiment YAML (tacocat/train/configs/*.yaml)."),
    seed: int | None = typer.Option(None, "--seed", min=0, help="Overrides the config's seed."),
    overrides: list[str] = typer.Option([], "--set", help="KEY=VALUE override, dotted for nested fields (repeatable)."),
    resume: Path | None = typer.Option(None, "--resume", help="Continue the interrupted run in RUN_DIR."),
    evaluate: bool = typer.Option(False, "--evaluate", help="After training, evaluate against the whole ladder."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    address: str | None = typer.Option(
        None,
        "--address",
        help="backend rllib: join the Ray cluster at HOST:PORT "
        "(default: RAY_ADDRESS, else the config's, else a local Ray runtime).",
    ),
    devices: int | None = typer.Option(
        None,
        "--devices",
        min=1,
        help="backend league: train on N JAX devices, "
        "data parallel (sets league.devices; on CPU, splits this host into N XLA "
        "devices).",
    ),
    coordinator: str | None = typer.Option(
        None,
        "--coordinator",
        help="backend league, several processes "
        "(jax.distributed): the coordinator's HOST:PORT (default: "
        "TACOCAT_COORDINATOR; a Slurm job step is detected).",
    ),
    num_processes: int | None = typer.Option(
        None,
        "--num-processes",
        min=1,
        help="with --coordinator: the number of processes (default: TACOCAT_NUM_PROCESSES).",
    ),
    process_id: int | None = typer.Option(
        None,
        "--process-id",
        min=0,
        help="with --coordinator: this process's id, 0 writes the run (default: TACOCAT_PROCESS_ID).",
    ),
    join_timeout: int = typer.Option(
        JOIN_TIMEOUT_S,
        "--join-timeout",
        min=1,
        help="with several processes: "
        "seconds to wait for the coordinator and the other processes before stopping "
        "with one line.",
    ),
) -> None:
    """Train from a YAML experiment config (file < --seed < --set): MaskablePPO, PPO on Ray RLlib
    with `backend: rllib`, or jitted PPO on the batch engine against a league with `backend: league`
    (on several devices with --devices, on several processes or hosts with --coordinator,
    --num-processes and --process-id: docs/SCALING.md)."""
    from tacocat.train import distributed
    from tacocat.train.config import load_experiment
    from tacocat.train.evaluation import evaluate_run, print_table
    from tacocat.train.loop import train
    from tacocat.train.rllib.ray_runtime import RllibSetupError
    from tacocat.train.run_dir import load_run_config

    if config is None and resume is None:
        raise typer.BadParameter("give --config FILE or --resume RUN_DIR", param_hint="--config")
    if resume is not None and (config is not None or seed is not None or overrides or devices is not None):
        raise typer.BadParameter(
            "a resumed run continues with the config saved in its run directory; --config, --seed, "
            "--set and --devices cannot be combined with --resume (start a new run to change the config)",
            param_hint="--resume",
        )
    cluster = distributed.cluster_from(coordinator, num_processes, process_id)
    if cluster is not None:  # before anything starts JAX
        distributed.join(cluster, join_timeout)
    if devices is not None:
        overrides = [*overrides, f"league.devices={devices}"]
    experiment = load_experiment(config, seed, overrides) if config is not None else None  # None: --resume
    started = time.perf_counter()
    try:
        run = train(experiment, resume=resume, progress=progress, address=address)
    except RllibSetupError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    if run is None:  # a process of a multi-process run other than process 0
        typer.echo(f"{cluster.describe() if cluster else 'this process'}: trained; process 0 writes the run")
        return
    run_dir = run.run_dir
    if evaluate:
        trained = time.perf_counter()
        resolved = load_run_config(run_dir)
        rows = evaluate_run(run_dir, resolved, progress=progress, learner=run.spec)
        print_table(rows, f"{resolved.name} (seed {resolved.seed}) vs the ladder, duplicate format")
        typer.echo(f"training {trained - started:.0f} s, evaluation {time.perf_counter() - trained:.0f} s")
    typer.echo(f"run directory: {run_dir}  (learning curve: {run_dir / 'learning_curve.png'})")


@app.command("evaluate")
def evaluate_command(
    run_dir: Path = typer.Argument(..., help="A finished run directory of any backend."),
    workers: int | None = typer.Option(
        None, "--workers", "-w", min=1, max=MAX_WORKERS, help="Worker processes (default: the run's eval.workers)."
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    value: Path | None = ValueOption,
    reduce: bool = ReduceOption,
    rollouts: int = RolloutsOption,
    playouts: int = PlayoutsOption,
    stand_in: list[str] | None = StandInOption,
    replay: bool = ReplayOption,
) -> None:
    """Evaluate a finished run's final policy against its config's eval.final (the ladder), as
    `tacocat train --evaluate` does; writes final_eval.json and final_eval.md into the run."""
    from tacocat.train.evaluation import evaluate_run, print_table
    from tacocat.train.policy import run_policy
    from tacocat.train.run_dir import load_run_config

    config = load_run_config(run_dir)
    policy = run_policy(run_dir)
    if workers is not None:
        config = config.model_copy(update={"eval": config.eval.model_copy(update={"workers": workers})})
    opponents = [opponent.agent for opponent in config.eval.final]
    reduction = _reduction(value, reduce, config.rules_config, opponents, None, rollouts, playouts, stand_in, replay)
    rows = evaluate_run(run_dir, config, progress=progress, learner=policy.spec(run_dir), reduction=reduction)
    print_table(rows, f"{config.name} (seed {config.seed}, backend {config.backend}) vs the ladder, duplicate format")
    typer.echo(f"wrote {run_dir / 'final_eval.json'} and {run_dir / 'final_eval.md'}")


@app.command("compare")
def compare_command(
    run_a: Path = typer.Argument(..., help="A finished run directory (any backend)."),
    run_b: Path = typer.Argument(..., help="Another finished run directory (any backend, the same rules)."),
    opponent: str = typer.Option("counter", "--opponent", "-o", help="The agent both runs play."),
    deal_pairs: int = typer.Option(1000, "--deal-pairs", "-n", min=1, help="Duplicate deal pairs."),
    seed: int = typer.Option(2, "--seed", "-s", min=0, help="Match seed: both runs play the same deals."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, max=MAX_WORKERS, help="Worker processes."),
    out: Path | None = typer.Option(None, "--out", help="Folder for compare.json and compare.md."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    value: Path | None = ValueOption,
    reduce: bool = ReduceOption,
    rollouts: int = RolloutsOption,
    playouts: int = PlayoutsOption,
    stand_in: list[str] | None = StandInOption,
    replay: bool = ReplayOption,
) -> None:
    """Two runs' final policies against one opponent on the same deals: their win rates and
    mean returns, and the paired intervals of the differences (over deal pairs)."""
    from tacocat.train.compare import compare_runs, markdown
    from tacocat.train.run_dir import load_run_config

    _check_agent(opponent, "--opponent")
    if out is not None:
        _check_output_dir(out, "--out")
    rules = load_run_config(run_a).rules_config
    reduction = _reduction(value, reduce, rules, [opponent], None, rollouts, playouts, stand_in, replay)
    result = compare_runs(run_a, run_b, opponent, deal_pairs, seed, workers, progress=progress, reduction=reduction)
    text = markdown(result)
    typer.echo(text, nl=False)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / "compare.md").write_text(text)


@app.command("exploit")
def exploit_command(
    agent: str = typer.Argument(
        ...,
        help="The agent to exploit: highcard, planner, counter, random, champion, "
        "league:path=... or rllib:path=... (deterministic=false: its sampling policy).",
    ),
    steps: int | None = typer.Option(
        None,
        "--steps",
        help="Env steps per run (default: exploit.yaml's 12 M, main.yaml's budget; the champion trained for 40 M).",
    ),
    seeds: int = typer.Option(1, "--seeds", help="Training runs, seeds S, S+1, ... (--seed S)."),
    seed: int = typer.Option(0, "--seed", help="The first run's seed."),
    init: str | None = typer.Option(
        None,
        "--init",
        help="both (default where AGENT has a network): a run from each start, the stronger "
        "reported, each start's figure beside it; agent: start the actor as AGENT's network, its "
        "critic warmed up first; scratch: a fresh actor (the default otherwise).",
    ),
    preset: str | None = typer.Option(
        None, "--preset", help="Train and evaluate on these preset rules (tacocat.game.presets; default: the R1 rules)."
    ),
    deal_pairs: int = typer.Option(1000, "--deal-pairs", "-n", help="Deal pairs of each exploiter against AGENT."),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Output folder: one run per seed, exploit.json, "
        "learning_curve.png (default: runs/exploit_<agent>[_<preset>]).",
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue the unfinished runs in --out, reuse finished ones."),
    workers: int = typer.Option(1, "--workers", "-w", help="Worker processes of the evaluation matches."),
    exact: bool = typer.Option(
        False,
        "--exact",
        help="Instead: AGENT's exact NashConv and best-response values on "
        "--preset (a tabular policy on the enumerated game tree), greedy and sampling side by side.",
    ),
    game: str = typer.Option(
        "tacocat",
        "--game",
        help="kuhn_poker or leduc_holdem, with --exact: AGENT is poker:path=FILE, a policy the league "
        "trained on that game (league.game), valued exactly on OpenSpiel's game.",
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress bars."),
    value: Path | None = ValueOption,
    reduce: bool = ReduceOption,
    rollouts: int = RolloutsOption,
    playouts: int = PlayoutsOption,
    stand_in: list[str] | None = StandInOption,
    replay: bool = ReplayOption,
) -> None:
    """A best response to the frozen AGENT, trained by the league on the batch engine: its win
    rate and expected return against AGENT, a lower bound on AGENT's exploitability (exploit.json)."""
    from tacocat.agents.jax_ports import POLICY_FILE_AGENTS
    from tacocat.agents.registry import parse_spec

    if game != "tacocat":
        typer.echo(_poker_exact(agent, game, exact, preset))
        return
    if exact or parse_spec(agent)[0] in POLICY_FILE_AGENTS:  # training refuses an agent without a JAX form first
        _check_agent_file(agent, "AGENT")
    if exact:
        if preset is None:
            raise ValueError("--exact needs --preset NAME: exact values need a game tree small enough to enumerate")
        from tacocat.analysis.exploit import exact_reports, format_reports

        typer.echo(format_reports(*exact_reports(agent, preset, progress=progress)))
        return
    from tacocat.train.exploit import REPORT, format_table, plan_exploit, run_exploit

    if out is not None:
        _check_output_dir(out, "--out")
    from tacocat.game.presets import preset_config

    rules = preset_config(preset or "default")
    reduction = _reduction(value, reduce, rules, [agent], None, rollouts, playouts, stand_in, replay)
    plan = plan_exploit(
        agent,
        steps=steps,
        seeds=seeds,
        first_seed=seed,
        init=init,
        preset=preset,
        deal_pairs=deal_pairs,
        out=out,
        workers=workers,
        resume=resume,
        reduction=reduction,
    )
    report = run_exploit(plan, progress=progress)
    typer.echo(format_table(report))
    typer.echo(f"wrote {plan.out / REPORT} and {report['curve']}")


def _poker_exact(agent: str, game: str, exact: bool, preset: str | None) -> str:
    """`tacocat exploit poker:path=FILE --game G --exact`: the policy's exact NashConv on
    OpenSpiel's game G, greedy and sampling (`tacocat.analysis.poker`); a one-line ValueError
    for what does not apply to a poker game."""
    from tacocat.agents.registry import parse_spec
    from tacocat.analysis.poker import poker_report
    from tacocat.analysis.poker_batch import GAMES

    if game not in GAMES:
        raise ValueError(f"unknown --game {game!r}: give tacocat (the default), {' or '.join(GAMES)}")
    if not exact:
        raise ValueError(f"--game {game} needs --exact: its exact best response is computed, none is trained")
    if preset is not None:
        raise ValueError(f"--preset is Tacocat's rules; --game {game} has none")
    name, params = parse_spec(agent)
    if name != "poker" or set(params) != {"path"}:
        raise ValueError(f"--game {game}: AGENT must be poker:path=FILE (a league policy of {game}), got {agent!r}")
    report = poker_report(params["path"], game)
    lines = [
        f"{report.path} on {game} ({report.information_states} information states), exact:",
        "| mode | NashConv | exploitability | player_0's value in self-play |",
        "|---|---:|---:|---:|",
    ]
    for mode, valued in (("greedy", report.greedy), ("sampling", report.sampling)):
        lines.append(f"| {mode} | {valued.nash_conv:.6f} | {valued.nash_conv / 2:.6f} | {valued.policy_value_0:+.6f} |")
    return "\n".join(lines)


@app.command("tune")
def tune_command(
    config: Path = typer.Option(..., "--config", help="Tune YAML: base experiment, trial budget, search space."),
    trials: int = typer.Option(..., "--trials", min=1, help="Finished trials the study should reach (resumes)."),
    storage: str | None = typer.Option(None, "--storage", help="SQLAlchemy URL (default: SQLite in the study dir)."),
    study: str | None = typer.Option(None, "--study", help="Study name (default: the tune file's)."),
    workers: int = typer.Option(
        1, "--workers", min=1, max=MAX_WORKERS, help="Worker processes sharing the study's storage."
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Tune hyperparameters with Optuna (TPE, pruning); resumable; writes best_config.yaml."""
    try:
        from tacocat.train.tune.config import load_tune
        from tacocat.train.tune.study import open_study, run_study
    except ImportError as err:
        typer.echo(f"error: tacocat tune needs the 'tune' extra (pip install -e '.[tune]'): {err}", err=True)
        raise typer.Exit(2) from None
    try:
        setup = load_tune(config, study=study, storage=storage)
        open_study(setup)
    except (ValueError, OSError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    result = run_study(setup, trials, workers=workers, progress=progress)
    directory = setup.tune.directory
    typer.echo(f"study {setup.tune.study!r}: {len(result.trials)} trials; summary: {directory / 'summary.md'}")
    if (directory / "best_config.yaml").exists():
        typer.echo(
            f"best trial {result.best_trial.number} ({result.best_value:.4f}); "
            f"train it with: tacocat train --config {directory / 'best_config.yaml'}"
        )


if __name__ == "__main__":
    app()
