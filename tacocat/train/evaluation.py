"""Duplicate-format evaluation of a run's policy: during training (`evaluate_during_training`,
eval.csv; on rules small enough to enumerate, and on a poker game, also
`nash_conv_during_training`, exploitability.csv) and after it (`evaluate_run`: the final
policy against the whole ladder, final_eval.json and final_eval.md), for a run of any backend."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from tacocat.agents.base import Agent
from tacocat.evaluation.stats import verdict as beats
from tacocat.game.config import RulesConfig
from tacocat.train.config import ExperimentConfig

EVAL_FIELDS = ["timesteps", "opponent", "win_rate", "ci_low", "ci_high", "deal_pairs"]
EXACT_FIELDS = [
    "timesteps",
    "nash_conv_greedy",
    "nash_conv_sampling",
    "policy_value_0_greedy",
    "policy_value_0_sampling",
    "best_response_0_greedy",
    "best_response_1_greedy",
    "best_response_0_sampling",
    "best_response_1_sampling",
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


def prepare_nash_conv(config: ExperimentConfig) -> None:
    """What `nash_conv_during_training` reads, built before the run starts: the enumerated tree
    of the run's rules (a tree too large to enumerate is refused before the run directory) or,
    for a league on a poker game, OpenSpiel's tree mapped onto pgx's (`tacocat.analysis.poker`)."""
    if config.game == "tacocat":
        exact_tree(config.rules_config)
    else:
        from tacocat.analysis.poker import poker_tree

        poker_tree(config.game)


def nash_conv_during_training(learner: Agent | str, config: ExperimentConfig, timesteps: int) -> dict[str, Any]:
    """The row of exploitability.csv: the exact NashConv of `learner` on the run's game, its
    policy played greedily (its most probable legal action) and by its action probabilities,
    side by side, with player_0's value in each mode and, on Tacocat's rules, each player's
    best-response value (`tacocat.analysis`). On a pure equilibrium (every enumerable Tacocat
    preset has one) greedy NashConv can reach 0 while sampling NashConv measures how far the
    softmax has collapsed; on a mixed one (Kuhn, Leduc) only sampling NashConv can reach 0
    (docs/EXPLOITABILITY.md)."""
    start = time.perf_counter()
    row: dict[str, Any] = {"timesteps": timesteps}
    if config.game != "tacocat":
        from tacocat.agents.registry import parse_spec
        from tacocat.analysis.poker import poker_report

        report = poker_report(parse_spec(str(learner))[1]["path"], config.game)
        for mode, valued in (("greedy", report.greedy), ("sampling", report.sampling)):
            row |= {f"nash_conv_{mode}": valued.nash_conv, f"policy_value_0_{mode}": valued.policy_value_0}
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


def evaluation_score(rows: list[dict[str, Any]], exact: dict[str, Any] | None) -> float:
    """What an evaluation scores, in [0, 1], higher is better (the best policy so far, `tacocat
    tune`'s listener): the mean win rate over `eval.opponents`, or, without any (a league on a
    poker game), 1 / (1 + the sampling NashConv)."""
    if not rows and exact is not None:
        return 1.0 / (1.0 + float(exact["nash_conv_sampling"]))
    return float(np.mean([r["win_rate"] for r in rows]))


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
