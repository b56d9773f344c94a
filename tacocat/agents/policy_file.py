"""The `tacocat-mlp-v1` policy file: an MLP actor that `tacocat train` exports (backends `rllib`
and `league`) and the `rllib`, `league` and `champion` agents play with numpy alone.

A file is an `.npz` (a zip of `.npy` members): `layer_<i>_weight` (out, in) and
`layer_<i>_bias` (out,) float32 arrays for i = 0 .. layers-1, and `metadata`, a uint8 array
holding UTF-8 JSON (`PolicyMetadata`). `save_policy` writes it; `load_policy_file` is the one reader.
Policy files may come from anyone, so the reader trusts nothing in them (docs/SECURITY.md):

* nothing is unpickled and no code from the file runs: each member is parsed as a `.npy`
  header (`numpy.lib.format`) plus raw bytes, and only float arrays (uint8 for the metadata)
  are accepted;
* sizes are checked before anything is read: the file (`MAX_FILE_BYTES`), the number of
  members (`MAX_MEMBERS`), their uncompressed sizes from the zip directory
  (`MAX_UNCOMPRESSED_BYTES` together), every declared dimension (`MAX_DIM`, `MAX_METADATA_BYTES`).
  A member is read only up to the size its `.npy` header declares, which the directory must
  also give, so an entry whose data inflates past its stated size is cut off there (and then
  fails its CRC);
* the metadata is a JSON object with the required keys and types; the weights are finite and
  their shapes chain from `observation_size` inputs to `n_actions` logits.

Every refusal is one `PolicyFileError` (a ValueError) naming the file and the problem, and
never quoting the file's content. The writer applies the same checks, so it cannot write a
file the reader would refuse (a diverged run's NaN weights, say).
"""

from __future__ import annotations

import json
import math
import re
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Final, Literal

import numpy as np
from numpy.lib import format as npy
from pydantic import BaseModel, ConfigDict, Field, ValidationError

Format = Literal["tacocat-mlp-v1"]
FORMAT: Final[Format] = "tacocat-mlp-v1"
Activation = Literal["tanh", "relu"]
ACTIVATIONS: dict[Activation, Callable[[np.ndarray], np.ndarray]] = {
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0.0),
}

#: limits of the reader (docs/SECURITY.md), far above any policy this project trains (the
#: shipped champion: 3 layers, 50 k parameters, 200 kB)
MAX_FILE_BYTES: Final = 64 << 20
#: all members together, uncompressed, as the zip directory states them (checked before reading)
MAX_UNCOMPRESSED_BYTES: Final = 64 << 20
MAX_LAYERS: Final = 32
MAX_MEMBERS: Final = 2 * MAX_LAYERS + 1
#: largest dimension of a weight or bias (layer width, observation size, action count)
MAX_DIM: Final = 1 << 16
#: parameters of the whole network: float32 weights of this many fit MAX_UNCOMPRESSED_BYTES
MAX_PARAMETERS: Final = 8 << 20
MAX_METADATA_BYTES: Final = 64 << 10

METADATA: Final = "metadata"
_MEMBER_NAME = re.compile(r"metadata|layer_(?:0|[1-9][0-9]?)_(?:weight|bias)")
_COMPRESSIONS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}

Layers = list[tuple[np.ndarray, np.ndarray]]


class PolicyFileError(ValueError):
    """A trained policy's file that cannot be used: missing, corrupt, too large, or made for
    other rules. Raised for a `tacocat-mlp-v1` file as such and, as its subclass
    `tacocat.agents.trained.ModelFileError`, for an SB3 model file, so a caller that does not
    know which kind of file it has catches this one error."""


class PolicyMetadata(BaseModel):
    """The `metadata` member of a policy file (validated on every load and every save)."""

    model_config = ConfigDict(extra="allow", strict=True)
    format: Format
    activation: Activation
    layers: int = Field(ge=1, le=MAX_LAYERS)
    ruleset_hash: str = Field(min_length=1, max_length=128)
    observation_size: int = Field(gt=0, le=MAX_DIM)
    n_actions: int = Field(gt=0, le=MAX_DIM)
    algorithm: str = Field(max_length=200)
    experiment: str = Field(max_length=200)
    seed: int
    timesteps: int = Field(ge=0)


def load_policy_file(path: str | Path) -> tuple[Layers, dict[str, Any]]:
    """The layers (weight (out, in), bias (out,), float64) and the metadata of a policy file,
    after every check above; PolicyFileError otherwise."""
    path = Path(path)
    try:
        return _load(path)
    except _Invalid as err:
        raise PolicyFileError(f"{path} is not a valid policy file: {err}") from None


