"""Regenerate the published evaluation results: JSON + markdown, stamped, and the docs' tables.

    python -m benchmarks.regenerate                          # every section, published sizes
    python -m benchmarks.regenerate --only ladder,belief     # some sections
    python -m benchmarks.regenerate --scale 0.1              # a quick smaller run (not for the docs)
    python -m benchmarks.regenerate --check                  # exit 1 if the docs differ from the JSON

Each section writes `docs/results/<section>.json` (the numbers, with a stamp: commit, dirty
flag, versions, ruleset hash, machine, load average, command, sizes) and `<section>.md` (the
table rendered from the JSON). The docs (`docs/BENCHMARKS.md`) carry each table between
`<!-- BEGIN RESULTS: <section> -->` and `<!-- END RESULTS: <section> -->`; `--write-docs`
(the default after a run) replaces those blocks from the JSON, and `--check` (run by the tests)
fails when a block differs from what the JSON renders to. `--check` also checks the validations
that `python -m benchmarks.exploitability validate --write` publishes, one per preset
(`docs/results/exploit_validation.json` for trio_decided, `exploit_validation_<preset>.json`
for another; not `exploit_validation_port.json`), against their blocks in
docs/EXPLOITABILITY.md (`benchmarks.exploitability.stale_validations`).

Sections: `ladder` (each rung against the one below), `counter` (the counter against its
previous version and both against the planner), `belief` (the search agent's
failed-answer belief on/off/soft against opponents that sacrifice by choice, with paired
differences between the modes over the same deals), `budget` (search strength against its
simulation budget, vs `counter` and vs `search` at its default, with a PNG), `crossplay`
(round robin, paired intervals, Bradley–Terry ratings and where the rating model's fit error
exceeds sampling error), `search_speed` (decisions per second; a timing, machine-dependent),
`champion` (the shipped league policy, `make_agent("champion")`, against `search` at 24, 96
and 200 simulations and the heuristics it trained against; with the model file's metadata and
SHA-256), `training` (the main job, `make main`, trained and evaluated for three seeds, with
their learning curves as a PNG; about 30 minutes on an idle 2-core machine).

Reproducibility promise: the same command at the same commit, on the same machine with the same
versions (Python, numpy, torch), gives the same numbers (timings and load average aside), for
any number of workers. Across machines the heuristic and search results are expected to be
identical too (pure Python + numpy integer sampling), but that is not tested; trained models are
not (floating-point training differs between CPUs and library builds).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import platform
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tacocat.cli.main import DEFAULT_CONFIG as MAIN_CONFIG  # the config `make main` trains
from tacocat.stamp import PACKAGES
from tacocat.stamp import stamp as source_stamp

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
DOCS = ROOT / "docs" / "BENCHMARKS.md"
#: every docs page that carries results blocks (`--write-docs`, `--check`)
PAGES = (DOCS, ROOT / "docs" / "EXPLOITABILITY.md")
SEED = 2026

LADDER = ["random", "highcard", "planner", "counter", "search"]
#: published sizes (deal pairs; seeds for `training`); `--scale` multiplies them. Each stamp
#: records its section's wall time; search games cost 0.1-4 s each on an idle core.
SIZES: dict[str, Any] = {
    "ladder": {"heuristic": 2000, "search": 200},
    "counter": 2000,
    "belief": 1000,
    "budget": {24: 200, 48: 200, 96: 200, 200: 100, 400: 40, 800: 20},
    "crossplay": 100,
    "search_speed": 40,
    "training": 3,
    "champion": {
        "search": 1000,
        "counter": 1000,
        "planner": 500,
        "search:simulations=24": 300,
        "search:simulations=200": 200,
    },
    # exact tables on the presets; on the full game, `tacocat exploit` per agent (env steps,
    # seeds, deal pairs). The validation against exact best responses has its own command and
    # files (`python -m benchmarks.exploitability validate --write`: exploit_validation.json, and
    # exploit_validation_<preset>.json for a preset other than trio_decided)
    "exploitability": {
        "full_steps": 12_000_000,
        "full_seeds": 3,
        "full_deal_pairs": 1000,
    },
}
BELIEF_OPPONENTS = ["counter:sacrifice_rate=0.2"]
BELIEF_MODES = ["on", "off", "soft"]
CROSSPLAY = ["random", "highcard", "planner", "counter", "search", "champion"]


# ---------------------------------------------------------------------------------------
# stamp
# ---------------------------------------------------------------------------------------
def stamp(section: str, size: Any, command: str) -> dict[str, Any]:
    """Where and with what a result was made: the shared stamp (`tacocat.stamp`: commit,
    dirty flag, python, versions, ruleset hash; scipy too, which the ratings use) with the
    section, date, command, size, machine and load average."""
    from tacocat.game.config import make_config

    return {
        "section": section,
        **source_stamp(make_config(None), packages=(*PACKAGES, "scipy")),
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "command": command,
        "size": size,
        "machine": {
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpu_count": os.cpu_count(),
            "processor": platform.processor() or None,
        },
        "load_average_start": list(os.getloadavg()),
    }


def _python_version(s: dict[str, Any]) -> str:
    """The stamp's Python version: top-level in the shared stamp, under `versions` in the
    stamps this module wrote before it (the published JSON of sections not rerun since)."""
    return s["python"] if "python" in s else s["versions"]["python"]


def _scaled(size: Any, scale: float) -> Any:
    if isinstance(size, dict):
        return {k: max(2, round(v * scale)) for k, v in size.items()}
    return max(2, round(size * scale))


def _interval(m) -> dict[str, Any]:
    return {
        "win_rate": m.win_rate_a,
        "paired": [m.ci_low, m.ci_high],
        "wilson": [m.wilson_low, m.wilson_high],
        "wins": m.wins_a,
        "losses": m.wins_b,
        "draws": m.draws,
        "deal_pairs": m.games,
    }


def _pair_scores(m) -> np.ndarray:
    return np.array([sum(s) / 2.0 for s in m.deal_scores])


def _paired_difference(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Mean of x - y over the same deal pairs with its 95% t interval."""
    from tacocat.evaluation.stats import paired_difference_interval

    mean, low, high = paired_difference_interval(x, y)
    return {"mean": mean, "low": low, "high": high}


