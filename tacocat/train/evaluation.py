"""Duplicate-format evaluation of a run's policy: during training (`evaluate_during_training`,
eval.csv; on rules small enough to enumerate also `nash_conv_during_training`,
exploitability.csv) and after it (`evaluate_run`: the final policy against the whole ladder,
final_eval.json and final_eval.md), for a run of any backend."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tacocat.agents.base import Agent
from tacocat.evaluation.stats import verdict as beats
from tacocat.game.config import RulesConfig
from tacocat.train.config import ExperimentConfig

EVAL_FIELDS = ["timesteps", "opponent", "win_rate", "ci_low", "ci_high", "deal_pairs"]
EXACT_FIELDS = [
    "timesteps",
    "nash_conv",
    "exploitability",
    "policy_value_0",
    "best_response_0",
    "best_response_1",
    "seconds",
]
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


def nash_conv_during_training(learner: Agent | str, config: ExperimentConfig, timesteps: int) -> dict[str, Any]:
    """The row of exploitability.csv: the exact NashConv of `learner` on the run's rules, its
    policy played greedily or by its action probabilities (`eval.nash_conv`), with player_0's
    value and each player's best-response value (`tacocat.analysis`)."""
    from tacocat.analysis.agent_tables import agent_policy
    from tacocat.analysis.best_response import exploitability

    start = time.perf_counter()
    tree = exact_tree(config.rules_config)
    found = exploitability(tree, agent_policy(tree, learner, sampling=config.eval.nash_conv == "sampling"))
    return {
        "timesteps": timesteps,
        "nash_conv": found.nash_conv,
        "exploitability": found.exploitability,
        "policy_value_0": float(found.policy_values[0]),
        "best_response_0": float(found.best_response_values[0]),
        "best_response_1": float(found.best_response_values[1]),
        "seconds": time.perf_counter() - start,
    }


def evaluate_run(
    run_dir: Path, config: ExperimentConfig, progress: bool = True, learner: str | None = None
) -> list[dict[str, Any]]:
    """Duplicate matches of the run's final policy (`tacocat.train.policy.run_policy`; or of the agent spec
    `learner`) against every `eval.final` opponent.

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
        )
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
                "draws": result.draws,
                "games_per_s": result.games_per_s,
                "ruleset_hash": result.ruleset_hash,
            }
        )
    (Path(run_dir) / "final_eval.json").write_text(json.dumps(rows, indent=2))
    (Path(run_dir) / "final_eval.md").write_text(markdown_table(rows))
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| opponent | deal pairs | win rate | 95% paired CI | 95% Wilson CI | beats it? |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        verdict = beats(r["ci_low"], r["ci_high"])
        lines.append(
            f"| {r['opponent']} | {r['deal_pairs']} | {r['win_rate']:.3f} | "
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] | [{r['wilson_low']:.3f}, {r['wilson_high']:.3f}] | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    table = Table(title=title)
    for column in ("opponent", "deal pairs", "win rate", "95% paired CI", "beats it?"):
        table.add_column(column)
    for r in rows:
        verdict = beats(r["ci_low"], r["ci_high"])
        table.add_row(
            r["opponent"],
            str(r["deal_pairs"]),
            f"{r['win_rate']:.3f}",
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
            verdict,
        )
    Console().print(table)