def save_policy(
    path: Path,
    layers: Layers,
    *,
    activation: str,
    rules_config: Any,
    algorithm: str,
    experiment: str,
    seed: int,
    timesteps: int,
) -> Path:
    """Write an MLP actor in the format `load_policy_file` reads: float32 `layer_i_weight` (out, in)
    and `layer_i_bias` arrays plus JSON metadata, checked as the reader checks them (so a
    diverged run's NaN weights are refused here), written to a temporary file then renamed."""
    from tacocat.game.observation import ObservationLayout
    from tacocat.game.ruleset import compile_rules

    rules = compile_rules(rules_config)
    data = {
        "format": FORMAT,
        "activation": activation,
        "layers": len(layers),
        "ruleset_hash": rules.hash,
        "observation_size": ObservationLayout(rules).size,
        "n_actions": rules.codec.size,
        "algorithm": algorithm,
        "experiment": experiment,
        "seed": seed,
        "timesteps": timesteps,
    }
    layers32 = [(np.asarray(weight, np.float32), np.asarray(bias, np.float32)) for weight, bias in layers]
    try:
        _check_layers(_validate_metadata(data), layers32)
    except _Invalid as err:
        raise PolicyFileError(f"refusing to write the policy file {path}: {err}") from None
    arrays = {}
    for i, (weight, bias) in enumerate(layers32):
        arrays[f"layer_{i}_weight"], arrays[f"layer_{i}_bias"] = weight, bias
    arrays[METADATA] = np.frombuffer(json.dumps(data, sort_keys=True).encode(), dtype=np.uint8)
    tmp = path.with_name(path.name + ".tmp.npz")
    # float32 layers and uint8 metadata only: nothing to pickle, and the reader unpickles nothing.
    # Named, the flag is also not one that **arrays could fill (numpy's stub types it bool).
    np.savez(tmp, allow_pickle=False, **arrays)
    tmp.replace(path)
    return path


def policy_logits(layers: Layers, activation: str, observation: np.ndarray) -> np.ndarray:
    """The actor MLP: activation after every layer but the last. `observation` is one
    observation (observation_size,) or a batch (n, observation_size); the logits have the same
    leading shape."""
    act = ACTIVATIONS[activation]  # type: ignore[index]  # a str key of Literal names
    h = np.asarray(observation, dtype=np.float64)
    batch = h.ndim == 2
    h = h.T if batch else h  # features first, so one observation takes the same products as ever
    for i, (weight, bias) in enumerate(layers):
        h = weight @ h + (bias[:, None] if batch else bias)
        if i < len(layers) - 1:
            h = act(h)
    return h.T if batch else h


# ---------------------------------------------------------------------------------------
# the checks, one at a time
# ---------------------------------------------------------------------------------------
class _Invalid(Exception):
    """A problem with the file, as `PolicyFileError` states it after the file's name."""


def _load(path: Path) -> tuple[Layers, dict[str, Any]]:
    _check_file(path)
    try:
        with zipfile.ZipFile(path) as archive:
            members = _members(archive)
            meta, data = _parse_metadata(_read_array(archive, members, METADATA, floats=False).tobytes())
            _check_member_names(members, meta.layers)
            layers = [
                (
                    _read_array(archive, members, f"layer_{i}_weight", floats=True),
                    _read_array(archive, members, f"layer_{i}_bias", floats=True),
                )
                for i in range(meta.layers)
            ]
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as err:
        raise _Invalid(f"corrupt zip archive ({_without_quotes(err)})") from None
    _check_layers(meta, layers)
    return layers, data


def _check_layers(meta: PolicyMetadata, layers: Layers) -> None:
    """Finite weights whose shapes chain from `observation_size` inputs to `n_actions` logits."""
    inputs, parameters = meta.observation_size, 0
    for i, (weight, bias) in enumerate(layers):
        if weight.ndim != 2 or weight.shape[1] != inputs or not 1 <= weight.shape[0] <= MAX_DIM:
            raise _Invalid(f"layer {i} weight has shape {weight.shape}, expected (1..{MAX_DIM}, {inputs})")
        if bias.shape != (weight.shape[0],):
            raise _Invalid(f"layer {i} bias has shape {bias.shape}, expected ({weight.shape[0]},)")
        if not (np.isfinite(weight).all() and np.isfinite(bias).all()):
            raise _Invalid(f"layer {i} holds NaN or infinite weights")
        inputs, parameters = weight.shape[0], parameters + weight.size + bias.size
    if inputs != meta.n_actions:
        raise _Invalid(f"the last layer gives {inputs} logits for {meta.n_actions} actions")
    if parameters > MAX_PARAMETERS:
        raise _Invalid(f"{parameters} parameters, more than the {MAX_PARAMETERS} allowed")


def _without_quotes(err: BaseException) -> str:
    """zipfile's message on one line, with what it quotes from the file (names) left out."""
    text = re.sub(r"b?'[^']*'|\"[^\"]*\"", "...", " ".join(str(err).split()))
    return text[:200] or type(err).__name__


def _check_file(path: Path) -> None:
    """A regular file of bounded size that is a zip archive (not a lone `.npy`)."""
    try:
        if not path.exists():
            raise _Invalid("it does not exist")
        if not path.is_file():  # a folder, a device (/dev/zero), a FIFO
            raise _Invalid("it is a folder" if path.is_dir() else "it is not a regular file")
        size = path.stat().st_size
        if size == 0:
            raise _Invalid("it is empty")
        if size > MAX_FILE_BYTES:
            raise _Invalid(f"it is {size} bytes, more than the {MAX_FILE_BYTES} allowed")
        with path.open("rb") as stream:
            magic = stream.read(len(npy.MAGIC_PREFIX))
    except OSError as err:
        raise _Invalid(f"it cannot be read ({err.strerror or type(err).__name__})") from None
    if magic == npy.MAGIC_PREFIX:
        raise _Invalid("it is a single .npy array, not an .npz archive")
    if not zipfile.is_zipfile(path):
        raise _Invalid("it is not a zip (.npz) archive")