# ---------------------------------------------------------------------------------------
# sections: run (-> JSON-ready dict) and render (dict -> markdown)
# ---------------------------------------------------------------------------------------
def run_ladder(pairs: dict[str, int], workers: int) -> dict[str, Any]:
    from tacocat.evaluation.matches import match

    rows = []
    for lower, upper in itertools.pairwise(LADDER):
        n = pairs["search" if upper.startswith("search") else "heuristic"]
        m = match(upper, lower, deal_pairs=n, seed=SEED, workers=workers)
        rows.append({"upper": upper, "lower": lower, **_interval(m), "wall_s": m.wall_s})
    return {"rows": rows}


def render_ladder(data: dict[str, Any]) -> str:
    return "\n".join(
        _match_table(
            {"upper rung": "---", "lower rung": "---"},
            data["rows"],
            lambda r: [f"`{r['upper']}`", f"`{r['lower']}`"],
            "upper's win rate",
            verdict="strictly above?",
        )
    )


def run_counter(pairs: int, workers: int) -> dict[str, Any]:
    """The counter against its previous version, and both against the planner (same deals)."""
    from tacocat.agents.heuristic import PREVIOUS_COUNTER
    from tacocat.evaluation.matches import match

    rows = []
    for a, b in (("counter", PREVIOUS_COUNTER), ("counter", "planner"), (PREVIOUS_COUNTER, "planner")):
        m = match(a, b, deal_pairs=pairs, seed=SEED, workers=workers)
        rows.append({"a": a, "b": b, **_interval(m)})
    return {"rows": rows}


def render_counter(data: dict[str, Any]) -> str:
    return "\n".join(
        _match_table({"A": "---", "B": "---"}, data["rows"], lambda r: [f"`{r['a']}`", f"`{r['b']}`"], "A's win rate")
    )


