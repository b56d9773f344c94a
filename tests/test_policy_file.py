"""The `tacocat-mlp-v1` policy file (`tacocat.agents.policy_file`): what `league:path=` and `rllib:path=`
read. Every bad file is one PolicyFileError naming the file and the problem, found without
reading more than the stated limits; a valid file loads exactly as it was saved."""

from __future__ import annotations

import io
import itertools
import json
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from typer.testing import CliRunner

from support.sweep_cases.fakes import patch_zip_directory
from tacocat import RulesConfig
from tacocat.agents.mlp_agent import CHAMPION, LEAGUE_ALGORITHM, RLLIB_ALGORITHM, MLPPolicyAgent
from tacocat.agents.policy_file import (
    FORMAT,
    MAX_FILE_BYTES,
    MAX_MEMBERS,
    PolicyFileError,
    load_policy_file,
    policy_logits,
    save_policy,
)
from tacocat.agents.registry import make_agent
from tacocat.cli.app import app
from tacocat.game.observation import ObservationLayout
from tacocat.game.ruleset import compile_rules

RULES = compile_rules(RulesConfig())
OBS, N_ACTIONS = ObservationLayout(RULES).size, RULES.codec.size
HIDDEN = 4
DROP = object()  # a metadata value that removes the key


# ---------------------------------------------------------------------------------------
# crafting files
# ---------------------------------------------------------------------------------------
def metadata(**changes: object) -> dict:
    meta = {
        "format": FORMAT,
        "activation": "tanh",
        "layers": 2,
        "ruleset_hash": RULES.hash,
        "observation_size": OBS,
        "n_actions": N_ACTIONS,
        "algorithm": LEAGUE_ALGORITHM,
        "experiment": "t",
        "seed": 0,
        "timesteps": 0,
        **changes,
    }
    return {k: v for k, v in meta.items() if v is not DROP}


def layer_arrays(dtype: type = np.float32) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "layer_0_weight": rng.normal(size=(HIDDEN, OBS)).astype(dtype),
        "layer_0_bias": np.zeros(HIDDEN, dtype),
        "layer_1_weight": rng.normal(size=(N_ACTIONS, HIDDEN)).astype(dtype),
        "layer_1_bias": np.zeros(N_ACTIONS, dtype),
    }


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)  # allow_pickle only to craft the object-array case
    return buffer.getvalue()


def meta_bytes(meta: object) -> bytes:
    return meta if isinstance(meta, bytes) else json.dumps(meta).encode()


def policy_zip(
    path: Path, meta: object = None, compression: int = zipfile.ZIP_STORED, **arrays: np.ndarray | bytes
) -> Path:
    """A zip of `.npy` members: the metadata (a dict, or raw bytes) and the arrays (or raw member bytes)."""
    members = {
        "metadata": npy(np.frombuffer(meta_bytes(metadata() if meta is None else meta), np.uint8)),
        **{
            name: value if isinstance(value, bytes) else npy(value)
            for name, value in {**layer_arrays(), **arrays}.items()
        },
    }
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, blob in members.items():
            archive.writestr(f"{name}.npy", blob)
    return path


def lying_bomb(path: Path) -> Path:
    """layer_0_weight.npy is a valid array followed by 32 MiB of zeros, deflated, while the
    directory states only the valid array's size."""
    valid = npy(layer_arrays()["layer_0_weight"])
    policy_zip(path, compression=zipfile.ZIP_DEFLATED, layer_0_weight=valid + bytes(32 << 20))
    return patch_zip_directory(path, "layer_0_weight.npy", file_size=len(valid))


