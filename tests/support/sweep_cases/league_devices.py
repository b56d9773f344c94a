"""Sweep cases of the league over several devices and processes (issue 28): `league.devices`
values and batches that do not split over them (refused at validation), `tacocat train
--devices` and the distributed options and variables given incompletely or impossibly (one
`error:` line before anything starts). No case trains; the unreachable coordinator, which waits
out its timeout, is tested in tests/test_league_distributed.py instead."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from .case import Case, CliRefused, run_cli

SMOKE = Path(__file__).resolve().parents[1] / "configs" / "league_smoke.yaml"
CHANNEL = "league_devices"

#: league_smoke.yaml overrides -> what the refusal names
CONFIGS: dict[str, tuple[list[str], str]] = {
    "devices 0": (["league.devices=0"], "league.devices"),
    "devices negative": (["league.devices=-2"], "league.devices"),
    "devices not a number": (["league.devices=two"], "league.devices"),
    "devices over the bound": (["league.devices=100000"], "league.devices"),
    "devices a float": (["league.devices=2.5"], "league.devices"),
    "n_envs odd over 2 devices": (["league.devices=2", "n_envs=25", "algo.batch_size=80"], "n_envs 25"),
    "blocks not splitting over 4 devices": (["league.devices=4"], "snapshot 0 (2 games)"),
    "blocks not splitting over 3 devices": (
        ["league.devices=3", "n_envs=30", "algo.batch_size=96"],
        "does not split into 3",
    ),
    "minibatch not splitting": (
        ["league.devices=2", "n_envs=32", "algo.n_steps=15", "algo.batch_size=15"],
        "algo.batch_size 15",
    ),
    "decision slots not splitting": (
        ["league.devices=2", "n_envs=32", "league.decision_share=0.505"],
        "65 decision slots",
    ),
}


def _config_case(overrides: list[str], fragment: str) -> None:
    from tacocat.train.config import load_experiment

    try:
        load_experiment(SMOKE, overrides=overrides)
    except ValueError as err:
        if fragment not in str(err):
            raise RuntimeError(f"the refusal does not name {fragment!r}: {err}") from None
        raise


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cli_case(args: list[str], must_name: str, environ: dict[str, str] | None = None) -> None:
    with _environment(environ or {}):
        run_cli(["train", "--config", str(SMOKE), "--no-progress", *args], must_name=must_name)


def cases(tmp: Path) -> Iterator[Case]:
    for name, (overrides, fragment) in CONFIGS.items():
        yield Case(CHANNEL, f"config: {name}", lambda o=overrides, f=fragment: _config_case(o, f))
    runs = f"run_root={tmp / 'runs'}"
    cli = {
        "--devices 0": (["--devices", "0"], "--devices"),
        "--devices more than exist": (["--set", runs, "--set", "n_envs=64", "--devices", "4"], "league.devices is 4"),
        "--devices with --resume": (["--resume", str(tmp), "--devices", "2"], "--resume"),
        "--coordinator alone": (["--coordinator", "127.0.0.1:1234"], "--num-processes"),
        "--coordinator without a port": (
            ["--coordinator", "localhost", "--num-processes", "2", "--process-id", "1"],
            "HOST:PORT",
        ),
        "--coordinator port out of range": (
            ["--coordinator", "h:70000", "--num-processes", "2", "--process-id", "1"],
            "HOST:PORT",
        ),
        "--process-id past the count": (
            ["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"],
            "--process-id 2",
        ),
        "--num-processes 0": (["--coordinator", "h:1", "--num-processes", "0", "--process-id", "0"], "--num-processes"),
    }
    for name, (args, must_name) in cli.items():
        if "--resume" in args:  # --resume comes without --config
            yield Case(
                CHANNEL,
                f"cli: {name}",
                lambda a=args, m=must_name: run_cli(["train", *a], must_name=m),
                expect=(CliRefused,),
            )
        else:
            yield Case(CHANNEL, f"cli: {name}", lambda a=args, m=must_name: _cli_case(a, m), expect=(CliRefused,))
    environ = {
        "TACOCAT_COORDINATOR without the others": ({"TACOCAT_COORDINATOR": "h:1"}, "TACOCAT_NUM_PROCESSES"),
        "TACOCAT_NUM_PROCESSES not a number": (
            {"TACOCAT_COORDINATOR": "h:1", "TACOCAT_NUM_PROCESSES": "two", "TACOCAT_PROCESS_ID": "0"},
            "TACOCAT_NUM_PROCESSES",
        ),
        "TACOCAT_PROCESS_ID negative": (
            {"TACOCAT_COORDINATOR": "h:1", "TACOCAT_NUM_PROCESSES": "2", "TACOCAT_PROCESS_ID": "-1"},
            "TACOCAT_PROCESS_ID",
        ),
    }
    for name, (values, must_name) in environ.items():
        yield Case(
            CHANNEL, f"environment: {name}", lambda v=values, m=must_name: _cli_case([], m, v), expect=(CliRefused,)
        )
