"""Duplicate-format evaluation of a run's policy: during training (`evaluate_during_training`,
eval.csv; on rules small enough to enumerate, and on a poker game, also
`nash_conv_during_training`, exploitability.csv) and after it (`evaluate_run`: the final
policy against the whole ladder, final_eval.json and final_eval.md), for a run of any backend."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from tacocat.agents.base import Agent
from tacocat.evaluation.stats import verdict as beats
from tacocat.evaluation.variance import Reduction
from tacocat.game.config import RulesConfig
from tacocat.train.config import ExperimentConfig

EVAL_FIELDS = ["timesteps", "opponent", "win_rate", "ci_low", "ci_high", "deal_pairs"]
EXACT_FIELDS = [
    "timesteps",
    "nash_conv_greedy",
    "nash_conv_sampling",
    "nash_conv_average",
    "policy_value_0_greedy",
    "policy_value_0_sampling",
    "best_response_0_greedy",
    "best_response_1_greedy",
    "best_response_0_sampling",
    "best_response_1_sampling",
    "seconds",
]
#: a poker run's folder of each evaluation's policy (its softmax at every information state),
#: `<timesteps>.npy`, for the NashConv of the average policy
POLICY_TABLES = "policy_tables"
_TABLE_NAME = re.compile(r"(0|[1-9][0-9]{0,17})\.npy")
_TREES: dict[str, Any] = {}  # ruleset hash -> GameTree: enumerated (or read from its cache) once per process


def evaluate_during_training(learner: Agent | str, config: ExperimentConfig, timesteps: int) -> list[dict[str, Any]]:
    """The rows of eval.csv: duplicate matches of `learner` against each of `eval.opponents`,
    on the same deals every time (`eval.seed`)."""
    from tacocat.evaluation.matches import match

    rows = []
    for opponent in config.eval.opponents:
        result = match(
            learner,
            opponent,
            deal_pairs=config.eval.deal_pairs,
            seed=config.eval.seed,
            workers=1,
            config=config.rules_config,
            progress=False,
        )
        rows.append(
            {
                "timesteps": timesteps,
                "opponent": opponent,
                "win_rate": result.win_rate_a,
                "ci_low": result.ci_low,
                "ci_high": result.ci_high,
                "deal_pairs": config.eval.deal_pairs,
            }
        )
    return rows


def exact_tree(rules: RulesConfig) -> Any:
    """The game tree of `rules` (`tacocat.analysis.store.load_tree`: sized, then enumerated or
    read from its cache), kept for the process. A tree too large is a one-line ValueError."""
    from tacocat.analysis.store import load_tree

    key = rules.ruleset_hash()
    if key not in _TREES:
        _TREES[key] = load_tree(rules)
    return _TREES[key]


def prepare_nash_conv(config: ExperimentConfig) -> None:
    """What `nash_conv_during_training` reads, built before the run starts: the enumerated tree
    of the run's rules (a tree too large to enumerate is refused before the run directory) or,
    for a league on a poker game, OpenSpiel's tree mapped onto pgx's (`tacocat.analysis.poker`)."""
    if config.game == "tacocat":
        exact_tree(config.rules_config)
    else:
        from tacocat.analysis.poker import poker_tree

        poker_tree(config.game)


def nash_conv_during_training(
    learner: Agent | str, config: ExperimentConfig, timesteps: int, run_dir: Path | None = None
) -> dict[str, Any]:
    """The row of exploitability.csv: the exact NashConv of `learner` on the run's game, its
    policy played greedily (its most probable legal action) and by its action probabilities,
    side by side, with player_0's value in each mode and, on Tacocat's rules, each player's
    best-response value (`tacocat.analysis`). On a pure equilibrium (every enumerable Tacocat
    preset has one) greedy NashConv can reach 0 while sampling NashConv measures how far the
    softmax has collapsed; on a mixed one (Kuhn, Leduc) only sampling NashConv can reach 0
    (docs/EXPLOITABILITY.md). On a poker game, given the run's folder, also the NashConv of the
    average policy (`average_nash_conv`)."""
    start = time.perf_counter()
    row: dict[str, Any] = {"timesteps": timesteps}
    if config.game != "tacocat":
        from tacocat.agents.registry import parse_spec
        from tacocat.analysis.poker import poker_report

        path = parse_spec(str(learner))[1]["path"]
        report = poker_report(path, config.game)
        for mode, valued in (("greedy", report.greedy), ("sampling", report.sampling)):
            row |= {f"nash_conv_{mode}": valued.nash_conv, f"policy_value_0_{mode}": valued.policy_value_0}
        if run_dir is not None:
            row["nash_conv_average"] = average_nash_conv(run_dir, path, config.game, timesteps)
        return {**row, "seconds": time.perf_counter() - start}
    from tacocat.analysis.agent_tables import agent_policy
    from tacocat.analysis.best_response import exploitability

    tree = exact_tree(config.rules_config)
    for mode in ("greedy", "sampling"):
        found = exploitability(tree, agent_policy(tree, learner, sampling=mode == "sampling"))
        row |= {
            f"nash_conv_{mode}": found.nash_conv,
            f"policy_value_0_{mode}": float(found.policy_values[0]),
            f"best_response_0_{mode}": float(found.best_response_values[0]),
            f"best_response_1_{mode}": float(found.best_response_values[1]),
        }
    return {**row, "seconds": time.perf_counter() - start}


def average_nash_conv(run_dir: Path, path: str, game: str, timesteps: int) -> float:
    """Keeps the poker policy file `path`'s softmax at every information state as this
    evaluation's table (`run_dir/policy_tables/<timesteps>.npy`) and returns the exact NashConv
    of the average policy (`tacocat.analysis.poker.average_policy`) of the evaluations in the
    second half of the run so far (at `timesteps` / 2 or later): the policy that plays one of
    those, drawn at the start of each game. Where the actor circles an equilibrium, as
    self-play's learners do, the average comes closer to it than any one of them."""
    from tacocat.analysis.poker import action_probabilities, average_policy, load_policy, poker_tree, values

    tree, folder = poker_tree(game), run_dir / POLICY_TABLES
    folder.mkdir(exist_ok=True)
    np.save(folder / f"{timesteps}.npy", action_probabilities(load_policy(path, game), tree, sampling=True))
    tables = [np.load(f) for step, f in policy_tables(run_dir) if 2 * step >= timesteps]
    return values(tree, average_policy(tree, tables)).nash_conv


