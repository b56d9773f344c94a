"""Sweep cases of the league backend (issue 24): `tacocat train --resume` of a league run whose
files were edited or damaged, and league configs with sizes or `base_config`s out of bounds.

No case trains. The run directory they start from is built once, directly: the smoke config's
config.yaml and run.json, and one checkpoint of a fresh trainer as the run stands after its
first iteration (a valid checkpoint: each case breaks one thing in a copy of it)."""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from .case import Case, CliRefused, run_cli

SMOKE = Path(__file__).resolve().parents[1] / "configs" / "league_smoke.yaml"
CHANNEL = "league"
MARKER, ARRAYS = "checkpoints/ckpt_256.json", "checkpoints/ckpt_256/arrays.npz"


def _cli(args: list[str], must_name: str = "", must_not_show: str = "") -> None:
    run_cli(args, must_name=must_name, must_not_show=must_not_show)


@functools.cache
def _base_run(tmp: Path) -> Path:
    """A league run directory as a kill after its first checkpoint (256 env steps) leaves it."""
    import jax
    import jax.numpy as jnp

    from tacocat.train import checkpoints
    from tacocat.train.config import load_experiment
    from tacocat.train.league.trainer import LeagueTrainer
    from tacocat.train.run_dir import config_hash, new_run_dir, run_metadata

    config = load_experiment(SMOKE, overrides=[f"run_root={tmp / 'runs'}"])
    run_dir = new_run_dir(config)
    (run_dir / "config.yaml").write_text(config.to_yaml())
    (run_dir / "run.json").write_text(json.dumps(run_metadata(config)))
    trainer = LeagueTrainer(config)  # as the run stands after its first iteration, without training it
    updates = config.algo.n_epochs * (config.n_envs * config.algo.n_steps // config.algo.batch_size)
    trainer.runner = trainer.runner._replace(
        opt_state=jax.tree.map(
            lambda x: jnp.full_like(x, updates) if jnp.issubdtype(x.dtype, jnp.integer) else x, trainer.runner.opt_state
        )
    )
    trainer.pool.add(trainer.runner.params)  # snapshot_every: 1
    trainer.iteration = 1
    checkpoints.save(
        run_dir,
        trainer,
        {
            "timesteps": 256,
            "iteration": 1,
            "best_score": None,
            "ruleset_hash": config.rules_config.ruleset_hash(),
            "config_sha256": config_hash(config),
        },
    )
    return run_dir


def _resume_case(tmp: Path, name: str, damage: Callable[[Path], object], must_name: str = "") -> Case:
    """`tacocat train --resume` of a copy of the base run that `damage` changed."""

    def run() -> None:
        copy = tmp / "cases" / str(abs(hash(name)))
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(_base_run(tmp), copy)
        damage(copy)
        _cli(["train", "--resume", str(copy), "--no-progress"], must_name=must_name)

    return Case(CHANNEL, f"league resume: {name}", run, (CliRefused,))


def _edit_json(relative: str, edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def damage(run_dir: Path) -> None:
        path = run_dir / relative
        data = json.loads(path.read_text())
        edit(data)
        path.write_text(json.dumps(data))

    return damage


def _edit_config(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    import yaml

    def damage(run_dir: Path) -> None:
        path = run_dir / "config.yaml"
        data = yaml.safe_load(path.read_text())
        edit(data)
        path.write_text(yaml.safe_dump(data))

    return damage


def _edit_arrays(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    import numpy as np

    def damage(run_dir: Path) -> None:
        path = run_dir / ARRAYS
        with np.load(path) as data:
            arrays = {n: data[n] for n in data.files}
        edit(arrays)
        np.savez(path, **arrays)

    return damage


def _write(relative: str, content: bytes) -> Callable[[Path], None]:
    return lambda run_dir: (run_dir / relative).write_bytes(content)


def _nan_leaf(arrays: dict) -> None:
    arrays["leaf_0"] = arrays["leaf_0"].copy()
    arrays["leaf_0"].flat[0] = float("nan")


def _pickled_member(run_dir: Path) -> None:
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    _edit_arrays(lambda a: a.update(leaf_0=np.load(io.BytesIO(buffer.getvalue()), allow_pickle=True)))(run_dir)


def _oversized_member(run_dir: Path) -> None:
    import zipfile

    path = run_dir / ARRAYS
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    members["leaf_0.npy"] += b"\0" * (4 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)


def _folder_instead(relative: str) -> Callable[[Path], None]:
    def damage(run_dir: Path) -> None:
        (run_dir / relative).unlink()
        (run_dir / relative).mkdir()

    return damage


def _both(*damages: Callable[[Path], object]) -> Callable[[Path], None]:
    def damage(run_dir: Path) -> None:
        for d in damages:
            d(run_dir)

    return damage


def resume_cases(tmp: Path) -> Iterator[Case]:
    import numpy as np

    def to_sb3(c: dict) -> None:
        c.update(backend="sb3", league=None)

    cases: list[tuple[str, Callable[[Path], object], str]] = [
        # the cases
        ("rules edited in config.yaml", _edit_config(lambda c: c["rules"].update(max_rounds=30)), "rules.max_rounds"),
        ("backend changed to sb3", _edit_config(to_sb3), "backend"),
        ("marker timesteps -1000", _edit_json(MARKER, lambda m: m.update(timesteps=-1000)), "ckpt_256.json"),
        ("marker pool.filled 99", _edit_json(MARKER, lambda m: m["trainer"]["pool"].update(filled=99)), "pool.filled"),
        ("marker short games list", _edit_json(MARKER, lambda m: m["trainer"]["pool"].update(games=[0])), "pool.games"),
        ("a NaN leaf", _edit_arrays(_nan_leaf), "NaN"),
        ("an empty .npz", _write(ARRAYS, b""), "arrays.npz"),
        ("random bytes as the .npz", _write(ARRAYS, os.urandom(2048)), "arrays.npz"),
        (
            "a stray ckpt_abc.json (skipped; the damaged real checkpoint is named)",
            _both(_write("checkpoints/ckpt_abc.json", b"{}"), _write(ARRAYS, b"")),
            "arrays.npz",
        ),
        ("a truncated .npz", lambda d: (d / ARRAYS).write_bytes((d / ARRAYS).read_bytes()[:3000]), "arrays.npz"),
        ("marker without pool", _edit_json(MARKER, lambda m: m["trainer"].pop("pool")), "pool"),
        ("marker without rng", _edit_json(MARKER, lambda m: m["trainer"].pop("rng")), "rng"),
        # more
        ("run.json missing", lambda d: (d / "run.json").unlink(), "run.json"),
        ("run.json ruleset_hash edited", _edit_json("run.json", lambda m: m.update(ruleset_hash="0" * 16)), "run.json"),
        ("run.json not JSON", _write("run.json", b"{\x00"), "run.json"),
        ("run.json a JSON list", _write("run.json", b"[1]"), "run.json"),
        ("run.json nested 100,000 deep", _write("run.json", b"[" * 100_000), "run.json"),
        ("config.yaml not valid YAML", _write("config.yaml", b"name: [x\n"), "config.yaml"),
        ("config.yaml a FIFO", lambda d: ((d / "config.yaml").unlink(), os.mkfifo(d / "config.yaml")), "config.yaml"),
        (
            "config.yaml total_timesteps edited",
            _edit_config(lambda c: c.update(total_timesteps=10**9)),
            "total_timesteps",
        ),
        (
            "config and run.json edited together (the checkpoint's config hash)",
            _both(
                _edit_config(lambda c: c.update(total_timesteps=1024)),
                _edit_json("run.json", lambda m: m["config"].update(total_timesteps=1024)),
            ),
            "another config",
        ),
        ("marker timesteps as a string", _edit_json(MARKER, lambda m: m.update(timesteps="256")), "timesteps"),
        ("marker timesteps not its name's", _edit_json(MARKER, lambda m: m.update(timesteps=512, iteration=2)), "name"),
        ("marker an extra key", _edit_json(MARKER, lambda m: m.update(extra=1)), "extra"),
        (
            "marker an extra key in the trainer's state",
            _edit_json(MARKER, lambda m: m["trainer"].update(extra=1)),
            "extra",
        ),
        ("marker without the trainer's state", _edit_json(MARKER, lambda m: m.pop("trainer")), "trainer"),
        ("marker best_score 7", _edit_json(MARKER, lambda m: m.update(best_score=7)), "best_score"),
        ("the checkpoint folder missing", lambda d: shutil.rmtree(d / "checkpoints" / "ckpt_256"), "ckpt_256"),
        (
            "marker wins above games",
            _edit_json(MARKER, lambda m: m["trainer"]["pool"].update(wins=[5, 0, 0, 0])),
            "pool.wins",
        ),
        (
            "marker rng of another generator",
            _edit_json(MARKER, lambda m: m["trainer"]["rng"].update(bit_generator="MT19937")),
            "rng",
        ),
        ("marker ruleset hash edited", _edit_json(MARKER, lambda m: m.update(ruleset_hash="0" * 16)), "other rules"),
        ("marker empty", _write(MARKER, b""), "ckpt_256.json"),
        ("marker of 2 MiB", _write(MARKER, b" " * (2 << 20)), "over the limit"),
        ("marker a folder", _folder_instead(MARKER), "ckpt_256.json"),
        ("a pickled member in the .npz", _pickled_member, "arrays.npz"),
        ("an extra member in the .npz", _edit_arrays(lambda a: a.update(extra=np.zeros(1))), "members"),
        ("a member declaring 4 MiB more than its array", _oversized_member, "larger than its array"),
        ("the .npz a folder", _folder_instead(ARRAYS), "regular file"),
        ("the .npz missing", lambda d: (d / ARRAYS).unlink(), "arrays.npz"),
        ("a leaf of another dtype", _edit_arrays(lambda a: a.update(leaf_0=a["leaf_0"].astype(np.int32))), "array 0"),
    ]
    for name, damage, must_name in cases:
        yield _resume_case(tmp, name, damage, must_name)


def config_cases(tmp: Path) -> Iterator[Case]:
    from tacocat.train.config import load_experiment
    from tacocat.train.settings import MAX_CONFIG_BYTES

    def smoke(*overrides: str) -> Callable[[], object]:
        return lambda: load_experiment(SMOKE, overrides=list(overrides))

    for overrides in (
        ["league.snapshot_pool=1000000000"],
        ["n_envs=100000000"],
        ["league.snapshot_slots=5000"],
        ["algo.net_arch=[32768, 32768]"],
        [f"algo.net_arch={[8] * 17}"],
        ["seed=4294967296"],
        ["n_envs=65536", "algo.n_steps=4096", "algo.batch_size=65536"],
        ["eval.deal_pairs=100000000"],
        ["algo.n_epochs=100000"],
        ["total_timesteps=10000000000000"],
        # regularised PPO (issue 26): negative or non-finite weights, a refresh of 0
        ["league.magnet={kind: uniform, kl_coef: -0.1}"],
        ["league.magnet={kind: ema, kl_coef: .inf}"],
        ["league.magnet={kind: ema, kl_coef: 0.1, refresh_every: 0}"],
        ["league.magnet={kind: ema, kl_coef: 0.1, ema_rate: .nan}"],
        ["league.ent_coef_final=-1"],
        ["algo.ent_coef=.inf"],
        ["league.magnet={kind: moving, kl_coef: 0.1}"],
        # the main exploiter: without a main policy that plays its snapshots, a rollout that
        # does not split, a snapshot or reset interval of 0
        ["league.snapshot_weight=0", "league.exploiter={n_envs: 16}"],
        ["league.exploiter={n_envs: 12}"],
        ["league.exploiter={n_envs: 16, snapshot_every: 0}"],
        ["league.exploiter={n_envs: 16, reset_every: 0}"],
        ["league.exploiter={n_envs: 1000000}"],
    ):
        yield Case(CHANNEL, f"league config: {' '.join(overrides)}", smoke(*overrides))

    folder = tmp / "configs"
    folder.mkdir(parents=True, exist_ok=True)
    private = tmp / "private.yaml"
    private.write_text("password: hunter2\ntoken: [abc\n")
    (folder / "link.yaml").unlink(missing_ok=True)
    (folder / "link.yaml").symlink_to(private)
    (folder / "zero.yaml").unlink(missing_ok=True)
    (folder / "zero.yaml").symlink_to("/dev/zero")
    if not (folder / "fifo.yaml").exists():
        os.mkfifo(folder / "fifo.yaml")
    (folder / "dir.yaml").mkdir(exist_ok=True)
    (folder / "big.yaml").write_text("#" * (MAX_CONFIG_BYTES + 1))
    (folder / "bomb.yaml").write_text("a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\nname: x\n")
    (folder / "private_copy.yaml").write_text(private.read_text())
    for i in range(20):
        (folder / f"chain{i}.yaml").write_text(f"base_config: chain{i + 1}.yaml\n")

    def with_base(base: str, must_not_show: str = "hunter2") -> Callable[[], object]:
        def run() -> None:
            path = folder / f"uses_{abs(hash(base))}.yaml"
            path.write_text(f"base_config: {json.dumps(base)}\nname: exp\n")
            try:
                load_experiment(path)
            except ValueError as err:
                if must_not_show in str(err):
                    raise RuntimeError(f"the error shows a file's text: {err}") from None
                raise

        return run

    bases = {
        "base_config /dev/zero": "/dev/zero",
        "base_config a symlink to /dev/zero": "zero.yaml",
        "base_config a symlink to a private file outside": "link.yaml",
        "base_config a FIFO": "fifo.yaml",
        "base_config a folder": "dir.yaml",
        "base_config over 1 MiB": "big.yaml",
        "base_config outside via ..": "../../../etc/passwd.yaml",
        "base_config not .yaml": "notes.txt",
        "base_config with aliases": "bomb.yaml",
        "base_config chained 20 deep": "chain0.yaml",
        "base_config invalid YAML holding a secret": "private_copy.yaml",
    }
    for name, base in bases.items():
        yield Case(CHANNEL, f"league config: {name}", with_base(base))
    yield Case(
        CHANNEL,
        "tacocat train --config /dev/zero",
        lambda: _cli(["train", "--config", "/dev/zero"], must_name="/dev/zero"),
        (CliRefused,),
    )
    yield Case(
        CHANNEL,
        "tacocat train --config a FIFO",
        lambda: _cli(["train", "--config", str(folder / "fifo.yaml")], must_name="fifo.yaml"),
        (CliRefused,),
    )


def cases(tmp: Path) -> Iterator[Case]:
    yield from config_cases(tmp)
    yield from resume_cases(tmp)
