"""The documentation site builds with `mkdocs build --strict`: no warnings at all.

Catches dead links between pages, pages missing from the navigation and docstrings that
mkdocstrings cannot render (the API reference is generated from the code).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_strict_without_warnings(tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mkdocs build --strict failed ({proc.returncode}):\n{output}"
    assert "WARNING" not in output, output
    assert (site / "index.html").is_file()
    for page in ("game", "agents", "evaluation", "analysis", "train", "front_doors"):
        assert (site / "api" / page / "index.html").is_file(), page


def test_generated_environment_tables_match_the_code():
    """The action table and observation layout in ENVIRONMENT.md are generated from the code;
    a change to the codec or the layout without `tools/gen_env_tables.py --write` fails here."""
    proc = subprocess.run(
        [sys.executable, "tools/gen_env_tables.py", "--check", "docs/ENVIRONMENT.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
