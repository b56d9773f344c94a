"""The test session writes nothing into the user's home (issue 36; tests/conftest.py,
`_session_home`): HOME and the folders derived from it point into a temporary folder of the
session, and a session started with a fresh HOME leaves it empty."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SESSION_HOME
from tacocat.analysis import store

ROOT = Path(__file__).resolve().parents[1]
#: what conftest points into the session's home
VARIABLES = (
    "HOME",
    "TACOCAT_CACHE",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "IPYTHONDIR",
    "MPLCONFIGDIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_DATA_DIR",
    "JUPYTER_RUNTIME_DIR",
)

#: a test that writes where the libraries the suite drives write under ~
PROBE = """
import os
from pathlib import Path

import matplotlib
from IPython.paths import get_ipython_dir
from jupyter_core.paths import jupyter_data_dir

from tacocat.analysis import store


def test_write_where_the_libraries_write():
    for folder in (Path(os.path.expanduser("~/ray_results")), Path.home() / ".ray", Path(get_ipython_dir()),
                   Path(jupyter_data_dir()), Path(matplotlib.get_cachedir()), store.cache_dir()):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "probe").write_text("x")
"""


def test_home_and_what_derives_from_it_point_into_the_session_home() -> None:
    assert SESSION_HOME.name.startswith("tacocat-test-home-") and SESSION_HOME.is_dir()
    for name in VARIABLES:
        assert Path(os.environ[name]).is_relative_to(SESSION_HOME), name
    assert Path.home() == SESSION_HOME and Path("~/ray_results").expanduser().is_relative_to(SESSION_HOME)
    assert store.cache_dir().is_relative_to(SESSION_HOME)


def test_a_session_leaves_a_fresh_home_untouched(tmp_path: Path) -> None:
    pytest.importorskip("IPython")
    pytest.importorskip("jupyter_core")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in {*VARIABLES, "TACOCAT_TEST_HOME", "GIT_CONFIG_GLOBAL"}}
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT)]))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "-p",
            "conftest",
            "test_probe.py",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert list(home.iterdir()) == []