def policy_tables(run_dir: Path) -> list[tuple[int, Path]]:
    """(timesteps, file) of each evaluation's policy table in the run, in order."""
    folder = run_dir / POLICY_TABLES
    found = [(m, f) for f in folder.iterdir() if (m := _TABLE_NAME.fullmatch(f.name))] if folder.is_dir() else []
    return sorted((int(m.group(1)), f) for m, f in found)


def drop_policy_tables(run_dir: Path, up_to: int) -> None:
    """Deletes the policy tables of evaluations after `up_to` timesteps (work a resumed run redoes)."""
    for step, f in policy_tables(run_dir):
        if step > up_to:
            f.unlink()


def evaluation_score(rows: list[dict[str, Any]], exact: dict[str, Any] | None) -> float:
    """What an evaluation scores, in [0, 1], higher is better (the best policy so far, `tacocat
    tune`'s listener): the mean win rate over `eval.opponents`, or, without any (a league on a
    poker game), 1 / (1 + the sampling NashConv)."""
    if not rows and exact is not None:
        return 1.0 / (1.0 + float(exact["nash_conv_sampling"]))
    return float(np.mean([r["win_rate"] for r in rows]))


def evaluate_run(
    run_dir: Path,
    config: ExperimentConfig,
    progress: bool = True,
    learner: str | None = None,
    reduction: Reduction | None = None,
) -> list[dict[str, Any]]:
    """Duplicate matches of the run's final policy (`tacocat.train.policy.run_policy`; or of the agent spec
    `learner`) against every `eval.final` opponent: the win rate and the mean return per game,
    each with its paired interval over deal pairs, and with `reduction` the variance-reduced
    (AIVAT) return beside the plain one.

    Writes final_eval.json and final_eval.md into the run directory and returns the rows.
    """
    from tacocat.evaluation.matches import match
    from tacocat.train.policy import run_policy

    learner = learner or run_policy(run_dir).spec(run_dir)
    rows = []
    for opponent in config.eval.final:
        result = match(
            learner,
            opponent.agent,
            deal_pairs=opponent.deal_pairs,
            seed=config.eval.seed + 1,
            workers=config.eval.workers,
            config=config.rules_config,
            progress=progress,
            reduction=reduction,
        )
        reduced = {}
        if result.reduced_ci is not None:
            reduced = {
                "reduced_return": result.reduced_return_a,
                "reduced_low": result.reduced_ci[0],
                "reduced_high": result.reduced_ci[1],
                "variance_ratio": result.variance_ratio(),
            }
        rows.append(
            {
                "opponent": opponent.agent,
                "deal_pairs": opponent.deal_pairs,
                "games": result.n_games,
                "win_rate": result.win_rate_a,
                "ci_low": result.ci_low,
                "ci_high": result.ci_high,
                "ci_method": "paired over deal pairs (primary)",
                "wilson_low": result.wilson_low,
                "wilson_high": result.wilson_high,
                "mean_return": result.mean_return_a,
                "return_low": result.return_ci[0],
                "return_high": result.return_ci[1],
                **reduced,
                "draws": result.draws,
                "games_per_s": result.games_per_s,
                "ruleset_hash": result.ruleset_hash,
            }
        )
    (Path(run_dir) / "final_eval.json").write_text(json.dumps(rows, indent=2))
    (Path(run_dir) / "final_eval.md").write_text(markdown_table(rows))
    return rows


