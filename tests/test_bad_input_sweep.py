"""The bad-input sweep (tests/support/bad_input_sweep.py): more than 700 bad inputs through the
API, the CLI and files, each a clear error: no traceback and no silent acceptance."""

from __future__ import annotations

import pytest

from support import bad_input_sweep as SWEEP


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
    cases = [
        sweep.Case("api", "index error", lambda: [][1]),
        sweep.Case("api", "accepted", lambda: None),
        sweep.Case("api", "refused", lambda: int("x")),
    ]
    assert [sweep.classify(c).verdict for c in cases] == ["traceback", "silent", "clear"]
