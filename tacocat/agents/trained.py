"""Trained policies as agents: MaskablePPO models saved by `tacocat train`.

A model file is SB3's zip with one extra member, `tacocat.json`: the ruleset hash, the rules
config, the observation size, the action count and the policy architecture it was trained
with. Loading checks them, so a model trained under other rules or another observation layout
is refused with a clear error.

Loading never runs code from the file (docs/SECURITY.md). SB3's own loader unpickles the
zip's `data` member with cloudpickle, which runs whatever code a crafted file holds; the
default path here reads only `tacocat.json` (JSON, validated) and `policy.pth` through
`torch.load(weights_only=True)`, and builds the network from the architecture in the JSON.
`trust_pickle=True` (spec `ppo:path=...,trust_pickle=true`) opts into SB3's pickle-based
loader for files from a trusted source that lack the architecture metadata.
"""

from __future__ import annotations

import itertools
import json
import zipfile
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, model_validator

from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.policy_file import MAX_DIM, MAX_LAYERS, MAX_PARAMETERS, PolicyFileError

META_NAME = "tacocat.json"
WEIGHTS_NAME = "policy.pth"
#: members larger than this (uncompressed) are refused before reading: no zip bombs
MAX_MEMBER_BYTES = {META_NAME: 1 << 20, WEIGHTS_NAME: 1 << 31}


class ModelFileError(PolicyFileError):
    """A model file that cannot be used: missing, corrupt, unsafe, or made for other rules."""


class PolicyArchitecture(BaseModel):
    """What it takes to rebuild the policy network without unpickling anything."""

    model_config = ConfigDict(extra="forbid")
    net_arch: list[Annotated[StrictInt, Field(ge=1, le=MAX_DIM)]] = Field(min_length=1, max_length=MAX_LAYERS)
    activation: Literal["tanh", "relu"]


class ModelMetadata(BaseModel):
    """The `tacocat.json` member of a model file (validated on every load)."""

    model_config = ConfigDict(extra="allow")
    ruleset_hash: str
    observation_size: StrictInt = Field(gt=0, le=MAX_DIM)
    n_actions: StrictInt = Field(gt=0, le=MAX_DIM)
    policy: PolicyArchitecture | None = None

    @model_validator(mode="after")
    def _bounded_network(self) -> ModelMetadata:
        """The network this metadata asks to build is at most MAX_PARAMETERS weights (the same
        bound as a policy file's), checked before anything is allocated."""
        if self.policy is not None:
            sizes = [self.observation_size, *self.policy.net_arch]
            hidden = sum((a + 1) * b for a, b in itertools.pairwise(sizes))
            heads = (sizes[-1] + 1) * (self.n_actions + 1)  # the policy and value heads
            if 2 * hidden + heads > MAX_PARAMETERS:  # separate policy and value networks at most
                raise ValueError(f"the network it describes has over {MAX_PARAMETERS:,} parameters")
        return self


def write_metadata(path: str | Path, metadata: dict[str, Any]) -> None:
    """Add the Tacocat metadata member to a saved SB3 zip."""
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(META_NAME, json.dumps(metadata, sort_keys=True, indent=2))


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The validated `tacocat.json` of a model file, as a dict."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"model file {path} does not exist" + (" (it is a folder)" if path.is_dir() else ""))
    try:
        with zipfile.ZipFile(path) as archive:
            if META_NAME not in archive.namelist():
                raise ModelFileError(f"{path} has no {META_NAME}: not a model saved by `tacocat train`")
            _check_size(path, archive, META_NAME)
            data = json.loads(archive.read(META_NAME))
    except zipfile.BadZipFile as err:
        raise ModelFileError(f"{path} is not a valid model file (corrupt zip: {err})") from err
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ModelFileError(f"{path}: corrupt {META_NAME} ({err})") from err
    if not isinstance(data, dict):
        raise ModelFileError(f"{path}: {META_NAME} must be a JSON object")
    try:
        ModelMetadata(**data)
    except ValidationError as err:
        raise ModelFileError(f"{path}: invalid {META_NAME}: {_first_error(err)}") from None
    return data


def _check_size(path: Path | str, archive: zipfile.ZipFile, member: str) -> None:
    size, limit = archive.getinfo(member).file_size, MAX_MEMBER_BYTES[member]
    if size > limit:
        raise ModelFileError(f"{path}: {member} is {size} bytes uncompressed, more than the {limit} allowed")


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "(root)"
    return f"{field}: {first['msg']}"


def check_metadata(
    path: str | Path, meta: dict[str, Any], expected_hash: str | None = None, expected_obs: int | None = None
) -> None:
    """Refuse a model made for other rules or another observation layout."""
    if expected_hash is not None and meta.get("ruleset_hash") != expected_hash:
        raise ModelFileError(
            f"{path} was trained for ruleset {meta.get('ruleset_hash')}, but these rules hash to {expected_hash}"
        )
    if expected_obs is not None and meta.get("observation_size") != expected_obs:
        raise ModelFileError(
            f"{path} expects observations of size {meta.get('observation_size')}, the env gives {expected_obs}"
        )


