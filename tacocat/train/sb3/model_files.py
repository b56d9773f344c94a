"""SB3 model files of a run (final_model.zip, best_model.zip, checkpoints, self-play snapshots):
SB3's zip plus the metadata `tacocat.agents.trained` checks before it loads one (`write_metadata`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tacocat.train.sb3.config import SB3Experiment


def model_metadata(config: SB3Experiment, timesteps: int) -> dict[str, Any]:
    from tacocat.game.observation import ObservationLayout
    from tacocat.game.ruleset import compile_rules

    rules = compile_rules(config.rules_config)
    return {
        "ruleset_hash": rules.hash,
        "rules": config.rules_config.canonical_dict(),
        "observation_size": ObservationLayout(rules).size,
        "n_actions": rules.codec.size,
        "algorithm": "MaskablePPO",
        "experiment": config.name,
        "seed": config.seed,
        "timesteps": timesteps,
        # the architecture lets `tacocat.agents.trained.load_model_file` rebuild the network without unpickling
        "policy": {"net_arch": list(config.algo.net_arch), "activation": config.algo.activation},
    }


def save_model(model: Any, path: Path, config: SB3Experiment) -> None:
    from tacocat.agents.trained import write_metadata

    model.save(path)
    write_metadata(path, model_metadata(config, int(model.num_timesteps)))