def run_belief(pairs: int, workers: int) -> dict[str, Any]:
    from tacocat.evaluation.matches import match

    rows, diffs = [], []
    for opponent in BELIEF_OPPONENTS:
        scores = {}
        for mode in BELIEF_MODES:
            m = match(f"search:belief={mode}", opponent, deal_pairs=pairs, seed=SEED, workers=workers)
            scores[mode] = _pair_scores(m)
            rows.append({"opponent": opponent, "belief": mode, **_interval(m)})
        for mode in ("off", "soft"):
            diffs.append(
                {"opponent": opponent, "versus": f"{mode} - on", **_paired_difference(scores[mode], scores["on"])}
            )
    return {"rows": rows, "differences": diffs}


def render_belief(data: dict[str, Any]) -> str:
    lines = _match_table(
        {"opponent": "---", "belief": "---"},
        data["rows"],
        lambda r: [f"`{r['opponent']}`", r["belief"]],
        "search's win rate",
    )
    lines += ["", "| opponent | difference (same deals) | mean | 95% paired CI |", "|---|---|---:|---|"]
    for d in data["differences"]:
        lines.append(f"| `{d['opponent']}` | {d['versus']} | {d['mean']:+.3f} | [{d['low']:+.3f}, {d['high']:+.3f}] |")
    return "\n".join(lines)


def run_budget(pairs: dict[int, int], workers: int) -> dict[str, Any]:
    from tacocat.evaluation.matches import match

    rows = []
    for budget, n in pairs.items():
        for opponent in ("counter", "search"):
            if opponent == "search" and int(budget) == 96:
                continue  # the mirror match: 0.5 by symmetry
            m = match(f"search:simulations={budget}", opponent, deal_pairs=n, seed=SEED, workers=workers)
            rows.append({"simulations": int(budget), "opponent": opponent, **_interval(m), "wall_s": m.wall_s})
    return {"rows": rows}


def render_budget(data: dict[str, Any]) -> str:
    return "\n".join(
        _match_table(
            {"simulations": "---:", "opponent": "---"},
            data["rows"],
            lambda r: [str(r["simulations"]), f"`{r['opponent']}`"],
            "win rate",
        )
    )


def plot_budget(data: dict[str, Any], path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.0))
    ax = fig.subplots()
    for opponent, marker in (("counter", "o"), ("search", "s")):
        rows = [r for r in data["rows"] if r["opponent"] == opponent]
        x = np.array([r["simulations"] for r in rows])
        y = np.array([r["win_rate"] for r in rows])
        lo = np.array([r["paired"][0] for r in rows])
        hi = np.array([r["paired"][1] for r in rows])
        ax.errorbar(
            x,
            y,
            yerr=[y - lo, hi - y],
            fmt=f"{marker}-",
            capsize=4,
            label=f"vs {opponent}" + (" (96 simulations)" if opponent == "search" else ""),
        )
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_xticks([r["simulations"] for r in data["rows"] if r["opponent"] == "counter"])
    ax.get_xaxis().set_major_formatter("{x:.0f}")
    ax.get_xaxis().set_minor_formatter("")
    ax.set_xlabel("simulations per decision")
    ax.set_ylabel("win rate (95% paired interval)")
    ax.set_title("Search strength against its budget")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def run_crossplay(pairs: int, workers: int) -> dict[str, Any]:
    from tacocat.evaluation.tournament import tournament

    t = tournament(CROSSPLAY, deal_pairs=pairs, seed=SEED, workers=workers, n_boot=1000)
    index = {name: i for i, name in enumerate(t.agents)}
    rows = []
    for m in t.matches:
        diff = t.ratings.ratings[index[m.agent_a]] - t.ratings.ratings[index[m.agent_b]]
        predicted = 1.0 / (1.0 + 10.0 ** (-diff / 400.0))
        half = (m.ci_high - m.ci_low) / 2.0
        rows.append(
            {
                "a": m.agent_a,
                "b": m.agent_b,
                **_interval(m),
                "bt_predicted": float(predicted),
                "fit_error": float(m.win_rate_a - predicted),
                "sampling_half_width": float(half),
                "fit_error_exceeds_sampling": bool(abs(m.win_rate_a - predicted) > half),
            }
        )
    return {"agents": t.agents, "ratings": t.ratings.to_dict(), "rows": rows, "leaderboard": t.leaderboard()}


