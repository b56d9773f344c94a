"""Compare two trained runs (of any backends) against one opponent in the duplicate format,
paired by deal.

    tacocat compare RUN_A RUN_B --opponent counter --deal-pairs 1000 --seed 2 --workers 2 --out results/compare

Both runs' final policies (each run's final.json names it: `loop.run_policy`) play the same
deal pairs against the same opponent (one match seed: the same cards and the same opponent
randomness on deal k), so the difference of their win rates gets a paired interval over deal
pairs (`tacocat.evaluation.stats.paired_difference_interval`), much tighter than two separate Wilson
intervals. With a value file (`--reduce` or `--value`, with options such as `--rollouts`:
`tacocat.evaluation.variance.Reduction`) each run's return is also estimated with variance
reduction (AIVAT), and the difference of the reduced returns gets its own paired interval beside
the plain one. The result is stamped with the commit, versions and ruleset hash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tacocat.evaluation.variance import Reduction, describe_reduction


def compare_runs(
    run_a: Path,
    run_b: Path,
    opponent: str,
    deal_pairs: int,
    seed: int,
    workers: int = 1,
    progress: bool = True,
    reduction: Reduction | None = None,
) -> dict[str, Any]:
    """Win rates and mean returns of both runs' final policies against `opponent` and their
    paired differences; with `reduction`, the variance-reduced returns' difference as well."""
    from tacocat.evaluation.matches import match
    from tacocat.evaluation.stats import paired_difference_interval
    from tacocat.stamp import stamp
    from tacocat.train.policy import run_policy
    from tacocat.train.run_dir import load_run_config

    configs = [load_run_config(Path(r)) for r in (run_a, run_b)]
    learners = [run_policy(Path(r)).spec(Path(r)) for r in (run_a, run_b)]
    if configs[0].rules_config.ruleset_hash() != configs[1].rules_config.ruleset_hash():
        raise ValueError(f"{run_a} and {run_b} were trained under different rules")
    rules = configs[0].rules_config
    results, per_pair, returns, reduced = [], [], [], []
    for run, config, learner in zip((run_a, run_b), configs, learners, strict=True):
        result = match(
            learner,
            opponent,
            deal_pairs=deal_pairs,
            seed=seed,
            workers=workers,
            config=rules,
            progress=progress,
            reduction=reduction,
        )
        results.append(
            {
                "run": str(run),
                "backend": config.backend,
                "agent": learner,
                "win_rate": result.win_rate_a,
                "wilson95": [result.ci_low, result.ci_high],
                "mean_return": result.mean_return_a,
                "return95": list(result.return_ci),
                **(
                    {"reduced_return": result.reduced_return_a, "reduced95": list(result.reduced_ci)}
                    if result.reduced_ci is not None
                    else {}
                ),
            }
        )
        per_pair.append([(s0 + s1) / 2.0 for s0, s1 in result.deal_scores])
        returns.append(result.deal_returns)
        reduced.append(result.deal_reduced)
    mean, low, high = paired_difference_interval(per_pair[0], per_pair[1])
    return_mean, return_low, return_high = paired_difference_interval(returns[0], returns[1])
    stamped = stamp(rules)
    extra: dict[str, Any] = {}
    if reduction is not None and reduced[0] is not None and reduced[1] is not None:
        reduced_mean, reduced_low, reduced_high = paired_difference_interval(reduced[0], reduced[1])
        plain = np.var(np.subtract(returns[0], returns[1]), ddof=1) if deal_pairs > 1 else float("nan")
        rest = np.var(np.subtract(reduced[0], reduced[1]), ddof=1) if deal_pairs > 1 else float("nan")
        extra = {
            "reduction": reduction.to_dict(),
            "reduced_return_difference_a_minus_b": reduced_mean,
            "reduced_return_paired95": [reduced_low, reduced_high],
            # how many times fewer deal pairs the reduced difference needs for the same interval width
            "variance_ratio": float(plain / rest) if rest > 0 else None,
        }
    return {
        "opponent": opponent,
        "deal_pairs": deal_pairs,
        "seed": seed,
        "a": results[0],
        "b": results[1],
        "difference_a_minus_b": mean,
        "paired95": [low, high],
        "return_difference_a_minus_b": return_mean,
        "return_paired95": [return_low, return_high],
        "verdict": "A better" if low > 0 else ("B better" if high < 0 else "no clear difference"),
        **extra,
        "interval": "normal approximation over deal pairs of the per-pair win-rate difference",
        "git_commit": stamped["commit"],
        "ruleset_hash": stamped["ruleset_hash"],
        "versions": stamped["versions"],
    }


def markdown(result: dict[str, Any]) -> str:
    a, b = result["a"], result["b"]
    low, high = result["paired95"]
    return (
        "\n".join(
            [
                f"| run | win rate vs {result['opponent']} | 95% Wilson |",
                "|---|---|---|",
                *(
                    f"| {r['run']} | {r['win_rate']:.4f} | [{r['wilson95'][0]:.4f}, {r['wilson95'][1]:.4f}] |"
                    for r in (a, b)
                ),
                "",
                f"A - B = {result['difference_a_minus_b']:+.4f}, paired 95% interval [{low:+.4f}, {high:+.4f}] over "
                f"{result['deal_pairs']} deal pairs (seed {result['seed']}): {result['verdict']}.",
                f"Mean return per game A - B = {result['return_difference_a_minus_b']:+.4f}, paired 95% interval "
                f"[{result['return_paired95'][0]:+.4f}, {result['return_paired95'][1]:+.4f}].",
                *([_reduced_line(result)] if "reduction" in result else []),
                f"Commit {result['git_commit']}, ruleset {result['ruleset_hash']}.",
            ]
        )
        + "\n"
    )


def _reduced_line(result: dict[str, Any]) -> str:
    low, high = result["reduced_return_paired95"]
    ratio = result["variance_ratio"]
    return (
        f"Variance-reduced (AIVAT) return A - B = {result['reduced_return_difference_a_minus_b']:+.4f}, paired 95% "
        f"interval [{low:+.4f}, {high:+.4f}]; variance ratio {'–' if ratio is None else f'{ratio:.2f}'} "
        f"({describe_reduction(result['reduction'])})."
    )
