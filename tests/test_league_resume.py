"""A league resume trusts nothing in the run directory (issue 24): an edited config.yaml or
run.json, and every field of a checkpoint (its JSON marker and its arrays), are checked against
the run's config and a freshly built trainer; each bad file is one RunDirError naming the file,
and the run directory is left as it was. Also the league config's limits and `base_config`.

One smoke run (tests/support/configs/league_smoke.yaml, three iterations) is trained per module
and copied for each case; every refusal happens before anything compiles or trains."""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tacocat.game.errors import one_line
from tacocat.train.config import load_experiment
from tacocat.train.run_dir import MAX_RUN_JSON_BYTES, RunDirError
from tacocat.train.settings import MAX_CONFIG_BYTES, MAX_LEAGUE_MEMORY_BYTES

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "league_smoke.yaml"
MARKER, ARRAYS = "checkpoints/ckpt_768.json", "checkpoints/ckpt_768/arrays.npz"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tacocat.train.loop import train

    return train(
        load_experiment(SMOKE, overrides=[f"run_root={tmp_path_factory.mktemp('runs')}"]), progress=False
    ).run_dir


@pytest.fixture
def run(finished_run: Path, tmp_path: Path) -> Path:
    """A copy of the smoke run as a kill after its last checkpoint leaves it (no final.json)."""
    copy = tmp_path / finished_run.name
    shutil.copytree(finished_run, copy)
    (copy / "final.json").unlink()
    return copy


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


def _refused(run_dir: Path, *fragments: str) -> str:
    """Resume through `tacocat train`'s run loop; the one error must name every fragment, and
    no file of the run may change."""
    from tacocat.train.loop import train

    before = _files(run_dir)
    with pytest.raises(RunDirError) as info:
        train(resume=run_dir, progress=False)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    assert _files(run_dir) == before
    return message


def _edit_json(path: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _edit_yaml(path: Path, edit: Callable[[dict], None]) -> None:
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data))


# ---------------------------------------------------------------------------------------
# the run's config against run.json
# ---------------------------------------------------------------------------------------
def test_edited_rules_are_refused_instead_of_relabelling_the_policy(run: Path) -> None:
    """R1.5's max_rounds edited in config.yaml: the run would export policy.npz under another
    ruleset hash than run.json's."""
    _edit_yaml(run / "config.yaml", lambda c: c["rules"].update(max_rounds=30))
    _refused(run, str(run / "config.yaml"), "differs from the config the run started with", "rules.max_rounds")


def test_a_backend_switched_to_sb3_writes_nothing_into_the_league_run(run: Path) -> None:
    def to_sb3(config: dict) -> None:
        config.update(backend="sb3", league=None)

    _edit_yaml(run / "config.yaml", to_sb3)
    _refused(run, "backend", "league")
    assert not list(run.rglob("*.zip"))


def test_other_edits_of_config_yaml_name_every_field_that_differs(run: Path) -> None:
    def edit(config: dict) -> None:
        config["total_timesteps"] = 1024
        config["algo"]["learning_rate"] = 0.1

    _edit_yaml(run / "config.yaml", edit)
    _refused(run, "algo.learning_rate, total_timesteps")


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (lambda m: m.update(ruleset_hash="0" * 16), "ruleset_hash is not the hash of the run's rules"),
        (lambda m: m.update(backend="rllib"), "its backend is not the run's config's"),
        (lambda m: m.pop("config"), "does not record the config the run started with"),
    ],
)
def test_an_edited_run_json_is_refused(run: Path, edit: Callable[[dict], None], fragment: str) -> None:
    _edit_json(run / "run.json", edit)
    _refused(run, str(run / "run.json"), fragment)


@pytest.mark.parametrize(
    "content, fragment",
    [
        (None, "cannot read the run's record"),
        (b"", "not valid JSON"),
        (b"[1, 2]", "does not record the config"),
        (b"[" * 100_000, "not valid JSON"),
        (b"\x00" * (MAX_RUN_JSON_BYTES + 1), "over the limit"),
    ],
)
def test_a_missing_or_broken_run_json_is_refused(run: Path, content: bytes | None, fragment: str) -> None:
    path = run / "run.json"
    path.unlink()
    if content is not None:
        path.write_bytes(content)
    _refused(run, str(path), fragment)


