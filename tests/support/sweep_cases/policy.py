"""Sweep cases for policy files (`league:path=`, `rllib:path=`; `tacocat.agents.policy_file.load_policy_file`):
damaged copies of the shipped champion, through the loader, both agents and the CLI."""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .case import Case, CliRefused, run_cli
from .fakes import patch_zip_directory

SMOKE = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
DROP = None  # a member or metadata value that removes it


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)  # only to craft the object-array case
    return buffer.getvalue()


def _header(shape: tuple[int, ...], descr: str = "<f4", data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue() + data


def cases(tmp: Path) -> Iterator[Case]:
    from tacocat.agents.mlp_agent import CHAMPION
    from tacocat.agents.policy_file import load_policy_file
    from tacocat.agents.registry import make_agent

    with np.load(CHAMPION, allow_pickle=False) as data:  # the shipped file: trusted
        arrays = {name: data[name] for name in data.files}
    meta = json.loads(bytes(arrays.pop("metadata")).decode())
    weight0, out0 = arrays["layer_0_weight"], arrays["layer_0_weight"].shape[0]

    def policy(
        name: str, meta_json: object = None, compression: int = zipfile.ZIP_STORED, **members: np.ndarray | bytes | None
    ) -> Path:
        """The champion with its metadata JSON replaced (an object, or raw bytes) and some
        members replaced (arrays or raw bytes) or dropped (None)."""
        if not isinstance(meta_json, bytes):
            meta_json = json.dumps(meta if meta_json is None else meta_json).encode()
        blobs = {"metadata": _npy(np.frombuffer(meta_json, np.uint8)), **{k: _npy(v) for k, v in arrays.items()}}
        for member, value in members.items():
            if value is None:
                blobs.pop(member)
            else:
                blobs[member] = value if isinstance(value, bytes) else _npy(value)
        path = tmp / f"{name}.npz"
        with zipfile.ZipFile(path, "w", compression) as archive:
            for member, blob in blobs.items():
                archive.writestr(f"{member}.npy", blob)
        return path

    def changed(**changes: object) -> dict:
        return {k: v for k, v in {**meta, **changes}.items() if v is not DROP}

    def raw_file(name: str, data: bytes) -> Path:
        path = tmp / name
        path.write_bytes(data)
        return path

    def with_nan(array: np.ndarray, value: float) -> np.ndarray:
        array = array.copy()
        array.flat[7] = value
        return array

    def lying(name: str) -> Path:
        """layer_0_weight.npy inflates to 32 MiB more than the directory states."""
        valid = _npy(weight0)
        path = policy(name, compression=zipfile.ZIP_DEFLATED, layer_0_weight=valid + bytes(32 << 20))
        return patch_zip_directory(path, "layer_0_weight.npy", file_size=len(valid))

    def duplicated(name: str) -> Path:
        path = policy(name)
        with warnings.catch_warnings(), zipfile.ZipFile(path, "a") as archive:
            warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
            archive.writestr("layer_0_bias.npy", _npy(arrays["layer_0_bias"]))
        return path

    def cut_out(name: str) -> Path:
        data = policy(name).read_bytes()
        return raw_file(f"{name}.npz", data[:100_000] + data[101_000:])

    def flipped(name: str) -> Path:
        data = bytearray(policy(name, compression=zipfile.ZIP_DEFLATED).read_bytes())
        data[len(data) // 2] ^= 0xFF
        return raw_file(f"{name}.npz", bytes(data))

    def sparse(name: str, size: int) -> Path:
        path = tmp / name
        with path.open("wb") as stream:
            stream.truncate(size)
        return path

    nan = policy("nan", layer_0_weight=with_nan(weight0, np.nan))
    empty = raw_file("empty.npz", b"")
    npy = raw_file("array.npy", _npy(weight0))
    listed = policy("list_meta", [1, 2])
    bomb = patch_zip_directory(policy("bomb"), "layer_1_weight.npy", file_size=0xFFFF_FFF0)
    files = {
        # the cases
        "NaN weights": nan,
        "inf weights": policy("inf", layer_2_bias=with_nan(arrays["layer_2_bias"], np.inf)),
        "metadata without ruleset_hash": policy("no_hash", changed(ruleset_hash=DROP)),
        "metadata without observation_size": policy("no_obs", changed(observation_size=DROP)),
        "metadata without n_actions": policy("no_actions", changed(n_actions=DROP)),
        "metadata a JSON list": listed,
        "an empty file": empty,
        "a .npy": npy,
        "a member declared 4 GiB": bomb,
        # more
        "a member inflating past its stated size": lying("lying"),
        "a truncated zip": raw_file("truncated.npz", policy("whole").read_bytes()[:150_000]),
        "a zip cut in its directory": raw_file("cut.npz", policy("whole2").read_bytes()[:-30]),
        "a member's bytes cut out (directory intact)": cut_out("cut_member"),
        "a flipped byte in a deflated member": flipped("flipped"),
        "not a zip": raw_file("junk.npz", b"PK\x03\x04 not really a zip"),
        "a duplicate member": duplicated("duplicate"),
        "object weights (pickled)": policy("object", layer_0_weight=np.array([[{"x": 1}]], dtype=object)),
        "int weights": policy("int", layer_0_weight=weight0.astype(np.int64)),
        "complex weights": policy("complex", layer_1_weight=arrays["layer_1_weight"].astype(np.complex64)),
        "structured weights": policy("structured", layer_0_bias=np.zeros(out0, dtype=[("a", "<f4")])),
        "float128 weights": policy("longdouble", layer_0_bias=arrays["layer_0_bias"].astype(np.longdouble)),
        "a 3-D weight": policy("3d", layer_0_weight=weight0[:, :, None]),
        "a 2-D bias": policy("2d_bias", layer_0_bias=arrays["layer_0_bias"][:, None]),
        "shapes that do not chain": policy("no_chain", layer_1_weight=arrays["layer_1_weight"][:, :-1]),
        "a first layer of another input size": policy("wide", layer_0_weight=np.zeros((out0, 137), np.float32)),
        "a last layer of another action count": policy(
            "few_actions", layer_2_weight=arrays["layer_2_weight"][:-1], layer_2_bias=arrays["layer_2_bias"][:-1]
        ),
        "a bias of another length": policy("short_bias", layer_1_bias=arrays["layer_1_bias"][:-1]),
        "huge declared dims": policy("huge_dims", layer_0_weight=_header((10**9, 10**9))),
        "a negative declared dim": policy("negative_dim", layer_0_weight=_header((-1, 136))),
        "a zero-width layer": policy("zero_width", layer_0_weight=_header((0, 136))),
        "more data declared than held": policy("short_data", layer_0_weight=_header((out0, 136), data=b"\0" * 64)),
        "more data held than declared": policy("long_data", layer_0_bias=_npy(arrays["layer_0_bias"]) + b"\0" * 64),
        "a garbage .npy header": policy("bad_header", layer_0_weight=b"\x93NUMPY\x01\x00\x10\x00{'descr': os.sy}"),
        "a .npy header version 3": policy("v3", layer_0_weight=b"\x93NUMPY\x03\x00" + _npy(weight0)[8:]),
        "an empty member": policy("empty_member", layer_1_bias=b""),
        "metadata not UTF-8": policy("latin1", b"\xff\xfe{}"),
        "metadata not JSON": policy("not_json", b"{oops"),
        "metadata with NaN": policy("meta_nan", b'{"timesteps": NaN}'),
        "metadata nested deeply": policy("nested", b"[" * 60_000),
        "metadata over 64 KiB": policy("big_meta", json.dumps({**meta, "x": "y" * 70_000}).encode()),
        "metadata an integer with 5000 digits": policy("digits", b'{"seed": ' + b"9" * 5000 + b"}"),
        "metadata a float array": policy("float_meta", metadata=np.zeros(3)),
        "no metadata": policy("no_meta", metadata=None),
        "observation_size as text": policy("obs_text", changed(observation_size="136")),
        "n_actions a boolean": policy("actions_bool", changed(n_actions=True)),
        "observation_size 0": policy("obs_zero", changed(observation_size=0)),
        "n_actions over the dimension limit": policy("actions_big", changed(n_actions=10**9)),
        "ruleset_hash a number": policy("hash_int", changed(ruleset_hash=7)),
        "an unknown activation": policy("gelu", changed(activation="gelu")),
        "another format": policy("format", changed(format="tacocat-mlp-v0")),
        "layers 0": policy("layers_zero", changed(layers=0)),
        "more layers than members": policy("layers_more", changed(layers=4)),
        "fewer layers than members": policy("layers_fewer", changed(layers=2)),
        "a missing bias": policy("no_bias", layer_1_bias=None),
        "a member outside the format": policy("extra", __init__=np.zeros(1)),
        "too many members": policy("many", **{f"layer_{i}_bias": np.zeros(1) for i in range(3, 80)}),
        "an encrypted member": patch_zip_directory(policy("encrypted"), "metadata.npy", flag_bits=1),
        "a bzip2 member": policy("bzip2", compression=zipfile.ZIP_BZIP2),
        "a file over 64 MiB": sparse("big.npz", (64 << 20) + 1),
        "a folder": tmp,
        "a missing file": tmp / "missing.npz",
        "a device": Path("/dev/zero"),
    }
    for name, path in files.items():
        yield Case("policy", f"policy file: {name}", lambda p=path: load_policy_file(p))
    for agent in ("league", "rllib"):
        for name in ("NaN weights", "a .npy", "metadata a JSON list", "a member declared 4 GiB"):
            yield Case("policy", f"{agent} agent: {name}", lambda a=agent, p=files[name]: make_agent(f"{a}:path={p}"))

    commands = [
        ["match", f"league:path={nan}", "random"],
        ["match", "random", f"rllib:path={nan}"],
        ["match", f"league:path={empty}", "random"],
        ["match", f"league:path={npy}", "random"],
        ["match", f"rllib:path={listed}", "random"],
        ["match", f"league:path={bomb}", "random"],
        ["tournament", "--agents", f"random,league:path={nan}"],
        ["play", "--opponent", f"league:path={nan}"],
        ["train", "--config", str(SMOKE), "--set", f"opponents=[{{agent: 'league:path={nan}'}}]"],
    ]
    for args in commands:
        yield Case(
            "policy",
            "tacocat " + " ".join(a.replace(str(tmp), "$TMP") for a in args),
            lambda a=args: run_cli(a),
            (CliRefused,),
        )
