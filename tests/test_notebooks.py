"""The notebooks in notebooks/: each runs top to bottom at small budgets, and none is stored
with outputs.

Budgets. The first code cell of every notebook reads its budgets (games, deal pairs,
timesteps, the run directory) through `budget(NAME, default)`, which returns the environment
variable `TACOCAT_NB_<NAME>` when it is set. This test sets them to the small values of
`TEST_BUDGETS` (the kernel inherits the test's environment) and points `RUN_ROOT` at a
temporary directory, so runs, game files and tournament outputs never land in the repository.

Kernel. The notebooks run in a kernel of *this* interpreter: a kernelspec whose command is
`sys.executable` is installed into a temporary prefix (so a `python3` kernelspec elsewhere on
the machine cannot pick another Python), and a first injected cell checks `sys.prefix`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import ipykernel  # noqa: F401  (the kernel the notebooks run in: a dev dependency, never skipped)
import nbclient
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
#: the notebooks that train (a kernel started, a run trained and evaluated): 14-15 s each on
#: their own, so `slow`
SLOW_NOTEBOOKS = {"02_train_and_evaluate", "03_strategy_analysis"}

#: small budgets (environment variables TACOCAT_NB_<NAME>) for every notebook
TEST_BUDGETS = {
    "DEAL_PAIRS": "5",
    "TIMESTEPS": "1024",
    "TOURNAMENT_DEAL_PAIRS": "3",
    "ANALYSIS_DEAL_PAIRS": "10",
    "ATTACK_DEAL_PAIRS": "5",
    "SEED": "0",
}
#: budgets whose defaults are fine in a test (RUN_ROOT is set to a temporary directory)
KEEP_DEFAULT = {"CONFIG", "MODEL_PATH", "RUN_ROOT"}
CELL_TIMEOUT_S = 300


def first_code_cell(nb: nbformat.NotebookNode) -> str:
    return next(cell.source for cell in nb.cells if cell.cell_type == "code")


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A kernelspec that runs this interpreter, installed into a temporary prefix."""
    from ipykernel.kernelspec import install

    prefix = tmp_path_factory.mktemp("kernel")
    name = "tacocat-notebook-test"
    install(prefix=str(prefix), kernel_name=name)
    spec_dir = prefix / "share" / "jupyter" / "kernels"
    argv = json.loads((spec_dir / name / "kernel.json").read_text())["argv"]
    assert argv[0] == sys.executable, argv
    return name, spec_dir


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS] == [
        "01_quickstart.ipynb",
        "02_train_and_evaluate.ipynb",
        "03_strategy_analysis.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_budgets_are_read_in_the_first_code_cell(path: Path):
    source = first_code_cell(nbformat.read(path, as_version=4))
    names = re.findall(r'budget\("(\w+)"', source)
    assert names, f"{path.name}: the first code cell reads no budget(NAME, default)"
    missing = set(names) - set(TEST_BUDGETS) - KEEP_DEFAULT
    assert not missing, f"{path.name}: budgets {sorted(missing)} have no small test value in TEST_BUDGETS"
    assert "TACOCAT_NB_" in source


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW_NOTEBOOKS else p for p in NOTEBOOKS],
    ids=lambda p: p.stem,
)
def test_notebook_runs_top_to_bottom(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel_name):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    for name, value in TEST_BUDGETS.items():
        monkeypatch.setenv(f"TACOCAT_NB_{name}", value)
    monkeypatch.setenv("TACOCAT_NB_RUN_ROOT", str(tmp_path / "runs"))
    monkeypatch.delenv("TACOCAT_NB_MODEL_PATH", raising=False)
    monkeypatch.delenv("TACOCAT_NB_CONFIG", raising=False)
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the notebooks choose inline plots themselves

    nb = nbformat.read(path, as_version=4)
    n_cells = len(nb.cells)
    check = f"import sys\nassert sys.prefix == {sys.prefix!r}, sys.prefix"
    nb.cells.insert(0, nbformat.v4.new_code_cell(check))

    name, spec_dir = kernel_name
    km = KernelManager(kernel_name=name, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec_dir)]))
    client = nbclient.NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT_S,
        startup_timeout=120,
        resources={"metadata": {"path": str(tmp_path)}},  # the kernel's working directory
    )
    client.execute()  # raises CellExecutionError, naming the cell, on any error

    cells = nb.cells[1:]
    assert len(cells) == n_cells
    for index, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"{path.name}, cell {index}: {errors}"
        if "plt.show()" in cell.source:  # inline plots must come out (not swallowed by an Agg backend)
            images = [o for o in cell.outputs if "image/png" in o.get("data", {})]
            assert images, f"{path.name}, cell {index}: a plot cell produced no image"
    assert (tmp_path / "runs").exists() or path.name == "01_quickstart.ipynb"


def _git_notebooks() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "--", "notebooks"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return [ROOT / line for line in out.splitlines() if line.endswith(".ipynb")]


def test_notebooks_are_stored_without_outputs():
    """Every notebook (in git, and in the working tree) has no outputs and no execution counts."""
    paths = sorted(set(NOTEBOOKS) | {p for p in _git_notebooks() if p.exists()})
    assert paths
    problems = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if cell.outputs:
                problems.append(f"{path.name} cell {index}: {len(cell.outputs)} stored output(s)")
            if cell.execution_count is not None:
                problems.append(f"{path.name} cell {index}: execution_count {cell.execution_count}")
    assert not problems, "notebooks must be stored with outputs stripped:\n" + "\n".join(problems)