def test_config_yaml_that_is_not_a_valid_config_names_the_file_and_not_its_contents(run: Path) -> None:
    (run / "config.yaml").write_text("name: x\nsecret_key: [hunter2\n")
    message = _refused(run, str(run / "config.yaml"), "not valid YAML")
    assert "hunter2" not in message
    (run / "config.yaml").write_text("name: x\ntotal_timesteps: -5\n")
    _refused(run, str(run / "config.yaml"), "total_timesteps")


# ---------------------------------------------------------------------------------------
# the checkpoint's marker
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "edit, fragment",
    [
        (lambda m: m.update(timesteps=-1000), "timesteps: Input should be greater than or equal to 0"),
        (lambda m: m.update(timesteps=1024), "not the ones in its name"),
        (lambda m: m.update(iteration=2), "is not a point of this run"),
        (lambda m: m.update(timesteps="768"), "timesteps: Input should be a valid integer"),
        (lambda m: m.update(timesteps=768.0), "timesteps: Input should be a valid integer"),
        (lambda m: m["trainer"]["pool"].update(filled=99), "pool.filled and pool.next_slot must be"),
        (lambda m: m["trainer"]["pool"].update(next_slot=-1), "pool.next_slot"),
        (
            lambda m: m["trainer"]["pool"].update(games=m["trainer"]["pool"]["games"][:2]),
            "pool.games and pool.wins must hold",
        ),
        (lambda m: m["trainer"]["pool"].update(wins=[10**6] * 4), "must not exceed pool.games"),
        (lambda m: m["trainer"]["pool"].update(games=[10**9] * 4, wins=[0] * 4), "more games than"),
        (lambda m: m["trainer"].pop("pool"), "trainer: invalid LeagueState: pool: Field required"),
        (lambda m: m["trainer"].pop("rng"), "rng: Field required"),
        (lambda m: m.pop("trainer"), "trainer: Field required"),
        (lambda m: m.update(best_score=2.0), "best_score"),
        (lambda m: m["trainer"]["rng"].update(bit_generator="MT19937"), "rng.bit_generator"),
        (lambda m: m["trainer"]["rng"]["state"].update(state=-1), "rng.state.state"),
        (lambda m: m.update(extra=1), "extra: Extra inputs are not permitted"),
        (lambda m: m["trainer"].update(extra=1), "extra: Extra inputs are not permitted"),
        (lambda m: m.update(ruleset_hash="0" * 16), "written under other rules"),
        (lambda m: m.update(config_sha256="0" * 64), "written for another config"),
    ],
)
def test_every_field_of_the_marker_is_checked(run: Path, edit: Callable[[dict], None], fragment: str) -> None:
    _edit_json(run / MARKER, edit)
    _refused(run, str(run / MARKER), fragment)


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"", "invalid CheckpointMarker"),
        (b"{", "invalid CheckpointMarker"),
        (b"[]", "invalid CheckpointMarker"),
        (b'{"timesteps": NaN}', "invalid CheckpointMarker"),
        (b" " * (2 << 20), "over the limit"),
    ],
)
def test_a_broken_marker_names_the_file(run: Path, content: bytes, fragment: str) -> None:
    (run / MARKER).write_bytes(content)
    _refused(run, str(run / MARKER), fragment)


def test_a_checkpoint_trained_for_another_config_is_refused_even_when_run_json_agrees(run: Path) -> None:
    """config.yaml and run.json edited together (a longer run): the checkpoint's config hash says
    it was written for the run that is in it, not for this one."""
    _edit_yaml(run / "config.yaml", lambda c: c.update(total_timesteps=1024))
    _edit_json(run / "run.json", lambda m: m["config"].update(total_timesteps=1024))
    _refused(run, str(run / MARKER), "written for another config")


def _load(run_dir: Path):
    """The run's newest checkpoint restored into a fresh trainer: (trainer, marker)."""
    from tacocat.train import checkpoints
    from tacocat.train.league.trainer import LeagueTrainer
    from tacocat.train.run_dir import resume_config

    config = resume_config(run_dir)
    trainer = LeagueTrainer(config)
    folder, marker = checkpoints.latest(run_dir, config)
    trainer.restore(folder, marker)
    return trainer, marker