def render_crossplay(data: dict[str, Any]) -> str:
    lines = [
        "| rank | agent | Bradley–Terry rating (Elo scale, mean 0) | 95% bootstrap interval (deal pairs) |",
        "|---:|---|---:|---|",
    ]
    for rank, r in enumerate(data["leaderboard"], 1):
        lines.append(f"| {rank} | `{r['agent']}` | {r['rating']:.0f} | [{r['low']:.0f}, {r['high']:.0f}] |")
    lines += [
        "",
        "| A | B | deal pairs | A's win rate | 95% paired CI | BT prediction | fit error | fit error > sampling? |",
        "|---|---|---:|---:|---|---:|---:|---|",
    ]
    for r in data["rows"]:
        lines.append(
            f"| `{r['a']}` | `{r['b']}` | {r['deal_pairs']} | {r['win_rate']:.3f} | {_ci(r['paired'])} | "
            f"{r['bt_predicted']:.3f} | {r['fit_error']:+.3f} | "
            f"{'**yes**' if r['fit_error_exceeds_sampling'] else 'no'} |"
        )
    return "\n".join(lines)


def run_search_speed(games: int, workers: int) -> dict[str, Any]:
    from tacocat.agents.registry import make_agent
    from tacocat.evaluation.arena import play_game

    rows = []
    for budget in (24, 48, 96, 200):
        search, counter = make_agent("search", simulations=budget), make_agent("counter")
        start = time.perf_counter()
        for game in range(games):
            seats = [search, counter] if game % 2 == 0 else [counter, search]
            play_game(seats, seed=game, keep_events=False)
        rows.append(
            {
                "simulations": budget,
                "decisions": search.decisions,
                "decisions_per_s": search.decisions_per_second,
                "s_per_game": (time.perf_counter() - start) / games,
            }
        )
    return {"rows": rows, "note": "one core; timings depend on the machine and its load"}


def render_search_speed(data: dict[str, Any]) -> str:
    lines = ["| simulations | searched decisions | decisions/s | s per game |", "|---:|---:|---:|---:|"]
    for r in data["rows"]:
        lines.append(f"| {r['simulations']} | {r['decisions']} | {r['decisions_per_s']:.0f} | {r['s_per_game']:.2f} |")
    return "\n".join(lines)


def run_champion(pairs: dict[str, int], workers: int) -> dict[str, Any]:
    """The shipped league policy against each opponent (opponent: deal pairs)."""
    import hashlib

    from tacocat.agents.mlp_agent import CHAMPION
    from tacocat.agents.policy_file import load_policy_file
    from tacocat.evaluation.matches import match

    _, meta = load_policy_file(CHAMPION)
    model = {
        "file": str(CHAMPION.relative_to(ROOT)),
        "sha256": hashlib.sha256(CHAMPION.read_bytes()).hexdigest(),
        **{k: meta[k] for k in ("experiment", "seed", "timesteps", "algorithm", "ruleset_hash")},
    }
    rows = []
    for opponent, n in pairs.items():
        m = match("champion", opponent, deal_pairs=n, seed=SEED, workers=workers)
        rows.append({"opponent": opponent, **_interval(m), "wall_s": m.wall_s})
    return {"model": model, "rows": rows}


def render_champion(data: dict[str, Any]) -> str:
    model = data["model"]
    return "\n".join(
        [
            f"Model `{model['file']}` (SHA-256 `{model['sha256'][:16]}…`): experiment `{model['experiment']}`, "
            f"seed {model['seed']}, {model['timesteps']:,} env steps.",
            "",
            *_match_table(
                {"opponent": "---"},
                data["rows"],
                lambda r: [f"`{r['opponent']}`"],
                "champion's win rate",
                verdict="beats it?",
            ),
        ]
    )