def with_header(shape: tuple[int, ...], descr: str = "<f4", data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue() + data


def duplicated(path: Path) -> Path:
    policy_zip(path)
    with warnings.catch_warnings(), zipfile.ZipFile(path, "a") as archive:
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name it writes
        archive.writestr("metadata.npy", npy(np.frombuffer(meta_bytes(metadata()), np.uint8)))
    return path


def write(data: bytes) -> Callable[[Path], Path]:
    def make(path: Path) -> Path:
        path.write_bytes(data)
        return path

    return make


def sparse(size: int) -> Callable[[Path], Path]:
    def make(path: Path) -> Path:
        with path.open("wb") as stream:
            stream.truncate(size)
        return path

    return make


def nan_weight() -> np.ndarray:
    weight = layer_arrays()["layer_0_weight"]
    weight[1, 2] = np.nan
    return weight


BAD_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    # the cases
    "NaN weight": (lambda p: policy_zip(p, layer_0_weight=nan_weight()), "layer 0 holds NaN or infinite weights"),
    "inf bias": (
        lambda p: policy_zip(p, layer_1_bias=np.full(N_ACTIONS, np.inf, np.float32)),
        "layer 1 holds NaN or infinite weights",
    ),
    "no ruleset_hash": (lambda p: policy_zip(p, metadata(ruleset_hash=DROP)), "metadata ruleset_hash: Field required"),
    "no observation_size": (
        lambda p: policy_zip(p, metadata(observation_size=DROP)),
        "metadata observation_size: Field required",
    ),
    "no n_actions": (lambda p: policy_zip(p, metadata(n_actions=DROP)), "metadata n_actions: Field required"),
    "metadata a JSON list": (lambda p: policy_zip(p, [1, 2]), "the metadata is a JSON list, not an object"),
    "empty file": (write(b""), "it is empty"),
    "a .npy": (write(npy(np.zeros(3, np.float32))), "it is a single .npy array, not an .npz archive"),
    "4 GiB member": (
        lambda p: patch_zip_directory(policy_zip(p), "layer_1_weight.npy", file_size=0xFFFF_FFF0),
        "bytes uncompressed, more than the 67108864 allowed",
    ),
    # more
    "lying member size": (lying_bomb, "corrupt zip archive (Bad CRC-32"),
    "truncated zip": (lambda p: write(policy_zip(p).read_bytes()[:3000])(p), "it is not a zip (.npz) archive"),
    "not a zip": (write(b"PK\x03\x04 garbage"), "it is not a zip (.npz) archive"),
    "duplicate member": (duplicated, "it holds metadata.npy twice"),
    "object weights": (
        lambda p: policy_zip(p, layer_0_weight=np.array([[{"x": 1}]], dtype=object)),
        "layer_0_weight is a 2-D object array, expected a 2-D float array",
    ),
    "int weights": (
        lambda p: policy_zip(p, layer_0_weight=np.zeros((HIDDEN, OBS), np.int32)),
        "layer_0_weight is a 2-D int32 array, expected a 2-D float array",
    ),
    "complex weights": (
        lambda p: policy_zip(p, layer_0_weight=np.zeros((HIDDEN, OBS), np.complex64)),
        "layer_0_weight is a 2-D complex64 array",
    ),
    "a 3-D weight": (
        lambda p: policy_zip(p, layer_0_weight=np.zeros((HIDDEN, OBS, 1), np.float32)),
        "layer_0_weight is a 3-D float32 array, expected a 2-D float array",
    ),
    "shapes that do not chain": (
        lambda p: policy_zip(p, layer_1_weight=np.zeros((N_ACTIONS, HIDDEN + 1), np.float32)),
        f"layer 1 weight has shape ({N_ACTIONS}, {HIDDEN + 1}), expected (1..65536, {HIDDEN})",
    ),
    "first layer is not the observation size": (
        lambda p: policy_zip(p, layer_0_weight=np.zeros((HIDDEN, OBS - 1), np.float32)),
        f"layer 0 weight has shape ({HIDDEN}, {OBS - 1}), expected (1..65536, {OBS})",
    ),
    "last layer is not the action count": (
        lambda p: policy_zip(p, layer_1_weight=np.zeros((7, HIDDEN), np.float32), layer_1_bias=np.zeros(7, np.float32)),
        f"the last layer gives 7 logits for {N_ACTIONS} actions",
    ),
    "bias of another length": (
        lambda p: policy_zip(p, layer_0_bias=np.zeros(HIDDEN + 1, np.float32)),
        f"layer 0 bias has shape ({HIDDEN + 1},), expected ({HIDDEN},)",
    ),
    "huge declared dims": (
        lambda p: policy_zip(p, layer_0_weight=with_header((10**9, 10**9))),
        "layer_0_weight has shape (1000000000, 1000000000): every dimension must be 1 to 65536",
    ),
    "more data declared than held": (
        lambda p: policy_zip(p, layer_0_weight=with_header((HIDDEN, OBS), data=b"\0" * 8)),
        "layer_0_weight declares 2176 bytes of data",
    ),
    "garbage .npy header": (
        lambda p: policy_zip(p, layer_0_weight=b"\x93NUMPY\x01\x00\x10\x00{'descr': os.sy}"),
        "layer_0_weight is not a .npy array",
    ),
    "metadata not UTF-8": (lambda p: policy_zip(p, b"\xff\xfe{}"), "the metadata is not UTF-8 text"),
    "metadata not JSON": (lambda p: policy_zip(p, b"{oops"), "the metadata is not JSON"),
    "metadata with NaN": (lambda p: policy_zip(p, b'{"timesteps": NaN}'), "NaN is not a number JSON allows"),
    "metadata nested deeply": (lambda p: policy_zip(p, b"[" * 60_000), "the metadata is nested too deeply"),
    "metadata over 64 KiB": (
        lambda p: policy_zip(p, json.dumps({**metadata(), "x": "y" * 70_000}).encode()),
        "metadata has shape (70",
    ),
    "metadata as float array": (
        lambda p: policy_zip(p, metadata=np.zeros(3)),
        "metadata is a 1-D float64 array, expected 1-D uint8",
    ),
    "observation_size as text": (
        lambda p: policy_zip(p, metadata(observation_size=str(OBS))),
        "metadata observation_size: Input should be a valid integer",
    ),
    "n_actions true": (
        lambda p: policy_zip(p, metadata(n_actions=True)),
        "metadata n_actions: Input should be a valid integer",
    ),
    "observation_size 0": (
        lambda p: policy_zip(p, metadata(observation_size=0)),
        "metadata observation_size: Input should be greater than 0",
    ),
    "ruleset_hash a number": (
        lambda p: policy_zip(p, metadata(ruleset_hash=7)),
        "metadata ruleset_hash: Input should be a valid string",
    ),
    "unknown activation": (
        lambda p: policy_zip(p, metadata(activation="gelu")),
        "metadata activation: Input should be 'tanh' or 'relu'",
    ),
    "another format": (lambda p: policy_zip(p, metadata(format="tacocat-mlp-v0")), "metadata format: Input should be"),
    "more layers than members": (
        lambda p: policy_zip(p, metadata(layers=3)),
        "it has no layer_2_bias (the metadata says 3 layers)",
    ),
    "a member outside the format": (
        lambda p: policy_zip(p, evil=np.zeros(1)),
        "it holds a member that is not part of the format",
    ),
    "too many members": (
        lambda p: policy_zip(p, **{f"layer_{i}_bias": np.zeros(1) for i in range(2, 70)}),
        f"more than the {MAX_MEMBERS} allowed",
    ),
    "encrypted member": (
        lambda p: patch_zip_directory(policy_zip(p), "metadata.npy", flag_bits=1),
        "metadata.npy is encrypted",
    ),
    "bzip2 member": (lambda p: policy_zip(p, compression=zipfile.ZIP_BZIP2), "uses zip compression method 12"),
    "file over 64 MiB": (sparse(MAX_FILE_BYTES + 1), f"it is {MAX_FILE_BYTES + 1} bytes, more than the"),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_bad_policy_file_is_one_clear_error_naming_the_file(tmp_path: Path, kind: str) -> None:
    make, problem = BAD_FILES[kind]
    path = make(tmp_path / "bad.npz")
    with pytest.raises(PolicyFileError) as err:
        load_policy_file(path)
    message = str(err.value)
    assert message.startswith(f"{path} is not a valid policy file: "), message
    assert problem in message and "\n" not in message


@pytest.mark.parametrize(("where", "message"), [("nowhere.npz", "it does not exist"), (".", "it is a folder")])
def test_a_missing_path_or_a_folder_is_refused(tmp_path: Path, where: str, message: str) -> None:
    with pytest.raises(PolicyFileError, match=message):
        load_policy_file(tmp_path / where)


def test_a_device_is_refused_without_reading_it() -> None:
    with pytest.raises(PolicyFileError, match="/dev/zero is not a valid policy file: it is not a regular file"):
        load_policy_file("/dev/zero")


def test_sizes_are_checked_from_the_zip_directory_before_any_member_is_read(tmp_path: Path, monkeypatch) -> None:
    bomb = patch_zip_directory(policy_zip(tmp_path / "bomb.npz"), "layer_0_weight.npy", file_size=0xFFFF_FFF0)

    def no_reading(*args, **kwargs):
        raise AssertionError("a member was opened")

    monkeypatch.setattr(zipfile.ZipFile, "open", no_reading)
    with pytest.raises(PolicyFileError, match="more than the 67108864 allowed"):
        load_policy_file(bomb)


def test_errors_never_quote_the_file(tmp_path: Path) -> None:
    secret = "SECRET-LINE"
    files = [
        policy_zip(tmp_path / "a.npz", f'{{"{secret}": oops}}'.encode()),
        policy_zip(tmp_path / "b.npz", metadata(ruleset_hash=[secret])),
        policy_zip(tmp_path / "c.npz", **{secret: np.zeros(1)}),
        policy_zip(tmp_path / "d.npz", layer_0_weight=f"\x93NUMPY\x01\x00\x10\x00{{'{secret}'}}".encode()),
    ]
    for path in files:
        with pytest.raises(PolicyFileError) as err:
            load_policy_file(path)
        assert secret not in str(err.value), str(err.value)


# ---------------------------------------------------------------------------------------
# valid files
# ---------------------------------------------------------------------------------------
def test_the_shipped_champion_loads_exactly_its_arrays() -> None:
    layers, meta = load_policy_file(CHAMPION)
    with np.load(CHAMPION, allow_pickle=False) as data:
        assert json.loads(bytes(data["metadata"]).decode()) == meta
        for i, (weight, bias) in enumerate(layers):
            assert weight.dtype == bias.dtype == np.float64
            np.testing.assert_array_equal(weight, data[f"layer_{i}_weight"])
            np.testing.assert_array_equal(bias, data[f"layer_{i}_bias"])
    assert len(layers) == meta["layers"] == 3


def test_a_fortran_ordered_or_float64_file_loads_as_numpy_reads_it(tmp_path: Path) -> None:
    arrays = {name: np.asfortranarray(a.astype(np.float64)) for name, a in layer_arrays().items()}
    path = tmp_path / "f.npz"
    np.savez_compressed(path, metadata=np.frombuffer(meta_bytes(metadata()), np.uint8), **arrays)
    layers, _ = load_policy_file(path)
    for i, (weight, bias) in enumerate(layers):
        np.testing.assert_array_equal(weight, arrays[f"layer_{i}_weight"])
        np.testing.assert_array_equal(bias, arrays[f"layer_{i}_bias"])


def _float32s(shape: tuple[int, ...]):
    return hnp.arrays(np.float32, shape, elements=st.floats(-1e6, 1e6, width=32))


@st.composite
def networks(draw) -> list[tuple[np.ndarray, np.ndarray]]:
    sizes = [OBS, *draw(st.lists(st.integers(1, 6), max_size=3)), N_ACTIONS]
    return [(draw(_float32s((n_out, n_in))), draw(_float32s((n_out,)))) for n_in, n_out in itertools.pairwise(sizes)]


@settings(max_examples=25, deadline=None)
@given(layers=networks(), activation=st.sampled_from(["tanh", "relu"]), timesteps=st.integers(0, 2**40))
def test_save_then_load_gives_back_the_same_network(layers, activation, timesteps) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = save_policy(
            Path(folder) / "p.npz",
            layers,
            activation=activation,
            rules_config=RulesConfig(),
            algorithm=LEAGUE_ALGORITHM,
            experiment="roundtrip",
            seed=3,
            timesteps=timesteps,
        )
        loaded, meta = load_policy_file(path)
        assert sorted(p.name for p in Path(folder).iterdir()) == ["p.npz"]  # no temporary file left
    assert meta == metadata(
        activation=activation, layers=len(layers), experiment="roundtrip", seed=3, timesteps=timesteps
    )
    assert len(loaded) == len(layers)
    for (weight, bias), (w, b) in zip(layers, loaded, strict=True):
        np.testing.assert_array_equal(w, weight)
        np.testing.assert_array_equal(b, bias)
    observation = np.linspace(0.0, 1.0, OBS)
    np.testing.assert_array_equal(
        policy_logits(loaded, activation, observation), policy_logits(layers, activation, observation)
    )


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda layers: [(np.full_like(layers[0][0], np.nan), layers[0][1]), *layers[1:]], "layer 0 holds NaN"),
        (lambda layers: layers[:1], f"the last layer gives {HIDDEN} logits for {N_ACTIONS} actions"),
    ],
)
def test_the_writer_refuses_what_the_reader_would(tmp_path: Path, change, problem: str) -> None:
    arrays = layer_arrays()
    layers = [(arrays[f"layer_{i}_weight"], arrays[f"layer_{i}_bias"]) for i in range(2)]
    with pytest.raises(PolicyFileError, match=f"refusing to write the policy file .*p.npz: {problem}"):
        save_policy(
            tmp_path / "p.npz",
            change(layers),
            activation="tanh",
            rules_config=RulesConfig(),
            algorithm=LEAGUE_ALGORITHM,
            experiment="t",
            seed=0,
            timesteps=0,
        )
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------
# the agents and the command line
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("agent", ["league", "rllib"])
def test_both_agents_refuse_a_nan_policy(tmp_path: Path, agent: str) -> None:
    path = policy_zip(tmp_path / "nan.npz", layer_0_weight=nan_weight())
    with pytest.raises(PolicyFileError, match=r"nan.npz is not a valid policy file: layer 0 holds NaN"):
        make_agent(f"{agent}:path={path}")


