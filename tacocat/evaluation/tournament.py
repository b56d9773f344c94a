"""Round-robin tournaments in the duplicate format, with Bradley–Terry ratings.

Every pair of agents plays a duplicate match (`tacocat.evaluation.matches.match`) of `deal_pairs` deal
pairs with the same seed, so every pairing plays the same deals (common random numbers
across the whole table). All pairings' chunks go through one worker pool.

Outputs written to `out_dir`:

* results.json   every match summary, the win-rate matrix and the ratings with intervals;
* matrix.csv     win rate of the row agent against the column agent (draws count half);
* ratings.csv    Bradley–Terry rating (Elo scale), bootstrap 95% interval, score, games;
* tournament.md  the ratings and the matrix as markdown tables;
* heatmap.png    the win-rate matrix; ratings.png: the ratings with their intervals.
"""

from __future__ import annotations

import csv
import itertools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from tacocat.agents.registry import make_agent
from tacocat.evaluation.matches import DealChunk, MatchResult, run_chunks, split_deals, summarize
from tacocat.evaluation.stats import PairResults, RatingsResult, bradley_terry_ratings
from tacocat.game.config import RulesConfig, make_config


@dataclass
class TournamentResult:
    """Matches of every pairing, the win-rate matrix and the ratings."""

    agents: list[str]
    games: int
    seed: int
    ruleset_hash: str
    matches: list[MatchResult]
    #: matrix[i][j]: win rate of agents[i] against agents[j] (draws half); NaN on the diagonal
    matrix: np.ndarray
    ratings: RatingsResult
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "agents": self.agents,
            "games": self.games,
            "games_note": "deal pairs per pairing; every deal is played twice, seats swapped",
            "seed": self.seed,
            "ruleset_hash": self.ruleset_hash,
            "wall_s": self.wall_s,
            "matrix": [[None if np.isnan(x) else float(x) for x in row] for row in self.matrix],
            "matrix_note": "matrix[i][j] = win rate of agents[i] against agents[j], draws count half",
            "ratings": self.ratings.to_dict(),
            "matches": [m.to_dict() for m in self.matches],
        }

    def leaderboard(self) -> list[dict[str, Any]]:
        """Rows of the ratings table, best first."""
        rows = []
        for i in self.ratings.ranking():
            name = self.agents[i]
            score = games = 0.0
            for m in self.matches:
                if m.agent_a == name:
                    score += m.a_total.score
                    games += m.n_games
                elif m.agent_b == name:
                    score += m.b_total.score
                    games += m.n_games
            rows.append(
                {
                    "agent": name,
                    "rating": float(self.ratings.ratings[i]),
                    "low": float(self.ratings.low[i]),
                    "high": float(self.ratings.high[i]),
                    "score": score,
                    "games": int(games),
                }
            )
        return rows


def tournament(
    agent_specs: Sequence[str],
    deal_pairs: int,
    seed: int,
    workers: int = 1,
    out_dir: str | Path | None = None,
    config: RulesConfig | dict[str, Any] | str | None = None,
    n_boot: int = 1000,
    boot_seed: int = 0,
    anchor: str | None = None,
    progress: bool = True,
) -> TournamentResult:
    """Round robin of duplicate matches (`deal_pairs` deal pairs per pairing), BT ratings.

    Ratings are fitted on all games; their 95% intervals come from `n_boot` bootstrap
    resamples of the deal pairs (seed `boot_seed`). With `out_dir`, writes the files listed
    in the module docstring.
    """
    specs = list(agent_specs)
    if len(specs) < 2:
        raise ValueError(f"a tournament needs at least two agents, got {specs}")
    if len(set(specs)) != len(specs):
        raise ValueError(f"agent specs must be distinct, got {specs}")
    if deal_pairs < 1:
        raise ValueError(f"deal_pairs must be >= 1, got {deal_pairs}")
    for spec in specs:  # fail early on a bad spec, before any worker starts
        make_agent(spec)
    cfg = config if isinstance(config, RulesConfig) else make_config(config)
    pairs = list(itertools.combinations(range(len(specs)), 2))
    chunks = [
        DealChunk((i, j), specs[i], specs[j], seed, deals, cfg, False)
        for i, j in pairs
        for deals in split_deals(deal_pairs, max(1, workers))
    ]
    start = time.perf_counter()
    with tqdm(
        total=2 * deal_pairs * len(pairs), unit="game", desc="tournament", disable=not progress, leave=False
    ) as bar:
        results = run_chunks(chunks, workers, bar)
    wall = time.perf_counter() - start
    # the pool plays all pairings together: each match is credited an equal share of the wall time
    matches = [
        summarize(specs[i], specs[j], seed, cfg, results[(i, j)], wall / len(pairs), max(1, workers)) for i, j in pairs
    ]
    matrix = np.full((len(specs), len(specs)), np.nan)
    pair_data = []
    for (i, j), m in zip(pairs, matches, strict=True):
        matrix[i, j] = m.win_rate_a
        matrix[j, i] = 1.0 - m.win_rate_a
        pair_data.append(PairResults(i, j, np.array([sum(s) for s in m.deal_scores])))
    ratings = bradley_terry_ratings(specs, pair_data, n_boot=n_boot, boot_seed=boot_seed, anchor=anchor)
    result = TournamentResult(specs, deal_pairs, seed, cfg.ruleset_hash(), matches, matrix, ratings, wall)
    if out_dir is not None:
        write_outputs(result, out_dir)
    return result


