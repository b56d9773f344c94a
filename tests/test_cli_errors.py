"""The CLI: every user error is one `error: ...` line, a non-zero exit and no traceback;
`tacocat --debug ...` shows the traceback. Output paths are checked before any game is played."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tacocat.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "smoke.yaml"


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def assert_clean_error(result, *fragments: str) -> None:
    text = result.output
    assert result.exit_code not in (0, None), text
    assert "Traceback" not in text, text
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    for fragment in fragments:
        assert fragment in text, (fragment, text)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "bad.yaml").write_text("max_rounds: [\n")
    (tmp_path / "yes.yaml").write_text("max_rounds: yes\n")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "folder").mkdir()
    (tmp_path / "exp_bad_agent.yaml").write_text(SMOKE.read_text().replace("agent: highcard", "agent: nope"))
    return tmp_path


CASES = [
    (["match", "random", "random", "--rules", "{t}/bad.yaml"], ["not valid YAML"]),
    (["match", "random", "random", "--rules", "{t}/yes.yaml"], ["max_rounds: a boolean"]),
    (["match", "random", "random", "--rules", "{t}/list.yaml"], ["must be a YAML mapping"]),
    (["match", "random", "random", "--rules", "{t}/folder"], ["--rules"]),
    (["match", "random", "random", "--rules", "{t}/missing.yaml"], ["--rules"]),
    (["match", "random", "search:simulations=-1"], ["simulations must be >= 1"]),
    (["match", "random", "search:search_replace=maybe"], ["must be of type bool"]),
    (["match", "random", "ppo:path={t}/folder"], ["is a folder"]),
    (["match", "random", "ppo:path={t}/afile"], ["not a valid model file"]),
    (["match", "random", "random", "--json", "{t}/folder"], ["is a folder; give a file name"]),
    (["match", "random", "random", "--save-games", "{t}/afile/games.jsonl"], ["is a file, so"]),
    (["tournament", "--agents", "random,highcard", "--out", "{t}/afile"], ["is a file; give a folder"]),
    (["tournament", "--agents", "random,nope"], ["unknown agent 'nope'"]),
    (["replay", "{t}/afile"], ["not valid JSON"]),
    (["replay", "{t}/folder"], ["folder"]),
    (["train"], ["give --config FILE or --resume RUN_DIR"]),
    (["train", "--config", "{t}/bad.yaml"], ["not valid YAML"]),
    (["train", "--config", "{t}/folder"], ["error:"]),
    (["train", "--config", str(SMOKE), "--seed", "-1"], ["seed", "greater than or equal to 0"]),
    (["train", "--config", str(SMOKE), "--set", "name=../escape"], ["name", "pattern"]),
    (["train", "--config", str(SMOKE), "--set", "algo.batch_size=1"], ["batch_size"]),
    (["train", "--config", "{t}/exp_bad_agent.yaml"], ["opponents.1.agent", "unknown agent 'nope'"]),
    (["train", "--resume", "{t}/missing_run"], ["does not exist"]),
    (["train", "--resume", "{t}/afile"], ["is a file"]),
    (["train", "--resume", "{t}/folder"], ["not a run directory"]),
    (["train", "--resume", "{t}/folder", "--set", "seed=3"], ["cannot be combined with --resume"]),
]


@pytest.mark.parametrize(("args", "fragments"), CASES, ids=lambda v: " ".join(v)[:60] if isinstance(v, list) else "")
def test_user_errors_are_one_clean_line(files, args, fragments):
    args = [a.replace("{t}", str(files)) for a in args]
    result = run(*[*args, "--no-progress"] if args[0] in ("match", "tournament") else args)
    assert_clean_error(result, *fragments)
    if args[0] == "train":  # validation happens before any run directory exists
        assert not (files / "runs").exists() and not Path("runs/escape").exists()


# every input file or folder a command reads, and the path its error must name: missing ({m}:
# in a folder that does not exist) or unreadable ({u}: "in" a file, so it cannot be opened)
MISSING_INPUTS = [
    (["match", "random", "random", "--rules", "{m}/rules.yaml"], "{m}/rules.yaml"),
    (["match", "random", "random", "--rules", "{u}/rules.yaml"], "{u}/rules.yaml"),
    (["match", "random", "league:path={m}/policy.npz"], "{m}/policy.npz"),
    (["match", "random", "ppo:path={m}/model.zip"], "{m}/model.zip"),
    (["tournament", "--agents", "random,rllib:path={m}/policy.npz"], "{m}/policy.npz"),
    (["tournament", "--agents", "random,highcard", "--rules", "{m}/rules.yaml"], "{m}/rules.yaml"),
    (["play", "--rules", "{m}/rules.yaml"], "{m}/rules.yaml"),
    (["play", "--opponent", "league:path={m}/policy.npz"], "{m}/policy.npz"),
    (["replay", "{m}/games.jsonl"], "{m}/games.jsonl"),
    (["replay", "{t}/afile", "--rules", "{m}/rules.yaml"], "{m}/rules.yaml"),
    (["train", "--config", "{m}/config.yaml"], "{m}/config.yaml"),
    (["train", "--config", "{u}/config.yaml"], "{u}/config.yaml"),
    (["train", "--config", "{t}/on_a_missing_base.yaml"], "{t}/missing_base.yaml"),
    (["train", "--resume", "{m}/run"], "{m}/run"),
    (["evaluate", "{m}/run"], "{m}/run"),
    (["compare", "{m}/run_a", "{m}/run_b"], "{m}/run_a"),
    (["exploit", "league:path={m}/policy.npz"], "{m}/policy.npz"),
    (["exploit", "league:path={m}/policy.npz", "--exact", "--preset", "skirmish"], "{m}/policy.npz"),
    (["exploit", "ppo:path={m}/model.zip", "--exact", "--preset", "skirmish"], "{m}/model.zip"),
    (["tune", "--config", "{m}/tune.yaml", "--trials", "1"], "{m}/tune.yaml"),
]


@pytest.mark.parametrize("args, named", MISSING_INPUTS, ids=[" ".join(args) for args, _ in MISSING_INPUTS])
def test_a_missing_or_unreadable_input_is_exit_status_2_and_one_line_naming_it(files, args, named):
    """Issue 36: the same exit status (2, as typer's own for a missing file argument) and one
    line naming the file and the problem in words, whatever the command."""
    (files / "on_a_missing_base.yaml").write_text("base_config: missing_base.yaml\n")
    paths = {"t": files, "m": files / "missing", "u": files / "afile"}
    args = [a.format(**paths) for a in args]
    result = run(*args, *(["--no-progress"] if args[0] in ("match", "tournament") else []))
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert named.format(**paths) in lines[0], lines[0]
    assert "Errno" not in lines[0] and "Traceback" not in result.output


def test_output_paths_are_checked_before_the_match_is_played(files, monkeypatch):
    import tacocat.evaluation.matches

    def boom(*args, **kwargs):
        raise AssertionError("the match was played")

    monkeypatch.setattr(tacocat.evaluation.matches, "match", boom)
    result = run("match", "random", "random", "--json", str(files / "folder"))
    assert_clean_error(result, "--json")


def test_debug_shows_the_traceback(files):
    result = run("--debug", "train", "--config", str(files / "bad.yaml"))
    assert result.exit_code != 0
    assert result.exception is not None and not isinstance(result.exception, SystemExit)


def test_resume_of_a_finished_run_says_so(tmp_path):
    run_dir = tmp_path / "smoke_s0_x"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(SMOKE.read_text())
    (run_dir / "final.json").write_text('{"timesteps": 2048}')
    (run_dir / "final_model.zip").write_bytes(b"the final model")
    result = run("train", "--resume", str(run_dir))
    assert_clean_error(result, "is a finished run", "nothing to resume")
    assert (run_dir / "final_model.zip").read_bytes() == b"the final model"


def test_module_entry_points_print_one_line_too(tmp_path):
    import subprocess
    import sys

    for entry in (["tacocat.cli.app", "train"], ["tacocat.cli.main"]):
        proc = subprocess.run(
            [sys.executable, "-m", *entry, "--config", str(tmp_path / "missing.yaml")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            f"error: {tmp_path / 'missing.yaml'}: cannot read the experiment config (No such file or directory)"
        ]


@pytest.mark.parametrize("option,value", [("--json", "/proc/out.json"), ("--save-games", "/proc/games.jsonl")])
def test_an_output_folder_that_refuses_files_is_an_error_before_any_game(option, value, monkeypatch):
    # /proc refuses new files even for root, whose permission bits say "writable": the folder is
    # tried for real, and no game is played
    played = []
    monkeypatch.setattr("tacocat.evaluation.matches.play_deal", lambda *a, **k: played.append(1))
    result = run("match", "random", "random", "--deal-pairs", "1", "--no-progress", option, value)
    assert_clean_error(result, "cannot write in /proc")
    assert not played
