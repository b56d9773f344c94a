"""The parts every experiment config shares, whatever its backend: the limits, the strict
base model, the opponents, the PPO hyperparameters, the evaluation and `ExperimentBase`.

Each backend's own fields sit in its own section, defined in its subpackage
(`tacocat.train.sb3.config`, `tacocat.train.rllib.config`, `tacocat.train.league.config`);
`tacocat.train.config` joins them into one config type, discriminated by `backend`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tacocat.game.config import RulesConfig

#: an experiment name is one path component of letters, digits, '_', '-' and '.', so that the
#: run directory stays inside the run root and the name is safe in agent specs
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"

# ---------------------------------------------------------------------------------------
# limits (docs/SECURITY.md): sizes a config may ask for, so that a typo fails at validation
# instead of running for minutes or exhausting memory
# ---------------------------------------------------------------------------------------
MAX_SEED = 2**32 - 1  # numpy's and SB3's seeding take 32-bit seeds
MAX_TOTAL_TIMESTEPS = 10**12
MAX_N_ENVS = 65_536  # games at once (SB3: env copies; league: rows of the batch)
MAX_N_STEPS = 65_536  # rollout length per env
MAX_ROLLOUT_STEPS = 2**24  # n_envs x n_steps, and RLlib's train_batch_size
MAX_N_EPOCHS = 1_000
MAX_LAYERS = 16  # hidden layers of net_arch
MAX_LAYER_WIDTH = 65_536
MAX_OPPONENTS = 64  # entries of opponents, eval.opponents and eval.final
MAX_DEAL_PAIRS = 1_000_000
MAX_WORKERS = 256  # eval.workers, torch_threads, RLlib's actors and CPUs per actor
MAX_SNAPSHOTS = 1_024  # league.snapshot_pool, league.snapshot_slots, selfplay.keep_latest
#: the league's estimated memory (`league_memory_bytes`) a config may need
MAX_LEAGUE_MEMORY_BYTES = 32 * 2**30
#: an experiment YAML (or a base it names) is read only up to this size
MAX_CONFIG_BYTES = 1 << 20
#: `base_config` chains at most this deep
MAX_BASE_DEPTH = 16
#: the folder of the shipped experiment configs: a `base_config` may point into it
CONFIGS_DIR = Path(__file__).resolve().parent / "configs"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, data: Any) -> Any:
        """Python's bool is an int and YAML reads `yes` as true: refuse `n_envs: true`."""
        if isinstance(data, dict):
            for name, value in data.items():
                field = cls.model_fields.get(name)
                if field is not None and isinstance(value, bool) and field.annotation is not bool:
                    raise ValueError(f"{name}: a boolean is not a valid value here (got {value!r})")
        return data


def _check_agent_spec(spec: str) -> str:
    """Build the agent once, so that a bad spec fails at validation, before any run directory."""
    from tacocat.agents.registry import make_agent

    make_agent(spec)
    return spec


class OpponentConfig(_Strict):
    agent: str = Field(description="agent spec for make_agent, e.g. 'counter' or 'search:simulations=32'")
    weight: float = Field(default=1.0, gt=0, le=1e6, description="relative sampling weight in the pool")

    _valid_agent = field_validator("agent")(_check_agent_spec)


class AlgoConfig(_Strict):
    """MaskablePPO hyperparameters (sb3-contrib names)."""

    learning_rate: float = Field(default=3e-4, gt=0)
    n_steps: int = Field(default=512, gt=0, le=MAX_N_STEPS, description="rollout length per env")
    batch_size: int = Field(
        default=256, ge=2, le=MAX_ROLLOUT_STEPS, description="minibatch size (>= 2: advantages are normalised)"
    )
    n_epochs: int = Field(default=10, gt=0, le=MAX_N_EPOCHS)
    gamma: float = Field(default=0.99, gt=0, le=1)
    gae_lambda: float = Field(default=0.95, gt=0, le=1)
    clip_range: float = Field(default=0.2, gt=0)
    ent_coef: float = Field(default=0.01, ge=0)
    vf_coef: float = Field(default=0.5, ge=0)
    max_grad_norm: float = Field(default=0.5, gt=0)
    net_arch: list[Annotated[int, Field(gt=0, le=MAX_LAYER_WIDTH)]] = Field(
        default_factory=lambda: [128, 128],
        min_length=1,
        max_length=MAX_LAYERS,
        description="hidden layer sizes (pi and vf)",
    )
    activation: Literal["tanh", "relu"] = "tanh"


class FinalOpponent(_Strict):
    agent: str
    _valid_agent = field_validator("agent")(_check_agent_spec)
    deal_pairs: int = Field(
        default=2000, gt=0, le=MAX_DEAL_PAIRS, description="duplicate deal pairs against this agent"
    )


