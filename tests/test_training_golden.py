"""Golden training runs (benchmarks/training_goldens.py): short fixed-seed runs of the league
and SB3 backends reproduce the weights, per-iteration losses and evaluation win rates recorded
in tests/data/training_golden.json. A refactor of the trainers or the run loop that changes
what they train fails here; a deliberate change is re-recorded with
`python -m benchmarks.training_goldens --record` and its diff explained in the commit.
(`league_main_3_iterations`, main.yaml's league for 3 iterations, takes minutes: run it with
`python -m benchmarks.training_goldens --only league_main_3_iterations`.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import training_goldens

RECORDED = json.loads(training_goldens.PATH.read_text())


@pytest.mark.slow  # each is a short training run: 10 to 40 s on the 2-core machine
@pytest.mark.parametrize("name", sorted(set(training_goldens.RUNS) - training_goldens.SLOW))
def test_a_golden_training_run_is_reproduced(name: str, tmp_path: Path) -> None:
    assert training_goldens.run(name, tmp_path) == RECORDED[name]


def test_every_golden_run_is_recorded() -> None:
    assert set(RECORDED) == set(training_goldens.RUNS)