def _members(archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """The archive's members by array name, from the zip directory alone (nothing read yet)."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _Invalid(f"it has {len(infos)} members, more than the {MAX_MEMBERS} allowed")
    members: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        name = info.filename.removesuffix(".npy")
        if not info.filename.endswith(".npy") or not _MEMBER_NAME.fullmatch(name):
            raise _Invalid(
                "it holds a member that is not part of the format "
                "(only metadata.npy and layer_<i>_weight.npy / layer_<i>_bias.npy)"
            )
        if name in members:
            raise _Invalid(f"it holds {info.filename} twice")
        if info.flag_bits & 0x1:
            raise _Invalid(f"{info.filename} is encrypted")
        if info.compress_type not in _COMPRESSIONS:
            raise _Invalid(
                f"{info.filename} uses zip compression method {info.compress_type} "
                f"(only {' and '.join(_COMPRESSIONS.values())} are read)"
            )
        members[name] = info
    total = sum(info.file_size for info in infos)
    if total > MAX_UNCOMPRESSED_BYTES:
        raise _Invalid(f"its members are {total} bytes uncompressed, more than the {MAX_UNCOMPRESSED_BYTES} allowed")
    if METADATA not in members:
        raise _Invalid("it has no metadata member")
    return members


def _check_member_names(members: dict[str, zipfile.ZipInfo], n_layers: int) -> None:
    expected = {METADATA} | {f"layer_{i}_{part}" for i in range(n_layers) for part in ("weight", "bias")}
    missing, extra = sorted(expected - set(members)), sorted(set(members) - expected)
    if missing:
        raise _Invalid(f"it has no {missing[0]} (the metadata says {n_layers} layers)")
    if extra:
        raise _Invalid(f"it holds {extra[0]}, but the metadata says {n_layers} layers")


def _read_array(
    archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], name: str, *, floats: bool
) -> np.ndarray:
    """One member as an array: a float matrix or vector (`floats`, as float64) or the metadata's
    uint8 bytes, its header checked before its data is read, and no more data read than declared."""
    info = members[name]
    with archive.open(info) as stream:
        shape, fortran_order, dtype = _read_header(name, stream)
        if floats and (dtype.kind != "f" or dtype.itemsize > 8 or name.endswith("_weight") != (len(shape) == 2)):
            raise _Invalid(
                f"{name} is a {len(shape)}-D {dtype.name} array, expected a "
                f"{2 if name.endswith('_weight') else 1}-D float array"
            )
        if not floats and (dtype != np.uint8 or len(shape) != 1):
            raise _Invalid(f"{name} is a {len(shape)}-D {dtype.name} array, expected 1-D uint8 (JSON bytes)")
        limit = MAX_DIM if floats else MAX_METADATA_BYTES
        if not all(1 <= n <= limit for n in shape):
            raise _Invalid(f"{name} has shape {shape}: every dimension must be 1 to {limit}")
        size = math.prod(shape) * dtype.itemsize
        if size > info.file_size:
            raise _Invalid(
                f"{name} declares {size} bytes of data, but the zip directory gives "
                f"{info.file_size} for the whole member"
            )
        data = stream.read(size)
        if len(data) < size:
            raise _Invalid(f"{name} is truncated")
        if stream.read(1):
            raise _Invalid(f"{name} holds more data than its header declares")
    array = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran_order else "C")
    return array.astype(np.float64) if floats else array


def _read_header(name: str, stream: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype]:
    try:
        version = npy.read_magic(stream)
        if version == (1, 0):
            return npy.read_array_header_1_0(stream)
        if version == (2, 0):
            return npy.read_array_header_2_0(stream)
    except (ValueError, TypeError, SyntaxError, RecursionError):  # numpy quotes the header: not echoed
        pass
    raise _Invalid(f"{name} is not a .npy array (no valid version 1 or 2 header)")


def _parse_metadata(raw: bytes) -> tuple[PolicyMetadata, dict[str, Any]]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Invalid("the metadata is not UTF-8 text") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise _Invalid("the metadata is nested too deeply") from None
    except ValueError as err:  # JSONDecodeError gives the position only, never the text
        raise _Invalid(f"the metadata is not JSON ({' '.join(str(err).split())[:200]})") from None
    if not isinstance(data, dict):
        raise _Invalid(f"the metadata is a JSON {type(data).__name__}, not an object")
    return _validate_metadata(data), data


def _validate_metadata(data: dict[str, Any]) -> PolicyMetadata:
    try:
        return PolicyMetadata.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise _Invalid(f"metadata {field}: {first['msg']}") from None


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")
