"""The evaluation after training: a run's final model against the whole ladder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agents.stats import verdict as beats
from experiments.config import ExperimentConfig


def evaluate_run(run_dir: Path, config: ExperimentConfig, model_name: str = "final_model.zip",
                 progress: bool = True, learner: str | None = None) -> list[dict[str, Any]]:
    """Duplicate matches of the run's model (or of the agent spec `learner`) against every
    `eval.final` opponent.

    Writes final_eval.json and final_eval.md into the run directory and returns the rows.
    """
    from agents.evaluation import match

    learner = learner or f"ppo:path={Path(run_dir) / model_name},torch_threads=1"
    rows = []
    for opponent in config.eval.final:
        result = match(learner, opponent.agent, deal_pairs=opponent.deal_pairs, seed=config.eval.seed + 1,
                       workers=config.eval.workers, config=config.rules_config, progress=progress)
        rows.append({
            "opponent": opponent.agent, "deal_pairs": opponent.deal_pairs, "games": result.n_games,
            "win_rate": result.win_rate_a, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "ci_method": "paired over deal pairs (primary)",
            "wilson_low": result.wilson_low, "wilson_high": result.wilson_high,
            "draws": result.draws, "games_per_s": result.games_per_s, "ruleset_hash": result.ruleset_hash,
        })
    (Path(run_dir) / "final_eval.json").write_text(json.dumps(rows, indent=2))
    (Path(run_dir) / "final_eval.md").write_text(markdown_table(rows))
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| opponent | deal pairs | win rate | 95% paired CI | 95% Wilson CI | beats it? |", "|---|---|---|---|---|---|"]
    for r in rows:
        verdict = beats(r["ci_low"], r["ci_high"])
        lines.append(f"| {r['opponent']} | {r['deal_pairs']} | {r['win_rate']:.3f} | "
                     f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] | [{r['wilson_low']:.3f}, {r['wilson_high']:.3f}] | {verdict} |")
    return "\n".join(lines) + "\n"


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    table = Table(title=title)
    for column in ("opponent", "deal pairs", "win rate", "95% paired CI", "beats it?"):
        table.add_column(column)
    for r in rows:
        verdict = beats(r["ci_low"], r["ci_high"])
        table.add_row(r["opponent"], str(r["deal_pairs"]), f"{r['win_rate']:.3f}",
                      f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]", verdict)
    Console().print(table)