def build_policy(observation_size: int, n_actions: int, architecture: PolicyArchitecture) -> Any:
    """A fresh MaskablePPO policy network of the given shape (weights loaded separately)."""
    import gymnasium as gym
    import torch
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[architecture.activation]
    return MaskableActorCriticPolicy(
        gym.spaces.Box(low=0.0, high=np.inf, shape=(observation_size,), dtype=np.float32),
        gym.spaces.Discrete(n_actions),
        lr_schedule=lambda _: 0.0,
        net_arch=list(architecture.net_arch),
        activation_fn=activation,
    )


def read_weights(path: str | Path, member: str = WEIGHTS_NAME) -> dict[str, Any]:
    """A state dict from the zip, through `torch.load(weights_only=True)` (no code runs)."""
    import io

    import torch

    try:
        with zipfile.ZipFile(path) as archive:
            if member not in archive.namelist():
                raise ModelFileError(f"{path} has no {member}")
            _check_size(path, archive, member)
            blob = archive.read(member)
        weights = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
    except ModelFileError:
        raise
    except Exception as err:  # torch refuses pickled objects that are not plain tensors
        raise ModelFileError(
            f"{path}: {member} is not a plain weights file and was refused (it may hold code): "
            f"{str(err).splitlines()[0]}"
        ) from None
    if not isinstance(weights, dict):
        raise ModelFileError(f"{path}: {member} must hold a state dict")
    return weights


def load_model_file(
    path: str | Path, expected_hash: str | None = None, expected_obs: int | None = None, trust_pickle: bool = False
) -> Any:
    """The policy network of a model file, after checking its metadata.

    Safe by default: only JSON and weights are read. `trust_pickle=True` uses SB3's loader,
    which unpickles the file's `data` member (runs code from the file): trusted files only.
    """
    path = Path(path)
    meta = read_metadata(path)
    check_metadata(path, meta, expected_hash, expected_obs)
    if trust_pickle:
        from sb3_contrib import MaskablePPO

        try:
            return MaskablePPO.load(path, device="cpu").policy
        except Exception as err:  # SB3 raises many kinds of errors for a damaged archive
            raise ModelFileError(f"{path} could not be loaded: {err}") from err
    info = ModelMetadata(**meta)
    if info.policy is None:
        raise ModelFileError(
            f"{path} has no policy architecture in {META_NAME} (saved by an older version), so it "
            "cannot be loaded without unpickling; if you trust the file, pass trust_pickle=true"
        )
    policy = build_policy(info.observation_size, info.n_actions, info.policy)
    try:
        policy.load_state_dict(read_weights(path))
    except (RuntimeError, KeyError, TypeError) as err:
        raise ModelFileError(
            f"{path}: the weights do not fit the architecture in {META_NAME}: {str(err).splitlines()[0]}"
        ) from None
    policy.set_training_mode(False)
    return policy


class PPOAgent(Agent):
    """A trained MaskablePPO policy (path=model.zip), greedy by default (deterministic=False samples)."""

    name = "ppo"

    internal_params = frozenset({"model"})

    def __init__(
        self,
        path: str = "",
        deterministic: bool = True,
        model: Any = None,
        torch_threads: int = 0,
        trust_pickle: bool = False,
    ) -> None:
        super().__init__()
        if model is None and not path:
            raise ValueError("ppo agent needs path=<model.zip>")
        if torch_threads < 0:
            raise ValueError(f"torch_threads must be >= 0, got {torch_threads}")
        self.path = path
        self.deterministic = deterministic
        self.policy = model.policy if model is not None else load_model_file(path, trust_pickle=trust_pickle)
        self._meta = read_metadata(path) if path else None
        self._checked = False
        if torch_threads > 0:  # evaluation workers: one thread each avoids oversubscription; a process-wide
            import torch  # setting, so changed only once the model loaded

            torch.set_num_threads(torch_threads)

    def act(self, inp: AgentInput) -> int:
        if not self._checked:
            self._check(inp)
        mask = inp.action_mask.astype(bool)
        if self.deterministic:
            action, _ = self.policy.predict(inp.observation, action_masks=mask, deterministic=True)
            return int(action)
        # sample with the agent's own generator, so that games replay from their seeds
        import torch

        with torch.no_grad():
            obs, _ = self.policy.obs_to_tensor(inp.observation)
            dist = self.policy.get_distribution(obs, action_masks=mask)
            probs = dist.distribution.probs[0].cpu().numpy().astype(np.float64)
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))

    def check_ruleset(self, ruleset_hash: str) -> None:
        """Refuse rules other than the ones the model file was trained for."""
        if self._meta is not None and self._meta.get("ruleset_hash") != ruleset_hash:
            raise ModelFileError(
                f"{self.path} was trained for ruleset {self._meta.get('ruleset_hash')}, this game uses {ruleset_hash}"
            )

    def _check(self, inp: AgentInput) -> None:
        self.check_ruleset(inp.view.rules.hash)
        size = self.policy.observation_space.shape[0]
        if size != inp.observation.shape[0]:
            raise ModelFileError(f"model expects observations of size {size}, got {inp.observation.shape[0]}")
        self._checked = True

    def __repr__(self) -> str:
        return f"PPOAgent(path={self.path!r})"
