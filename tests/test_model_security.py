"""Loading a model file never runs code from it (docs/SECURITY.md).

A crafted zip carries code in both places SB3's format can hide it: the cloudpickled `data`
member and a pickled (not plain-tensor) `policy.pth`. The default loader must ignore the first
and refuse the second; the test also shows that the file really runs code when trusted, so the
safe path is what stops it.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import zipfile
from pathlib import Path

import pytest
import torch

from tacocat import RulesConfig
from tacocat.agents.policy_file import PolicyFileError
from tacocat.agents.registry import make_agent
from tacocat.agents.trained import ModelFileError, PolicyArchitecture, build_policy, load_model_file
from tacocat.evaluation.arena import play_game
from tacocat.game.observation import ObservationLayout
from tacocat.game.ruleset import compile_rules

RULES = compile_rules(RulesConfig())
OBS = ObservationLayout(RULES).size
ARCH = PolicyArchitecture(net_arch=[8], activation="tanh")


class _RunsCode:
    """Unpickling this writes a marker file: stands for arbitrary code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('code ran')",))


def _metadata(**extra) -> dict:
    return {
        "ruleset_hash": RULES.hash,
        "observation_size": OBS,
        "n_actions": RULES.codec.size,
        "algorithm": "MaskablePPO",
        "policy": ARCH.model_dump(),
        **extra,
    }


def _weights_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def crafted_zip(
    path: Path, marker: Path, *, evil_data: bool = True, evil_weights: bool = False, metadata: dict | None = None
) -> Path:
    policy = build_policy(OBS, RULES.codec.size, ARCH)
    weights = dict(policy.state_dict())
    if evil_weights:
        weights["payload"] = _RunsCode(marker)
    payload = base64.b64encode(pickle.dumps(_RunsCode(marker))).decode()
    data = {"policy_class": {":type:": "<class 'abc.ABCMeta'>", ":serialized:": payload}} if evil_data else {}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps(data))
        archive.writestr("policy.pth", _weights_bytes(weights))
        archive.writestr("_stable_baselines3_version", "2.0.0")
        archive.writestr("tacocat.json", json.dumps(metadata if metadata is not None else _metadata()))
    return path


def test_crafted_data_member_runs_code_only_when_trusted(tmp_path):
    marker = tmp_path / "marker"
    model = crafted_zip(tmp_path / "model.zip", marker)
    # the default path loads the weights and plays, and the code in `data` never runs
    agent = make_agent("ppo", path=str(model))
    assert play_game([agent, make_agent("random")], seed=0).length > 0
    assert not marker.exists()
    # the same file through SB3's pickle loader (explicit trust) does run it: the threat is real
    with pytest.raises(ModelFileError):
        make_agent("ppo", path=str(model), trust_pickle=True)
    assert marker.read_text() == "code ran"


def test_pickled_objects_in_the_weights_are_refused(tmp_path):
    marker = tmp_path / "marker"
    model = crafted_zip(tmp_path / "model.zip", marker, evil_data=False, evil_weights=True)
    with pytest.raises(ModelFileError, match=r"policy.pth is not a plain weights file and was refused"):
        load_model_file(model)
    assert not marker.exists()


def test_a_refused_model_file_is_a_refused_policy_file(tmp_path):
    """A caller that does not know which kind of file an agent plays catches one error."""
    model = crafted_zip(tmp_path / "model.zip", tmp_path / "marker", evil_data=False, evil_weights=True)
    with pytest.raises(PolicyFileError, match=r"model\.zip"):
        make_agent("ppo", path=str(model))


def test_a_spec_cannot_opt_into_trust_by_accident(tmp_path):
    marker = tmp_path / "marker"
    model = crafted_zip(tmp_path / "model.zip", marker)
    with pytest.raises(ValueError, match="trust_pickle='yes' must be of type bool"):
        make_agent(f"ppo:path={model},trust_pickle='yes'")
    assert not marker.exists()


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"ruleset_hash": RULES.hash}, "invalid tacocat.json: observation_size: Field required"),
        (_metadata(observation_size="136"), "observation_size: Input should be a valid integer"),
        (_metadata(policy={"net_arch": [8], "activation": "gelu"}), "policy.activation"),
        (_metadata(policy=None), "cannot be loaded without unpickling; if you trust the file, pass trust_pickle=true"),
        (_metadata(policy={"net_arch": [16], "activation": "tanh"}), "weights do not fit the architecture"),
        ([1, 2], "tacocat.json must be a JSON object"),
        # an architecture that would allocate without bound is refused before anything is built
        (_metadata(policy={"net_arch": [65536, 65536], "activation": "tanh"}), "over 8,388,608 parameters"),
        (_metadata(policy={"net_arch": [100_000], "activation": "tanh"}), "policy.net_arch.0"),
        (_metadata(policy={"net_arch": [8] * 33, "activation": "tanh"}), "policy.net_arch"),
        (_metadata(observation_size=10**9), "observation_size"),
    ],
)
def test_bad_metadata_is_a_clear_error_and_runs_nothing(tmp_path, metadata, message):
    marker = tmp_path / "marker"
    model = crafted_zip(tmp_path / "model.zip", marker, metadata=metadata)
    with pytest.raises(ModelFileError, match=message):
        load_model_file(model)
    assert not marker.exists()


def test_a_model_path_with_a_comma_is_given_by_quoting(tmp_path):
    folder = tmp_path / "a,b"
    folder.mkdir()
    model = crafted_zip(folder / "m=1.zip", tmp_path / "marker", evil_data=False)
    agent = make_agent(f'ppo:path="{model}",deterministic=false')
    assert agent.path == str(model) and agent.deterministic is False
