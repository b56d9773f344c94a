"""The league over several devices (tacocat/train/league/devices.py, `league.devices`): with the
same global batch and seed, 2 XLA CPU devices train what 1 device trains, to float rounding,
over 3 iterations (the same games bit for bit, the parameters within 1e-5); the parameters are
the same on every device after every update; each device draws its own rows' random numbers
(distinct on each device, those of the one-device batch); and a config that asks for more
devices than exist, or that does not split evenly, is refused before a run directory exists.

The multi-device runs need a process whose JAX started with 2 devices
(`--xla_force_host_platform_device_count=2`): they run in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tacocat.cli.app import app
from tacocat.train.config import load_experiment

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "league_smoke.yaml"
#: league_smoke.yaml with highcard as the one fixed opponent (the planner's port compiles for
#: long), a batch whose four blocks split over 2 devices (8 + 4 + 4 + 8 games), and the options
#: whose data the devices share out differently: the packed update (decision_share), the
#: privileged critic's second observation, seats redrawn at random
EVEN = [
    "n_envs=24",
    "opponents=[{agent: highcard, weight: 1.0}]",
    "league.decision_share=0.625",
    "league.privileged_critic=true",
    "learner_seat=random",
]

SCRIPT = textwrap.dedent("""
    import json, sys
    import jax, jax.numpy as jnp, numpy as np
    from tacocat.train.config import load_experiment
    from tacocat.train.league.devices import AXIS, RowLayout, make_mesh
    from tacocat.train.league.trainer import LeagueTrainer, blocks_of

    assert jax.device_count() == 2
    out = {}
    runs = {}
    for devices in (1, 2):
        config = load_experiment(sys.argv[1], overrides=[*json.loads(sys.argv[2]), f"league.devices={devices}"])
        trainer = LeagueTrainer(config)
        rows, same_everywhere = [], True
        for _ in range(3):
            rows.append(trainer.iterate())
            if devices == 2:  # every device holds the same parameters after the update
                for leaf in jax.tree.leaves(trainer.runner.params):
                    shards = [np.asarray(s.data) for s in leaf.addressable_shards]
                    same_everywhere &= len(shards) == 2 and all(np.array_equal(shards[0], s) for s in shards)
        runner, pool = trainer._state()[:2]
        runs[devices] = (rows, jax.tree.leaves(runner.params), jax.tree.leaves(runner.env_state),
                         np.asarray(runner.seat), np.asarray(runner.floor), np.asarray(jax.random.key_data(runner.key)))
        out[f"same_on_every_device_{devices}"] = bool(same_everywhere)
    (rows1, p1, e1, s1, f1, k1), (rows2, p2, e2, s2, f2, k2) = runs[1], runs[2]
    out["rows"] = [rows1, rows2]
    out["param_diff"] = max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in zip(p1, p2))
    out["param_scale"] = max(float(np.abs(np.asarray(a)).max()) for a in p1)
    out["games_equal"] = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(e1, e2))
    out["seats_floors_keys_equal"] = bool(np.array_equal(s1, s2) and np.array_equal(f1, f2) and np.array_equal(k1, k2))

    # each device's draws: its own rows' numbers of the one-device draw, none shared
    layout = RowLayout(tuple(blocks_of(config)), 2)
    mesh = make_mesh(2)
    key = jax.random.key(5)
    per_device = jax.jit(jax.shard_map(lambda k: layout.mine(jax.random.uniform(k, (layout.n_envs,)))[None],
                                       mesh=mesh, in_specs=jax.sharding.PartitionSpec(),
                                       out_specs=jax.sharding.PartitionSpec(AXIS)))(key)
    per_device = np.asarray(per_device)
    whole = np.asarray(jax.random.uniform(key, (layout.n_envs,)))
    out["draws_are_the_rows_of_one_draw"] = bool(np.array_equal(per_device.reshape(-1), whole[layout.physical]))
    out["draws_distinct"] = not set(per_device[0].tolist()) & set(per_device[1].tolist())
    print("RESULT " + json.dumps(out))
""")


def run_two_devices(overrides: list[str]) -> dict:
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(SMOKE), json.dumps(overrides)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


@pytest.mark.slow  # two smoke trainings in a subprocess, about 30 s
def test_two_devices_train_what_one_device_trains() -> None:
    out = run_two_devices(EVEN)
    assert out["games_equal"], "the games of the two runs differ"
    assert out["seats_floors_keys_equal"]
    assert out["param_diff"] <= 1e-5 * max(out["param_scale"], 1.0), out["param_diff"]
    rows1, rows2 = out["rows"]
    for a, b in zip(rows1, rows2, strict=True):
        assert {k: v for k, v in a.items() if isinstance(v, int)} == {k: v for k, v in b.items() if isinstance(v, int)}
        for k in ("policy_loss", "value_loss", "entropy", "approx_kl"):
            assert a[k] == pytest.approx(b[k], rel=1e-4, abs=1e-7), k
    assert out["same_on_every_device_2"]
    assert out["draws_are_the_rows_of_one_draw"]
    assert out["draws_distinct"]


# ---------------------------------------------------------------------------------------
# bad input: refused before a run directory exists
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "overrides, fragment",
    [
        (["league.devices=2", "n_envs=25", "algo.batch_size=80"], "n_envs 25 does not split over 2 devices"),
        # league_smoke's 16 games: blocks of 4, 2, 2, 4 and 4 games
        (["league.devices=4"], "snapshot 0 (2 games), snapshot 1 (2 games) does not split into 4"),
        (
            ["league.devices=2", "n_envs=32", "algo.n_steps=15", "algo.batch_size=15"],
            "algo.batch_size 15 does not split",
        ),
        (["league.devices=2", "n_envs=32", "league.decision_share=0.505"], "65 decision slots does not split"),
    ],
)
def test_a_batch_that_does_not_split_evenly_is_refused_at_validation(overrides: list[str], fragment: str) -> None:
    with pytest.raises(ValueError, match=r"league.devices") as err:
        load_experiment(SMOKE, overrides=overrides)
    assert fragment in str(err.value), str(err.value)
    load_experiment(SMOKE, overrides=[o for o in overrides if not o.startswith("league.devices")])  # fine on one


def test_more_devices_than_exist_is_refused_before_a_run_directory(tmp_path: Path) -> None:
    """This pytest process's JAX has one CPU device (started before the flag could split it)."""
    result = CliRunner().invoke(
        app,
        [
            "train",
            "--config",
            str(SMOKE),
            "--set",
            f"run_root={tmp_path / 'runs'}",
            "--set",
            "n_envs=64",
            "--devices",
            "4",
            "--no-progress",
        ],
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "league.devices is 4, but JAX has 1 cpu device(s)" in result.output, result.output
    assert not (tmp_path / "runs").exists()


def test_devices_cannot_change_a_resumed_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "--resume", str(tmp_path), "--devices", "2"])
    assert result.exit_code != 0
    assert "--devices cannot be combined with --resume" in result.output, result.output