# ---------------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------------
def write_outputs(result: TournamentResult, out_dir: str | Path) -> dict[str, Path]:
    """Write results.json, matrix.csv, ratings.csv, tournament.md, heatmap.png, ratings.png."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        name: out / name
        for name in ("results.json", "matrix.csv", "ratings.csv", "tournament.md", "heatmap.png", "ratings.png")
    }
    paths["results.json"].write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    with paths["matrix.csv"].open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["agent", *result.agents])
        for name, row in zip(result.agents, result.matrix, strict=True):
            writer.writerow([name, *("" if np.isnan(x) else f"{x:.6f}" for x in row)])
    board = result.leaderboard()
    with paths["ratings.csv"].open("w", newline="") as f:
        ratings = csv.DictWriter(f, fieldnames=["rank", "agent", "rating", "low", "high", "score", "games"])
        ratings.writeheader()
        for rank, row in enumerate(board, 1):
            ratings.writerow({"rank": rank, **{k: (f"{v:.2f}" if isinstance(v, float) else v) for k, v in row.items()}})
    paths["tournament.md"].write_text(markdown(result))
    _plot_heatmap(result, paths["heatmap.png"])
    _plot_ratings(result, paths["ratings.png"])
    return paths


def markdown(result: TournamentResult) -> str:
    """The ratings and the win-rate matrix as markdown."""
    board = result.leaderboard()
    lines = [
        "# Tournament",
        "",
        f"{len(result.agents)} agents, round robin, duplicate format: {result.games} deal pairs "
        f"({2 * result.games} games) per pairing, seed {result.seed}, ruleset `{result.ruleset_hash}`.",
        "",
        f"## Ratings (Bradley–Terry, Elo scale, {result.ratings.to_dict()['centre']}; "
        f"{int(result.ratings.confidence * 100)}% bootstrap intervals over deal pairs, "
        f"{result.ratings.n_boot} resamples)",
        "",
        "| rank | agent | rating | 95% interval | score | games |",
        "|---:|---|---:|---|---:|---:|",
    ]
    for rank, row in enumerate(board, 1):
        lines.append(
            f"| {rank} | `{row['agent']}` | {row['rating']:.0f} | [{row['low']:.0f}, {row['high']:.0f}] "
            f"| {row['score']:g} | {row['games']} |"
        )
    lines += [
        "",
        "## Win rate of the row agent against the column agent (draws count half)",
        "",
        "| | " + " | ".join(f"`{a}`" for a in result.agents) + " |",
        "|---|" + "---:|" * len(result.agents),
    ]
    for name, row in zip(result.agents, result.matrix, strict=True):
        cells = ["—" if np.isnan(x) else f"{x:.3f}" for x in row]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Matches",
        "",
        "| A | B | win rate A | 95% paired (deal pairs) | W-L-D (A) | mean length | mean rounds |",
        "|---|---|---:|---|---|---:|---:|",
    ]
    for m in result.matches:
        t = m.a_total
        lines.append(
            f"| `{m.agent_a}` | `{m.agent_b}` | {m.win_rate_a:.3f} | [{m.ci_low:.3f}, {m.ci_high:.3f}] "
            f"| {t.wins}-{t.losses}-{t.draws} | {m.mean_length:.1f} | {m.mean_rounds:.2f} |"
        )
    return "\n".join(lines) + "\n"


def _figure(width: float, height: float):
    """A figure that is not registered with pyplot: saving it never switches the caller's
    backend (a notebook's inline plots keep working) and needs no display."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _plot_heatmap(result: TournamentResult, path: Path) -> None:
    n = len(result.agents)
    fig = _figure(1.6 + 0.9 * n, 1.2 + 0.8 * n)
    ax = fig.subplots()
    data = np.ma.masked_invalid(result.matrix)
    image = ax.imshow(data, cmap="RdBu", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(n), result.agents, rotation=45, ha="right")
    ax.set_yticks(range(n), result.agents)
    for i in range(n):
        for j in range(n):
            if not np.isnan(result.matrix[i, j]):
                ax.text(j, i, f"{result.matrix[i, j]:.2f}", ha="center", va="center", fontsize=9)
    ax.set_xlabel("opponent")
    ax.set_ylabel("agent")
    ax.set_title(f"Win rate (row vs column), {2 * result.games} games per pair")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _plot_ratings(result: TournamentResult, path: Path) -> None:
    board = result.leaderboard()[::-1]  # best at the top
    names = [row["agent"] for row in board]
    values = np.array([row["rating"] for row in board])
    low = np.array([row["low"] for row in board])
    high = np.array([row["high"] for row in board])
    fig = _figure(6.5, 1.2 + 0.45 * len(names))
    ax = fig.subplots()
    ax.errorbar(values, range(len(names)), xerr=[values - low, high - values], fmt="o", capsize=4)
    ax.set_yticks(range(len(names)), names)
    ax.axvline(0.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("Bradley–Terry rating (Elo scale), 95% bootstrap interval")
    ax.set_title("Ratings")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