def _return_cells(r: dict[str, Any]) -> list[str]:
    """The mean return with its paired interval, and the reduced one where it was estimated."""
    plain = f"{r['mean_return']:+.3f} [{r['return_low']:+.3f}, {r['return_high']:+.3f}]" if "mean_return" in r else "–"
    if "reduced_return" not in r:
        return [plain, "–"]
    return [plain, f"{r['reduced_return']:+.3f} [{r['reduced_low']:+.3f}, {r['reduced_high']:+.3f}]"]


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| opponent | deal pairs | win rate | 95% paired CI | 95% Wilson CI | beats it? | mean return [95% paired] "
        "| reduced (AIVAT) return [95% paired] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        verdict = beats(r["ci_low"], r["ci_high"])
        lines.append(
            f"| {r['opponent']} | {r['deal_pairs']} | {r['win_rate']:.3f} | "
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] | [{r['wilson_low']:.3f}, {r['wilson_high']:.3f}] | {verdict} | "
            + " | ".join(_return_cells(r))
            + " |"
        )
    return "\n".join(lines) + "\n"


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    table = Table(title=title)
    columns = ["opponent", "deal pairs", "win rate", "95% paired CI", "beats it?", "mean return [95% paired]"]
    reduced = any("reduced_return" in r for r in rows)
    for column in columns + (["reduced (AIVAT) return"] if reduced else []):
        table.add_column(column)
    for r in rows:
        verdict = beats(r["ci_low"], r["ci_high"])
        plain, smaller = _return_cells(r)
        table.add_row(
            r["opponent"],
            str(r["deal_pairs"]),
            f"{r['win_rate']:.3f}",
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
            verdict,
            plain,
            *([smaller] if reduced else []),
        )
    Console().print(table)
