"""Golden training runs (benchmarks/training_goldens.py): short fixed-seed runs of the league
and SB3 backends reproduce the evaluation win rates, game counts, weights and per-iteration
losses recorded in tests/data/training_golden.json: bit for bit on a platform that recorded
them, within a float tolerance elsewhere. A refactor of the trainers or the run loop that
changes what they train fails here; a deliberate change is re-recorded with
`python -m benchmarks.training_goldens --record` and its diff explained in the commit.
(`league_main_3_iterations`, main.yaml's league for 3 iterations, takes minutes: run it with
`python -m benchmarks.training_goldens --only league_main_3_iterations`.)"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from benchmarks import training_goldens
from benchmarks.training_goldens import differences, merge, platform_key

RECORDED = json.loads(training_goldens.PATH.read_text())


@pytest.mark.slow  # each is a short training run: 10 to 40 s on the 2-core machine
@pytest.mark.parametrize("name", sorted(set(training_goldens.RUNS) - training_goldens.SLOW))
def test_a_golden_training_run_is_reproduced(name: str, tmp_path: Path) -> None:
    assert differences(training_goldens.run(name, tmp_path), RECORDED[name]) == []


def test_every_golden_run_is_recorded() -> None:
    assert set(RECORDED) == set(training_goldens.RUNS)
    assert all(record["platforms"] for record in RECORDED.values())


def _as_found(record: dict[str, Any], platform: str) -> dict[str, Any]:
    """A record as a run on `platform` would find it (one platform's exact part)."""
    found = copy.deepcopy(record)
    found["platforms"] = {platform: next(iter(found["platforms"].values()))}
    return found


def _scale_weight(found: dict[str, Any]) -> None:
    found["weights"][0][1] *= 1.001


def _move_loss(found: dict[str, Any]) -> None:
    exact = next(iter(found["platforms"].values()))
    exact["progress_losses"][0][1] = str(float(exact["progress_losses"][0][1]) * 1.01)


def _flip_last_bit(found: dict[str, Any]) -> None:
    exact = next(iter(found["platforms"].values()))
    exact["policy_sha256"] = exact["policy_sha256"][:-1] + ("0" if exact["policy_sha256"][-1] != "0" else "1")


def _count_one_more_game(found: dict[str, Any]) -> None:
    found["progress_counts"][0][4] = str(int(found["progress_counts"][0][4]) + 1)


def _win_rate(found: dict[str, Any]) -> None:
    found["eval_win_rates"][0][1] = "0.999"


@pytest.mark.parametrize("change, fragment", [
    (_count_one_more_game, "progress_counts"), (_win_rate, "eval_win_rates"), (_scale_weight, "weights: array 0"),
    (_move_loss, "progress_losses"),
])
def test_a_changed_run_is_told_apart_on_any_platform(change: Callable[[dict[str, Any]], None], fragment: str) -> None:
    record = RECORDED["league_smoke"]
    found = _as_found(record, "another machine")
    assert differences(found, record) == []
    change(found)
    (problem,) = differences(found, record)
    assert problem.startswith(fragment)


def test_bits_are_compared_only_on_the_platform_that_recorded_them() -> None:
    record = RECORDED["league_smoke"]
    recorded_platform = next(iter(record["platforms"]))
    elsewhere, there = _as_found(record, "another machine"), _as_found(record, recorded_platform)
    _flip_last_bit(elsewhere)
    _flip_last_bit(there)
    assert differences(elsewhere, record) == []
    (problem,) = differences(there, record)
    assert problem.startswith(f"not bit-exact on the platform that recorded it ({recorded_platform})")


def test_recording_adds_a_platform_to_a_record_it_reproduces_and_replaces_one_it_does_not() -> None:
    record = RECORDED["league_smoke"]
    found = _as_found(record, "another machine")
    _flip_last_bit(found)
    assert set(merge(found, record)["platforms"]) == {*record["platforms"], "another machine"}
    _win_rate(found)
    assert merge(found, record) == found


def test_the_platform_names_the_cpus_simd_and_the_versions() -> None:
    import numpy

    key = platform_key()
    assert f"numpy {numpy.__version__}" in key and "jax " in key