def test_stray_files_in_the_checkpoint_folder_are_ignored(run: Path) -> None:
    folder = run / "checkpoints"
    for name in (
        "ckpt_abc.json",
        "ckpt_99999.json.bak",
        "ckpt_01024.json",
        "ckpt_-5.json",
        "notes.txt",
        "ckpt_1024.npz",
        "ckpt_1024",
    ):
        (folder / name).write_text("{not a checkpoint")
    found = _load(run)
    assert found is not None and found[1].timesteps == 768


@pytest.mark.slow  # a trainer built and restored for each of 12 examples: about 15 s
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["timesteps", "iteration", "filled", "next_slot"]), value=st.integers(-(2**70), 2**70))
def test_any_other_position_of_the_run_or_the_pool_is_refused(run: Path, field: str, value: int) -> None:
    """The marker's counters are all determined by the run (iteration 3 of 256 env steps, a
    snapshot every iteration, a pool of 4): any other value of one of them is refused."""
    path = run / MARKER
    original = path.read_text()
    data = json.loads(original)
    book = data["trainer"]["pool"] if field in ("filled", "next_slot") else data
    if book[field] == value:
        return
    book[field] = value
    path.write_text(json.dumps(data))
    try:
        with pytest.raises(RunDirError, match=r"ckpt_768.json"):
            _load(run)
    finally:
        path.write_text(original)


# ---------------------------------------------------------------------------------------
# the checkpoint's arrays
# ---------------------------------------------------------------------------------------
def _rewrite_arrays(path: Path, edit: Callable[[dict[str, np.ndarray]], None]) -> None:
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    edit(arrays)
    np.savez(path, **arrays)


def _first(arrays: dict[str, np.ndarray], kind: str) -> str:
    return next(n for n in sorted(arrays, key=lambda n: int(n.split("_")[1])) if arrays[n].dtype.kind == kind)


def test_a_nan_leaf_is_refused_instead_of_exporting_a_nan_policy(run: Path) -> None:
    def poison(arrays: dict[str, np.ndarray]) -> None:
        name = _first(arrays, "f")
        arrays[name] = arrays[name].copy()
        arrays[name].flat[0] = np.nan

    _rewrite_arrays(run / ARRAYS, poison)
    _refused(run, str(run / ARRAYS), "NaN or infinite")  # policy.npz unchanged: `_refused` checks every file


@pytest.mark.parametrize(
    "damage, fragment",
    [
        (lambda p: p.write_bytes(b""), "cannot be read as a checkpoint"),
        (lambda p: p.write_bytes(os.urandom(4096)), "cannot be read as a checkpoint"),
        (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "cannot be read as a checkpoint"),
        (lambda p: p.unlink(), "cannot be read as a checkpoint"),
        (lambda p: (p.unlink(), p.mkdir()), "must be a regular file"),
        (lambda p: p.write_bytes(p.read_bytes() + b"\0" * (64 << 20)), "larger than this run's checkpoint"),
    ],
)
def test_a_damaged_npz_is_one_error_naming_it(run: Path, damage: Callable[[Path], object], fragment: str) -> None:
    damage(run / ARRAYS)
    _refused(run, str(run / ARRAYS), fragment)


def test_arrays_of_another_shape_dtype_or_count_are_refused(run: Path) -> None:
    path = run / ARRAYS
    original = path.read_bytes()
    cases: list[tuple[Callable[[dict[str, np.ndarray]], None], str]] = [
        (lambda a: a.update(leaf_0=a["leaf_0"][:1]), "array 0 is"),
        (lambda a: a.update(leaf_0=a["leaf_0"].astype(np.int32)), "array 0 is"),
        (lambda a: a.update(leaf_0=a["leaf_0"].astype(np.float64)), "leaf_0.npy is larger than its array can be"),
        (lambda a: a.pop(f"leaf_{len(a) - 1}"), "members, not this run's"),
        (lambda a: a.update(extra=np.zeros(1)), "members, not this run's"),
    ]
    for edit, fragment in cases:
        path.write_bytes(original)
        _rewrite_arrays(path, edit)
        _refused(run, str(path), fragment)


