"""The bad-input sweep (tools/bad_input_sweep.py): more than 700 bad inputs through the API, the
CLI and files, each a clear error: no traceback and no silent acceptance."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "bad_input_sweep.py"


@pytest.fixture(scope="module")
def sweep():
    spec = importlib.util.spec_from_file_location("bad_input_sweep", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # over 15 s on the 2-core machine; `-m 'not slow'` skips it
def test_every_bad_input_is_a_clear_error(sweep, tmp_path):
    report = sweep.run_sweep(tmp_path)
    assert len(report.outcomes) >= 700
    assert {o.case.channel for o in report.outcomes} == {"rules", "files", "api", "specs", "config", "cli",
                                                         *sweep.SURFACE_MODULES}
    bad = [f"[{o.verdict}] {o.case.name}: {o.detail}" for o in report.outcomes if o.verdict != "clear"]
    assert not bad, "\n".join(bad)


def test_the_sweep_can_see_a_traceback_and_a_silent_acceptance(sweep):
    cases = [sweep.Case("api", "index error", lambda: [][1]), sweep.Case("api", "accepted", lambda: None),
             sweep.Case("api", "refused", lambda: int("x"))]
    assert [sweep.classify(c).verdict for c in cases] == ["traceback", "silent", "clear"]
