"""Golden training runs (tests/support/training_goldens.py): short fixed-seed runs of the league
and SB3 backends reproduce what tests/data/training_golden.json records of them on any
machine: the evaluation win rates and game counts exactly, the weights' norms and the
per-iteration losses within a float tolerance. A refactor of the trainers or the run loop that
changes what they train fails here; a deliberate change is re-recorded with
`python tests/support/training_goldens.py --record` and its diff explained in the commit.
(`league_main_3_iterations`, main.yaml's league for 3 iterations, takes a minute: run it with
`python tests/support/training_goldens.py --only league_main_3_iterations`.)

Bit-for-bit determinism is tested where it holds, on the machine running the tests: the league
run again in this process gives the same weights and losses to the last bit. (SB3's:
tests/test_training.py::test_same_seed_same_curve_and_weights.) No verdict here depends on which
machine recorded the file."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from support import training_goldens
from support.training_goldens import bits, differences, fingerprint

RECORDED = json.loads(training_goldens.PATH.read_text())


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The run directory of a golden run, trained once per module: the golden comparison and the
    determinism test share it."""
    root, done = tmp_path_factory.mktemp("goldens"), dict[str, Path]()

    def get(name: str) -> Path:
        if name not in done:
            done[name] = training_goldens.run(name, root)
        return done[name]

    return get


@pytest.mark.slow  # each is a short training run: 10 to 40 s on the 2-core machine
@pytest.mark.parametrize("name", sorted(set(training_goldens.RUNS) - training_goldens.SLOW))
def test_a_golden_training_run_is_reproduced(name: str, first_run: Callable[[str], Path]) -> None:
    assert differences(fingerprint(first_run(name)), RECORDED[name]) == []


@pytest.mark.slow  # a second league_smoke run: 1 s after the first (compiled), 25 s without it
def test_a_training_run_made_twice_on_this_machine_is_the_same_to_the_last_bit(
    first_run: Callable[[str], Path], tmp_path: Path
) -> None:
    """The golden comparison's league run, trained again: every weight array's SHA-256 and every
    loss's digits are the same, and so is the whole fingerprint, exactly."""
    first = first_run("league_smoke")
    again = training_goldens.run("league_smoke", tmp_path)
    assert bits(again) == bits(first)
    assert fingerprint(again) == fingerprint(first)


def test_one_ulp_of_one_weight_or_one_digit_of_one_loss_changes_the_bits(tmp_path: Path) -> None:
    """`bits` can fail: a run directory with one weight moved by one ulp, or one loss by its last
    digit, is told apart (run directories made here, without training)."""
    rng = np.random.default_rng(0)
    arrays = {"layer_0_weight": rng.normal(size=(4, 3)).astype(np.float32), "layer_0_bias": np.zeros(4, np.float32)}
    losses = {"policy_loss": "-0.0001", "value_loss": "0.07", "entropy": "1.4", "approx_kl": "1.6e-06"}

    def run_dir(name: str, arrays: dict[str, np.ndarray], losses: dict[str, str]) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        np.savez(folder / "policy.npz", metadata=np.array("{}"), **arrays)
        (folder / "progress.csv").write_text(",".join(losses) + "\n" + ",".join(losses.values()) + "\n")
        return folder

    first = bits(run_dir("first", arrays, losses))
    assert first == bits(run_dir("again", arrays, losses))
    weight = arrays["layer_0_weight"].copy()
    weight[1, 2] = np.nextafter(weight[1, 2], np.float32(np.inf))
    moved = bits(run_dir("ulp", {**arrays, "layer_0_weight": weight}, losses))
    assert [a == b for a, b in zip(moved["weights_sha256"], first["weights_sha256"], strict=True)] == [
        True,
        False,
    ]  # sorted names
    assert (
        bits(run_dir("digit", arrays, {**losses, "entropy": "1.4000001"}))["progress_losses"]
        != first["progress_losses"]
    )


def test_every_golden_run_is_recorded_with_its_portable_part_only() -> None:
    assert set(RECORDED) == set(training_goldens.RUNS)
    for name, record in RECORDED.items():  # no bits: those belong to the machine that recorded them
        league = {"progress_counts", "progress_losses"} if name.startswith("league") else set()
        assert set(record) == {"eval_win_rates", "weights", *league}, name


def _scale_weight(found: dict[str, Any]) -> None:
    """As a learning rate 1e-4 higher moves the norms (tests/support/training_goldens.py)."""
    found["weights"][0][1] *= 1 + 1e-4


def _move_loss(found: dict[str, Any]) -> None:
    found["progress_losses"][0][1] = str(float(found["progress_losses"][0][1]) * (1 + 1e-3))


def _count_one_more_game(found: dict[str, Any]) -> None:
    found["progress_counts"][0][4] = str(int(found["progress_counts"][0][4]) + 1)


def _win_rate(found: dict[str, Any]) -> None:
    found["eval_win_rates"][0][1] = "0.999"


@pytest.mark.parametrize(
    "change, fragment",
    [
        (_count_one_more_game, "progress_counts"),
        (_win_rate, "eval_win_rates"),
        (_scale_weight, "weights: array 0"),
        (_move_loss, "progress_losses"),
    ],
)
def test_a_changed_run_is_told_apart(change: Callable[[dict[str, Any]], None], fragment: str) -> None:
    record = RECORDED["league_smoke"]
    found = copy.deepcopy(record)
    assert differences(found, record) == []
    change(found)
    (problem,) = differences(found, record)
    assert problem.startswith(fragment)


@pytest.mark.parametrize("name", ["league_smoke", "sb3_smoke"])
def test_another_machines_rounding_is_the_same_run(name: str) -> None:
    """Every weight norm, sum and loss moved a little more than the most measured between two
    machines (tests/support/training_goldens.py) still reproduces the record."""
    record = RECORDED[name]
    found = copy.deepcopy(record)
    for w in found["weights"]:
        w[1], w[2], w[3] = w[1] * (1 + 2e-7), w[2] * (1 - 2e-7), w[3] + 2e-7 * w[1]
    if "progress_losses" in found:
        found["progress_losses"] = [[repr(float(x) + 3e-7) for x in row] for row in found["progress_losses"]]
    assert differences(found, record) == []