def run_training(seeds: int, workers: int) -> dict[str, Any]:
    """The main job (`make main`: the default config, then its final evaluation) for seeds
    0..seeds-1, with each run's learning curve (its eval.csv)."""
    import csv
    import tempfile

    from tacocat.train.config import load_experiment
    from tacocat.train.evaluation import evaluate_run
    from tacocat.train.loop import train

    runs = []
    with tempfile.TemporaryDirectory() as root:
        for seed in range(seeds):
            config = load_experiment(MAIN_CONFIG, seed, [f"run_root={root}", f"eval.workers={workers}"])
            started = time.perf_counter()
            run = train(config)
            run_dir = run.run_dir
            trained = time.perf_counter()
            final = evaluate_run(run_dir, config, learner=run.spec)
            timesteps = json.loads((run_dir / "final.json").read_text())["timesteps"]
            with (run_dir / "eval.csv").open(newline="") as f:
                curve = [
                    {
                        "timesteps": int(r["timesteps"]),
                        "opponent": r["opponent"],
                        "win_rate": float(r["win_rate"]),
                        "paired": [float(r["ci_low"]), float(r["ci_high"])],
                    }
                    for r in csv.DictReader(f)
                ]
            runs.append(
                {
                    "seed": seed,
                    "timesteps": timesteps,
                    "train_wall_s": trained - started,
                    "steps_per_s": timesteps / (trained - started),
                    "eval_wall_s": time.perf_counter() - trained,
                    "final": [
                        {
                            "opponent": r["opponent"],
                            "deal_pairs": r["deal_pairs"],
                            "win_rate": r["win_rate"],
                            "paired": [r["ci_low"], r["ci_high"]],
                            "wilson": [r["wilson_low"], r["wilson_high"]],
                        }
                        for r in final
                    ],
                    "curve": curve,
                }
            )
    return {"config": str(MAIN_CONFIG.relative_to(ROOT)), "runs": runs}