class EvalConfig(_Strict):
    every: int = Field(default=50_000, gt=0, description="timesteps between evaluations during training")
    deal_pairs: int = Field(
        default=100, gt=0, le=MAX_DEAL_PAIRS, description="duplicate deal pairs per opponent per evaluation"
    )
    opponents: list[str] = Field(
        default_factory=lambda: ["random", "highcard", "planner", "counter"], max_length=MAX_OPPONENTS
    )
    seed: int = Field(
        default=12345, ge=0, le=MAX_SEED, description="deal seed of every evaluation (same deals each time)"
    )
    final: list[FinalOpponent] = Field(
        default_factory=lambda: (
            [FinalOpponent(agent=a) for a in ("random", "highcard", "planner", "counter")]
            + [FinalOpponent(agent="search", deal_pairs=300)]
        ),
        max_length=MAX_OPPONENTS,
        description="the evaluation after training (main job), against the whole ladder",
    )
    workers: int = Field(default=2, gt=0, le=MAX_WORKERS, description="worker processes of the final evaluation")
    nash_conv: bool = Field(
        default=False,
        strict=True,
        description="also the exact NashConv of the learner's policy at every evaluation, played "
        "greedily and by its action probabilities, side by side (exploitability.csv); the rules must be small enough "
        "to enumerate (a preset such as skirmish or jumbo, docs/EXPLOITABILITY.md), or the league's game a poker game",
    )

    @field_validator("opponents")
    @classmethod
    def _valid_opponents(cls, specs: list[str]) -> list[str]:
        for spec in specs:
            _check_agent_spec(spec)
        return specs


class ExperimentBase(_Strict):
    """The fields of every experiment; a backend's config (`SB3Experiment`, ...) adds its
    `backend` literal and its own section."""

    name: str = Field(
        pattern=NAME_PATTERN, description="experiment name, used in the run directory (letters, digits, _ - .)"
    )
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    total_timesteps: int = Field(gt=0, le=MAX_TOTAL_TIMESTEPS)
    n_envs: int = Field(
        default=4,
        gt=0,
        le=MAX_N_ENVS,
        description="games at once (sb3: env copies; league: rows "
        "of the batch; rllib: unused, see rllib.envs_per_env_runner)",
    )
    learner_seat: Literal["alternate", "random"] = "alternate"
    rules: dict[str, Any] = Field(default_factory=dict, description="RulesConfig overrides")
    opponents: list[OpponentConfig] = Field(
        default_factory=list,
        max_length=MAX_OPPONENTS,
        description="fixed opponents (at least one for sb3 and rllib; for league: JAX-ported heuristics, may be empty)",
    )
    algo: AlgoConfig = Field(default_factory=AlgoConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    checkpoint_every: int = Field(default=50_000, gt=0)
    run_root: str = "runs"

    @model_validator(mode="before")
    @classmethod
    def _fields_in_their_sections(cls, data: Any) -> Any:
        """Another backend's section is refused by name (rather than as an unknown key)."""
        from tacocat.train.backends import BACKENDS  # which imports this module's subclasses

        if isinstance(data, dict):
            backend = data.get("backend")
            for section in BACKENDS:  # each backend's section is named after it
                if data.get(section) is not None and section != backend:
                    raise ValueError(
                        f"the `{section}` section only applies with backend: {section} "
                        f"(this config's backend is {backend})"
                    )
            # an empty section of another backend (`league: null`) says nothing: dropped
            return {k: v for k, v in data.items() if not (k in BACKENDS and k != backend and v is None)}
        return data

    @field_validator("rules")
    @classmethod
    def _valid_rules(cls, rules: dict[str, Any]) -> dict[str, Any]:
        RulesConfig(**rules)  # raises a ValidationError naming the rules field
        return rules

    @model_validator(mode="after")
    def _models_fit_the_rules(self) -> ExperimentBase:
        """A trained opponent (`ppo:path=...`, `league:`, `rllib:`) must have been trained for these rules."""
        from tacocat.agents.registry import make_agent

        fields = [("opponents", o.agent) for o in self.opponents] + [("eval.opponents", a) for a in self.eval.opponents]
        fields += [("eval.final", f.agent) for f in self.eval.final]
        ruleset = self.rules_config.ruleset_hash()
        for field, spec in fields:
            if spec.split(":", 1)[0].strip() in ("ppo", "league", "rllib"):
                agent = make_agent(spec)
                try:
                    agent.check_ruleset(ruleset)  # type: ignore[attr-defined]  # network agents
                except ValueError as err:
                    raise ValueError(f"{field}: {err}") from None
        return self

    @model_validator(mode="after")
    def _exact_needs_a_small_game(self) -> ExperimentBase:
        """eval.nash_conv enumerates the game tree: refused here for rules far too large (the
        sampled estimate, under a second); the exact count comes before training starts."""
        if self.eval.nash_conv and self.game == "tacocat":  # a poker game's tree is OpenSpiel's, small
            from tacocat.analysis.store import cache_path, probe_enumerable

            if not cache_path(self.rules_config).exists():
                try:
                    probe_enumerable(self.rules_config)
                except ValueError as err:
                    raise ValueError(f"eval.nash_conv: {err}") from None
        return self

    def _needs_an_opponent(self) -> None:
        if not self.opponents:
            raise ValueError(f"opponents: backend {self.backend} needs at least one opponent")  # type: ignore[attr-defined]  # a mixin

    @property
    def game(self) -> str:
        """The game trained on: Tacocat, but for a league on a poker game (`league.game`)."""
        return "tacocat"

    @property
    def rules_config(self) -> RulesConfig:
        return RulesConfig(**self.rules)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)
