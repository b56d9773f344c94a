"""benchmarks/equilibrium.py's parts that need no training run: the CFR+ anchor curves (a
preset's, OpenSpiel's on poker), the first point under the target, the table and the plot (a
training run's curve is the run loop's exploitability.csv, tested in tests/test_exact_training.py
and tests/test_league_poker.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

from benchmarks import equilibrium
from tacocat.analysis.best_response import nash_conv
from tacocat.analysis.store import load_tree
from tacocat.game.presets import preset_config


def test_the_cfr_curve_falls_to_the_solvers_own_nash_conv(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TACOCAT_CACHE", str(tmp_path / "trees"))
    tree = load_tree(preset_config("tiny"))
    curve = equilibrium.cfr_curve(tree, max_seconds=0.2)
    assert [p["iterations"] for p in curve[:3]] == [1, 2, 3] and curve[-1]["seconds"] >= 0.2
    assert curve[-1]["nash_conv"] < 1e-2 < nash_conv(tree, tree.uniform_policy())
    assert all(a["seconds"] <= b["seconds"] for a, b in itertools.pairwise(curve))


def test_the_table_says_where_each_run_reached_the_target(tmp_path: Path) -> None:
    def curve(*values: float) -> list[dict[str, float]]:
        return [
            {"steps": 1000 * (i + 1), "seconds": 10.0 * (i + 1), "nash_conv_sampling": v, "nash_conv_greedy": v / 2}
            for i, v in enumerate(values)
        ]

    results = {
        "preset": "tiny",
        "histories": 1643,
        "information_states": 100,
        "uniform_nash_conv": 1.0,
        "target": 0.05,
        "target_share": 0.05,
        "runs": [
            # with the average policy's NashConv, as a poker run records it
            {
                "method": "league_ppo",
                "seed": 0,
                "curve": [p | {"nash_conv_average": 0.04} for p in curve(0.5, 0.04, 0.06)],
            },
            {"method": "ppo_high_entropy", "seed": 0, "curve": curve(0.5, 0.2)},
        ],
        "cfr_plus": [
            {"iterations": 1, "seconds": 0.5, "nash_conv": 0.3},
            {"iterations": 2, "seconds": 1.5, "nash_conv": 0.01},
        ],
    }
    table = equilibrium.render(results)
    # the first point under the target (sampling NashConv), the end's sampling and greedy NashConv
    assert "| league_ppo | 0 | 3,000 | 0.0600 | 0.0300 | 0.0400 | 2,000 | 20 |" in table
    assert "| ppo_high_entropy | 0 | 2,000 | 0.2000 | 0.1000 | – | not reached | – |" in table
    assert "| CFR+ | – | 1.00e-02 after 2 iterations | – | – | – | 1.50 |" in table
    # per method: runs under the target, the end's sampling and greedy median and range, the second half's mean
    # and the average policy's at the end: runs at or under the target, median and range
    assert (
        "| league_ppo | 1 of 1 | 0.0600 [0.0600, 0.0600] | 0.0300 [0.0300, 0.0300] | 0.0500 [0.0500, 0.0500] "
        "| 1 of 1; 0.0400 [0.0400, 0.0400] |" in table
    )
    assert "| ppo_high_entropy | 0 of 1 | 0.2000 [0.2000, 0.2000] | 0.1000 [0.1000, 0.1000] | 0.2000" in table
    assert table.endswith("| – |")  # no average policy recorded
    equilibrium.plot(results, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
    # more methods than a palette has colours
    many = [{"method": f"m{i}", "seed": 0, "curve": curve(0.5, 0.1)} for i in range(12)]
    equilibrium.plot({**results, "runs": many}, tmp_path / "many.png")
    assert (tmp_path / "many.png").read_bytes()[:4] == b"\x89PNG"


def test_added_runs_keep_the_other_methods_and_replace_their_own(tmp_path: Path) -> None:
    """`--add`: the written file's other runs stay, with the steps and command that made them;
    a run of the same method and seed is replaced; the stamp lists both commands."""
    import json

    def run(method: str, seed: int, **extra: object) -> dict:
        return {"method": method, "seed": seed, "curve": [], **extra}

    old_results = {"steps": 1000, "every": 500, "runs": [run("a", 0), run("b", 0), run("b", 1)]}
    path = tmp_path / "equilibrium_kuhn_poker.json"
    path.write_text(json.dumps({"stamp": {"command": "old", "commit": "c0"}, "results": old_results}))
    new = {"steps": 5000, "runs": [run("b", 1, steps=5000, every=1000, command="new", commit="c1")]}
    results, info = equilibrium.added(path, new, {"command": "new", "commit": "c1"})
    assert [(r["method"], r["seed"]) for r in results["runs"]] == [("a", 0), ("b", 0), ("b", 1)]
    assert results["runs"][0] | {"curve": []} == run("a", 0, steps=1000, every=500, command="old", commit="c0")
    assert results["runs"][2]["steps"] == 5000 and info["commands"] == ["old", "new"]
    assert equilibrium.added(tmp_path / "absent.json", new, {"command": "new"}) == (new, {"command": "new"})


def test_the_openspiel_cfr_curve_falls_on_kuhn() -> None:
    """The poker anchor: OpenSpiel's CFR+ on Kuhn, NashConv of its average policy falling from
    the first iteration's (the checks' own NashConv is pyspiel's)."""
    import pyspiel

    curve = equilibrium.openspiel_cfr_curve(pyspiel.load_game("kuhn_poker"), max_seconds=0.05)
    assert [p["iterations"] for p in curve[:3]] == [1, 2, 3]
    assert curve[-1]["nash_conv"] < 0.05 < curve[0]["nash_conv"]
    assert all(a["seconds"] <= b["seconds"] for a, b in itertools.pairwise(curve))