def test_a_pickled_member_is_never_unpickled(run: Path, tmp_path: Path) -> None:
    """An object array (a pickle that would write a marker file) in place of a leaf."""
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (Path.write_text, (marker, "code ran"))

    path = run / ARRAYS
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    buffer = io.BytesIO()
    np.save(buffer, np.array([Payload()], dtype=object), allow_pickle=True)
    members["leaf_0.npy"] = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    _refused(run, str(path))
    assert not marker.exists()


def test_a_member_declaring_more_than_its_array_is_refused_before_reading(run: Path) -> None:
    path = run / ARRAYS
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    members["leaf_0.npy"] += b"\0" * (1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    _refused(run, str(path), "leaf_0.npy is larger than its array can be")


@pytest.mark.parametrize(
    "field, fragment",
    [
        ("seat", "seats must be 0 or 1"),
        ("floor", "failed-answer floors"),
        ("observation", "observation is not the one their rules state gives"),
        ("legal_action_mask", "legal_action_mask is not the one"),
    ],
)
def test_runner_arrays_out_of_their_range_are_refused(run: Path, field: str, fragment: str) -> None:
    """The leaf found by its name in a fresh runner's tree, then edited in the file: a seat of 2,
    a floor of -1, an observation entry moved by 0.5, a mask entry flipped."""
    import jax

    from tacocat.train.league.checkpoint import plain_arrays
    from tacocat.train.league.pool import SnapshotPool
    from tacocat.train.league.ppo import init_runner
    from tacocat.train.league.trainer import build

    config = load_experiment(run / "config.yaml")
    env, settings, _ = build(config)
    runner = init_runner(env, settings, jax.random.key(0))
    tree = plain_arrays((runner, SnapshotPool(runner.params, config.league.snapshot_pool).arrays))
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
    index = next(i for i, path in enumerate(paths) if path.endswith(f".{field}"))
    change = {
        "seat": lambda x: 2,
        "floor": lambda x: -1,
        "observation": lambda x: x + 0.5,
        "legal_action_mask": lambda x: not x,
    }[field]

    def edit(arrays: dict[str, np.ndarray]) -> None:
        leaf = arrays[f"leaf_{index}"].copy()
        leaf.flat[0] = change(leaf.flat[0])
        arrays[f"leaf_{index}"] = leaf

    _rewrite_arrays(run / ARRAYS, edit)
    _refused(run, str(run / ARRAYS), fragment)


def test_an_optimizer_count_that_the_run_cannot_have_reached_is_refused(run: Path) -> None:
    def edit(arrays: dict[str, np.ndarray]) -> None:
        name = _first(arrays, "i")  # the first integer leaf in tree order: Adam's step count
        arrays[name] = arrays[name] + 1

    _rewrite_arrays(run / ARRAYS, edit)
    _refused(run, str(run / ARRAYS), "optimizer's step counts")


def test_the_unedited_copy_still_resumes_to_its_checkpoint(run: Path) -> None:
    """The checks refuse the edits above, not the run: the same copy loads."""
    found = _load(run)
    assert found is not None and found[1].iteration == 3


# ---------------------------------------------------------------------------------------
# league config limits and base_config
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "overrides, fragment",
    [
        (["league.snapshot_pool=1000000000"], "league.snapshot_pool: Input should be less than or equal to 1024"),
        (["n_envs=100000000"], "n_envs: Input should be less than or equal to 65536"),
        (["league.snapshot_slots=5000"], "league.snapshot_slots"),
        (["algo.n_steps=1000000"], "algo.n_steps"),
        (["n_envs=65536", "algo.n_steps=4096", "algo.batch_size=65536"], "per rollout is over the limit"),
        (["algo.net_arch=[65536, 65536]"], "over the limit of 32 GiB"),
        (["algo.net_arch=[8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8]"], "algo.net_arch"),
        (["seed=4294967296"], "seed"),
        (["total_timesteps=10000000000000"], "total_timesteps"),
        (["eval.deal_pairs=100000000"], "eval.deal_pairs"),
    ],
)
def test_league_sizes_are_bounded_at_validation(overrides: list[str], fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        load_experiment(SMOKE, overrides=overrides)
    assert fragment in one_line(info.value)


def test_the_memory_estimate_says_the_estimate_and_the_limit() -> None:
    from tacocat.train.league.config import league_memory_bytes

    config = load_experiment(SMOKE, overrides=["n_envs=8192", "algo.n_steps=1024", "algo.batch_size=8192"])
    estimate = league_memory_bytes(config)
    assert estimate < MAX_LEAGUE_MEMORY_BYTES
    doubled = load_experiment(SMOKE, overrides=["n_envs=16384", "algo.n_steps=1024", "algo.batch_size=8192"])
    assert league_memory_bytes(doubled) > 1.9 * estimate  # the rollout dominates and scales with n_envs
    with pytest.raises(ValidationError, match=r"needs about \d+\.\d GiB .* over the limit of 32 GiB"):
        load_experiment(SMOKE, overrides=["algo.net_arch=[32768, 32768]"])


def _with_base(folder: Path, base: str) -> Path:
    path = folder / "exp.yaml"
    path.write_text(f"base_config: {base}\nname: exp\n")
    return path


@pytest.mark.parametrize(
    "make_base, fragment",
    [
        (lambda d: "/dev/zero", "must name a .yaml or .yml file"),
        (lambda d: (d / "zero.yaml").symlink_to("/dev/zero") or "zero.yaml", "must lie in"),
        (lambda d: os.mkfifo(d / "fifo.yaml") or "fifo.yaml", "must be a regular file"),
        (lambda d: (d / "folder.yaml").mkdir() or "folder.yaml", "must be a regular file"),
        (lambda d: (d / "big.yaml").write_text("#" * (MAX_CONFIG_BYTES + 1)) and "big.yaml", "over the limit"),
        (lambda d: "../../etc/passwd.yaml", "must lie in"),
    ],
)
def test_a_base_config_must_be_a_small_regular_yaml_file_in_its_folders(
    tmp_path: Path, make_base: Callable[[Path], str], fragment: str
) -> None:
    with pytest.raises(ValueError, match=fragment):
        load_experiment(_with_base(tmp_path, make_base(tmp_path)))


def test_a_base_config_symlink_to_a_private_file_does_not_echo_it(tmp_path: Path) -> None:
    secret = tmp_path / "private" / "notes.yaml"
    secret.parent.mkdir()
    secret.write_text("password: hunter2\napi_token: [abc\n")
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "base.yaml").symlink_to(secret)
    with pytest.raises(ValueError, match="must lie in") as info:
        load_experiment(_with_base(folder, "base.yaml"))
    assert "hunter2" not in str(info.value) and "api_token" not in str(info.value)
    # inside the folder, an invalid YAML is reported by line and column, without its text
    (folder / "base.yaml").unlink()
    shutil.copy(secret, folder / "base.yaml")
    with pytest.raises(ValueError, match=r"not valid YAML \(line 3, column 1") as info:
        load_experiment(_with_base(folder, "base.yaml"))
    assert "hunter2" not in str(info.value) and "abc" not in str(info.value)


def test_a_base_config_in_the_shipped_configs_folder_or_next_to_the_file_is_read(tmp_path: Path) -> None:
    shutil.copy(SMOKE, tmp_path / "base.yaml")
    assert load_experiment(_with_base(tmp_path, "base.yaml")).name == "exp"
    shipped = ROOT / "tacocat" / "train" / "configs" / "league.yaml"
    assert (
        load_experiment(_with_base(tmp_path, str(shipped))).total_timesteps == load_experiment(shipped).total_timesteps
    )


def test_aliases_and_deep_chains_are_refused(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text("a: &a [x, x]\nb: &b [*a, *a]\nname: x\n")
    with pytest.raises(ValueError, match="aliases"):
        load_experiment(tmp_path / "bomb.yaml")
    for i in range(20):
        (tmp_path / f"c{i}.yaml").write_text(f"base_config: c{i + 1}.yaml\n")
    with pytest.raises(ValueError, match="chains more than 16 configs deep"):
        load_experiment(tmp_path / "c0.yaml")
