"""The bad-input sweep (tools/bad_input_sweep.py): more than 700 bad inputs through the API, the
CLI and files, each a clear error: no traceback and no silent acceptance."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "bad_input_sweep.py"


def _load_sweep():
    spec = importlib.util.spec_from_file_location("bad_input_sweep", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SWEEP = _load_sweep()


@pytest.fixture(scope="module")
def sweep():
    return SWEEP


@pytest.mark.slow  # the whole sweep is over a minute on the 2-core machine; its groups run on separate workers
@pytest.mark.parametrize("group", SWEEP.GROUPS)
def test_every_bad_input_is_a_clear_error(sweep, group, tmp_path):
    report = sweep.run_sweep(tmp_path, (group,))
    assert report.outcomes
    bad = [f"[{o.verdict}] {o.case.name}: {o.detail}" for o in report.outcomes if o.verdict != "clear"]
    assert not bad, "\n".join(bad)


def test_the_sweep_covers_every_channel(sweep, tmp_path):
    cases = sweep.all_cases(tmp_path)  # built, not run
    assert len(cases) >= 700
    assert {c.channel for c in cases} == {"rules", "files", "api", "specs", "config", "cli", *sweep.SURFACE_MODULES}


def test_the_sweep_can_see_a_traceback_and_a_silent_acceptance(sweep):
    cases = [sweep.Case("api", "index error", lambda: [][1]), sweep.Case("api", "accepted", lambda: None),
             sweep.Case("api", "refused", lambda: int("x"))]
    assert [sweep.classify(c).verdict for c in cases] == ["traceback", "silent", "clear"]
