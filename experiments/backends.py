"""Which trainer a config's `backend` selects, and the agent spec of the policy it leaves.

One place for the dispatch that `tacocat train`, the main job and `benchmarks.regenerate`
share: `sb3` (MaskablePPO, experiments.train), `rllib` (Ray RLlib, experiments.rllib_train),
`league` (jitted PPO on the batch engine, experiments.league.train). The trainers are imported
only when chosen, so a config that needs no JAX or Ray does not import them.
"""

from __future__ import annotations

from pathlib import Path

from experiments.config import ExperimentConfig


def train_backend(config: ExperimentConfig | None = None, *, resume: Path | None = None,
                  progress: bool = True, address: str | None = None) -> tuple[Path, str | None]:
    """Train `config` (or resume the run in `resume`) with its backend; the run directory and
    the final policy's agent spec (None for sb3: `experiments.final_eval.evaluate_run` plays
    its final_model.zip)."""
    from experiments.run_dir import resume_config

    if resume is not None:
        backend = resume_config(resume).backend
    elif config is not None:
        backend = config.backend
    else:
        raise ValueError("train_backend() needs a config or resume=RUN_DIR")
    if backend == "rllib":
        from experiments.rllib_train import POLICY_FILE, train_rllib

        run_dir = train_rllib(config, resume=resume, address=address, progress=progress)
        return run_dir, f"rllib:path={run_dir / POLICY_FILE}"
    if backend == "league":
        from experiments.league.train import POLICY_FILE, train_league

        run_dir = train_league(config, resume=resume, progress=progress)
        return run_dir, f"league:path={run_dir / POLICY_FILE}"
    from experiments.train import train

    return train(config, resume=resume, progress=progress), None