def render_training(data: dict[str, Any]) -> str:
    from tacocat.evaluation.stats import verdict as beats

    opponents = [r["opponent"] for r in data["runs"][0]["final"]]
    lines = [
        f"Config `{data['config']}`, final model (greedy) against each opponent: win rate, 95% paired CI, deal pairs.",
        "",
        "| seed | timesteps | training wall time | steps/s | evaluation wall time | "
        + " | ".join(f"vs `{o}`" for o in opponents)
        + " |",
        "|---:|---:|---:|---:|---:|" + "---|" * len(opponents),
    ]
    for run in data["runs"]:
        cells = [
            f"{r['win_rate']:.3f} {_ci(r['paired'])} / {r['deal_pairs']}"
            + (" (beats it)" if beats(*r["paired"]) == "yes" else "")
            for r in run["final"]
        ]
        lines.append(
            f"| {run['seed']} | {run['timesteps']:,} | {run['train_wall_s']:.0f} s | {run['steps_per_s']:,.0f} | "
            f"{run['eval_wall_s']:.0f} s | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def plot_training(data: dict[str, Any], path: Path) -> None:
    """The seeds' learning curves, one panel per training-time evaluation opponent."""
    from matplotlib.figure import Figure

    opponents = list(dict.fromkeys(p["opponent"] for p in data["runs"][0]["curve"]))
    fig = Figure(figsize=(4.0 * len(opponents), 3.8))
    axes = fig.subplots(1, len(opponents), sharey=True, squeeze=False)[0]
    for ax, opponent in zip(axes, opponents, strict=True):
        for run in data["runs"]:
            points = sorted(
                (p["timesteps"], p["win_rate"], *p["paired"]) for p in run["curve"] if p["opponent"] == opponent
            )
            x, y, lo, hi = (np.array(v) for v in zip(*points, strict=True))
            ax.plot(x, y, marker="o", ms=3, label=f"seed {run['seed']}")
            ax.fill_between(x, lo, hi, alpha=0.12)
        ax.axhline(0.5, color="grey", lw=0.8, ls=":")
        ax.set_title(f"vs {opponent}")
        ax.set_xlabel("timesteps")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("win rate (95% paired interval)")
    axes[-1].legend(loc="lower right", fontsize=8)
    fig.suptitle(f"The main job's learning curves (make main, {len(data['runs'])} seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


EXACT_PRESETS = ["tiny", "small", "skirmish", "jumbo"]
#: every agent with a JAX form, and the exploiter-league candidate (docs/EXPLOITABILITY.md)
FULL_GAME_AGENTS = [
    "champion",
    "league:path=docs/results/league_exploiter_policy.npz",
    "counter",
    "planner",
    "highcard",
    "random",
]


def run_exploitability(size: dict[str, int], workers: int) -> dict[str, Any]:
    """benchmarks/exploitability.py's exact NashConv on every preset and the approximate best
    responses on the full game (its validation against exact best responses is
    `python -m benchmarks.exploitability validate`, with its own results file)."""
    from benchmarks import exploitability as ex

    # the training runs (the presets' policies, the exploiters: hours) stay in runs/regenerate/,
    # so the same command resumes an interrupted section, reusing every finished run
    runs = ROOT / "runs" / "regenerate"
    full_runs = runs / f"exploitability_{size['full_steps']}_{size['full_deal_pairs']}"
    return {
        "exact": ex.exact_table(EXACT_PRESETS, out=runs / "exploitability_exact"),
        "full": ex.full_game(
            FULL_GAME_AGENTS,
            size["full_steps"],
            size["full_seeds"],
            full_runs,
            deal_pairs=size["full_deal_pairs"],
            workers=workers,
        )
        if size["full_steps"] > 2
        else [],
    }


def render_exploitability(data: dict[str, Any]) -> str:
    from benchmarks import exploitability as ex

    parts = [
        "**Exact NashConv on the presets** (0 at an equilibrium; exploitability is half of it):",
        "",
        ex.render_exact(data["exact"]),
    ]
    if data["full"]:
        parts += [
            "",
            "**The full game** (a lower bound on exploitability: the exploiter's expected return):",
            "",
            ex.render_full(data["full"]),
        ]
    return "\n".join(parts)


SECTIONS: dict[str, tuple[Callable[..., dict[str, Any]], Callable[[dict[str, Any]], str]]] = {
    "ladder": (run_ladder, render_ladder),
    "counter": (run_counter, render_counter),
    "belief": (run_belief, render_belief),
    "budget": (run_budget, render_budget),
    "crossplay": (run_crossplay, render_crossplay),
    "search_speed": (run_search_speed, render_search_speed),
    "champion": (run_champion, render_champion),
    "training": (run_training, render_training),
    "exploitability": (run_exploitability, render_exploitability),
}
#: sections that also draw a figure from their results: <out>/<section>.png
FIGURES: dict[str, Callable[[dict[str, Any], Path], None]] = {"budget": plot_budget, "training": plot_training}


def _ci(pair: list[float]) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def _match_table(
    labels: dict[str, str],
    rows: list[dict[str, Any]],
    label_cells: Callable[[dict[str, Any]], list[str]],
    rate: str,
    verdict: str | None = None,
) -> list[str]:
    """The markdown lines of a table of matches (`_interval` rows): the label columns
    (`labels`: header -> alignment, `label_cells`: a row's cells), then deal pairs, the win rate
    (headed `rate`), the paired and Wilson intervals and, headed `verdict` if given, whether
    the paired interval lies above 0.5. The one layout of every match table in BENCHMARKS."""
    from tacocat.evaluation.stats import verdict as beats

    header = [*labels, "deal pairs", rate, "95% paired CI", "95% Wilson CI", *([verdict] if verdict else [])]
    align = [*labels.values(), "---:", "---:", "---", "---", *(["---"] if verdict else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        cells = [*label_cells(r), str(r["deal_pairs"]), f"{r['win_rate']:.3f}", _ci(r["paired"]), _ci(r["wilson"])]
        lines.append("| " + " | ".join(cells + ([beats(*r["paired"])] if verdict else [])) + " |")
    return lines


def render(section: str, data: dict[str, Any]) -> str:
    """The markdown of a section's results (table + stamp line), from its JSON alone."""
    s = data["stamp"]
    dirty = " (with uncommitted changes)" if s["dirty"] else ""
    line = (
        f"*Generated by `{s['command']}` at commit `{s['commit'][:10]}`{dirty} on {s['date_utc']} UTC; "
        f"Python {_python_version(s)}, numpy {s['versions']['numpy']}; ruleset `{s['ruleset_hash']}`; "
        f"{s['machine']['machine']}, {s['machine']['cpu_count']} CPUs, load average "
        f"{s['load_average_start'][0]:.1f} at start. Source: `docs/results/{section}.json`.*"
    )
    return SECTIONS[section][1](data["results"]) + "\n\n" + line + "\n"


# ---------------------------------------------------------------------------------------
# docs blocks
# ---------------------------------------------------------------------------------------
def _block(section: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- BEGIN RESULTS: {section} -->\n)(.*?)(<!-- END RESULTS: {section} -->)", re.DOTALL)


def docs_blocks(text: str) -> dict[str, str]:
    """{section: block content} of every results block in a docs page."""
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"<!-- BEGIN RESULTS: (\w+) -->\n(.*?)<!-- END RESULTS: \1 -->", text, re.DOTALL)
    }


def load(section: str, results_dir: Path = RESULTS) -> dict[str, Any]:
    return json.loads((results_dir / f"{section}.json").read_text())


def write_docs(path: Path = DOCS, results_dir: Path = RESULTS) -> list[str]:
    """Replace every results block of `path` whose JSON exists; the sections updated."""
    text = path.read_text()
    done = []
    for section in docs_blocks(text):
        if (results_dir / f"{section}.json").is_file():
            body = render(section, load(section, results_dir))
            text = _block(section).sub(lambda m: m.group(1) + body + m.group(3), text)  # noqa: B023 (used at once)
            done.append(section)
    path.write_text(text)
    return done


def stale_blocks(path: Path = DOCS, results_dir: Path = RESULTS) -> list[str]:
    """Sections whose docs block differs from what their JSON renders to (or has no JSON)."""
    stale = []
    for section, body in docs_blocks(path.read_text()).items():
        json_path = results_dir / f"{section}.json"
        if not json_path.is_file() or body != render(section, load(section, results_dir)):
            stale.append(section)
    return stale


def stale_pages(results_dir: Path = RESULTS) -> dict[str, list[str]]:
    """{page: its stale blocks} of the docs pages that have one (`--check`): the results blocks
    of every page (`stale_blocks`) and, on EXPLOITABILITY.md, the published validations of
    `benchmarks.exploitability` (`stale_validations`: `VALIDATION <preset>` here)."""
    from benchmarks import exploitability as ex

    stale = {page.name: stale_blocks(page, results_dir) for page in PAGES}
    stale.setdefault(ex.EXPLOITABILITY_DOC.name, []).extend(f"VALIDATION {p}" for p in ex.stale_validations())
    return {page: sections for page, sections in stale.items() if sections}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the published sizes (quick runs)")
    parser.add_argument(
        "--size",
        type=json.loads,
        default=None,
        help='JSON size of the one section in --only, e.g. \'{"24": 40, "800": 3}\' for budget',
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite the docs' blocks")
    parser.add_argument("--check", action="store_true", help="only check the docs against the JSON")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_pages(args.out)
        print(
            "docs match the results JSON"
            if not stale
            else "stale results blocks: "
            + "; ".join(f"{page}: {', '.join(sections)}" for page, sections in stale.items())
        )
        return 1 if stale else 0
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; known: {', '.join(SECTIONS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python -m benchmarks.regenerate " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.size is not None and len(sections) != 1:
        parser.error("--size needs exactly one section in --only")
    for section in sections:
        size = _scaled(SIZES[section], args.scale) if args.size is None else args.size
        if section == "budget":
            size = {int(k): v for k, v in size.items()}
        run, _ = SECTIONS[section]
        meta = stamp(section, size, command.strip())
        started = time.perf_counter()
        results = run(size, args.workers)
        meta["wall_s"] = time.perf_counter() - started
        meta["load_average_end"] = list(os.getloadavg())
        data = {"stamp": meta, "results": results}
        (args.out / f"{section}.json").write_text(json.dumps(data, indent=2) + "\n")
        (args.out / f"{section}.md").write_text(render(section, data))
        if section in FIGURES:
            FIGURES[section](results, args.out / f"{section}.png")
        print(render(section, data), flush=True)
    if not args.no_docs and args.out == RESULTS:
        print("docs blocks updated:", ", ".join(s for page in PAGES for s in write_docs(page)) or "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