def test_one_agent_plays_every_spec_and_only_league_checks_the_algorithm(tmp_path: Path) -> None:
    """`rllib` and `league` are one agent (`MLPPolicyAgent`): the same file gives the same moves;
    `league` (and `champion`) refuse a file the RLlib backend made, `rllib` takes any backend's."""
    from tacocat.evaluation.arena import play_game

    league_file = policy_zip(tmp_path / "league.npz")
    rllib_file = policy_zip(tmp_path / "rllib.npz", meta=metadata(algorithm=RLLIB_ALGORITHM))
    games = [
        play_game([make_agent(f"{spec}:path={league_file}"), make_agent("random")], seed=4).actions
        for spec in ("league", "rllib")
    ]
    assert games[0] == games[1]
    assert isinstance(make_agent(f"rllib:path={rllib_file}"), MLPPolicyAgent)
    with pytest.raises(PolicyFileError, match=r"rllib.npz was not made by the league backend .algorithm 'RLlib PPO'"):
        make_agent(f"league:path={rllib_file}")
    assert isinstance(make_agent("champion"), MLPPolicyAgent)


@pytest.mark.parametrize("kind", ["NaN weight", "empty file", "a .npy", "metadata a JSON list"])
def test_match_with_a_bad_policy_prints_one_error_line(tmp_path: Path, kind: str) -> None:
    path = BAD_FILES[kind][0](tmp_path / "bad.npz")
    result = CliRunner().invoke(app, ["match", f"league:path={path}", "random", "--deal-pairs", "2", "--no-progress"])
    assert result.exit_code not in (0, None), result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(path) in errors[0] and BAD_FILES[kind][1] in errors[0], result.output
