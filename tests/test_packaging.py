"""Packaging facts: one version, light engine imports, the public names resolve."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import tacocat


def test_the_installed_version_is_the_package_version():
    assert importlib.metadata.version("tacocat-env") == tacocat.__version__


def test_the_engine_imports_without_the_rl_libraries():
    code = (
        "import sys, tacocat, tacocat.game.engine, tacocat.game.observation, tacocat.game.view; "
        "heavy = [m for m in ('pettingzoo', 'gymnasium', 'torch', 'jax') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_every_public_name_resolves():
    for name in tacocat.__all__:
        assert getattr(tacocat, name) is not None
    assert set(tacocat.__all__) <= set(dir(tacocat))


def test_env_stays_the_function_after_its_module_is_imported():
    code = (
        "from tacocat.game.env import raw_env; import tacocat; "
        "e = tacocat.env(); e.reset(seed=0); print(type(e).__name__, callable(tacocat.raw_env))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["ForwardingOrderEnforcingWrapper", "True"]


def test_tacocat_version_prints_the_package_version():
    from typer.testing import CliRunner

    from tacocat.cli.app import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"tacocat {tacocat.__version__}"


def test_a_wheel_of_the_repository_installs_one_top_level_package(tmp_path):
    """The wheel holds `tacocat` and its dist-info only: no `agents`, `experiments` or other
    generic names in a researcher's site-packages."""
    import shutil
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    source = tmp_path / "source"  # a copy, so that no build folder of the checkout is read or left
    shutil.copytree(root / "tacocat", source / "tacocat", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(root / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("tacocat_env-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"tacocat"}
    assert "tacocat/agents/models/league_champion.npz" in names and "tacocat/train/configs/main.yaml" in names
    assert "tacocat/web/static/index.html" in names
