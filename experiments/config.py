"""The typed experiment config of `tacocat train` (one YAML file per experiment).

A file may build on another: `base_config: league.yaml` takes that experiment's values and
lays the file's own over them (`read_experiment`). Precedence: the base < the YAML file <
`--seed` < `--set key=value` overrides (dotted keys reach nested fields:
`--set algo.learning_rate=1e-3`). Unknown keys and wrong types are errors that name
the key. The resolved config is saved in every run directory, so a run reruns from it.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tacocat_env.config import RulesConfig

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
    from agents.registry import make_agent

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
    batch_size: int = Field(default=256, ge=2, le=MAX_ROLLOUT_STEPS,
                            description="minibatch size (>= 2: advantages are normalised)")
    n_epochs: int = Field(default=10, gt=0, le=MAX_N_EPOCHS)
    gamma: float = Field(default=0.99, gt=0, le=1)
    gae_lambda: float = Field(default=0.95, gt=0, le=1)
    clip_range: float = Field(default=0.2, gt=0)
    ent_coef: float = Field(default=0.01, ge=0)
    vf_coef: float = Field(default=0.5, ge=0)
    max_grad_norm: float = Field(default=0.5, gt=0)
    net_arch: list[Annotated[int, Field(gt=0, le=MAX_LAYER_WIDTH)]] = Field(
        default_factory=lambda: [128, 128], min_length=1, max_length=MAX_LAYERS,
        description="hidden layer sizes (pi and vf)")
    activation: Literal["tanh", "relu"] = "tanh"


class SelfPlayConfig(_Strict):
    snapshot_every: int = Field(gt=0, description="timesteps between snapshots of the learner")
    keep_latest: int = Field(default=5, gt=0, le=MAX_SNAPSHOTS, description="the pool keeps the latest K snapshots")
    weight: float = Field(default=1.0, gt=0, description="pool weight of each snapshot")


class FinalOpponent(_Strict):
    agent: str
    _valid_agent = field_validator("agent")(_check_agent_spec)
    deal_pairs: int = Field(default=2000, gt=0, le=MAX_DEAL_PAIRS, description="duplicate deal pairs against this agent")


class EvalConfig(_Strict):
    every: int = Field(default=50_000, gt=0, description="timesteps between evaluations during training")
    deal_pairs: int = Field(default=100, gt=0, le=MAX_DEAL_PAIRS,
                            description="duplicate deal pairs per opponent per evaluation")
    opponents: list[str] = Field(default_factory=lambda: ["random", "highcard", "planner", "counter"],
                                 max_length=MAX_OPPONENTS)
    seed: int = Field(default=12345, ge=0, le=MAX_SEED, description="deal seed of every evaluation (same deals each time)")
    final: list[FinalOpponent] = Field(
        default_factory=lambda: [FinalOpponent(agent=a) for a in ("random", "highcard", "planner", "counter")]
        + [FinalOpponent(agent="search", deal_pairs=300)], max_length=MAX_OPPONENTS,
        description="the evaluation after training (main job), against the whole ladder")
    workers: int = Field(default=2, gt=0, le=MAX_WORKERS, description="worker processes of the final evaluation")

    @field_validator("opponents")
    @classmethod
    def _valid_opponents(cls, specs: list[str]) -> list[str]:
        for spec in specs:
            _check_agent_spec(spec)
        return specs


class RllibConfig(_Strict):
    """Ray RLlib backend (PPO on RLlib's current API stack): resources and batch sizes.

    The PPO hyperparameters come from `algo` (same names as the SB3 backend); `n_steps`,
    `n_envs` and `vec_env` do not apply. docs/SCALING.md explains what scales.
    """

    address: str | None = Field(default=None, description="Ray cluster to join (host:port or 'auto'); "
                                "None starts a local Ray runtime. --address and RAY_ADDRESS override it")
    num_cpus: int | None = Field(default=None, gt=0, le=MAX_N_ENVS,
                                 description="CPUs of the local Ray runtime (default: all)")
    env_runners: int = Field(default=2, ge=0, le=MAX_WORKERS, description="env runner actors (0: sample in the driver)")
    envs_per_env_runner: int = Field(default=1, gt=0, le=MAX_N_ENVS)
    cpus_per_env_runner: float = Field(default=1.0, gt=0, le=MAX_WORKERS)
    learners: int = Field(default=0, ge=0, le=MAX_WORKERS, description="learner actors (0: learn in the driver)")
    gpus_per_learner: float = Field(default=0.0, ge=0, le=MAX_WORKERS)
    train_batch_size: int = Field(default=4000, gt=0, le=MAX_ROLLOUT_STEPS, description="env steps per training iteration")
    selfplay_fraction: float = Field(default=1.0, ge=0, le=1, description="share of episodes in which the "
                                     "learner plays both seats; the others are against `opponents`")


class LeagueConfig(_Strict):
    """League backend (jitted PPO on the batch engine, docs/LEAGUE.md): the opponents' mixture.

    The games of a batch are shared out by weight between the current policy (`selfplay_weight`),
    frozen snapshots of it (`snapshot_weight`, split into `snapshot_slots` blocks, each playing
    one snapshot drawn per iteration) and the JAX ports of the top-level `opponents` (each with
    its `weight`). `n_envs` games run at once, `algo.n_steps` steps each per iteration;
    `algo.batch_size` is the minibatch in env steps (both players' steps; the opponent's weigh 0).
    """

    selfplay_weight: float = Field(default=1.0, ge=0, le=1e6, description="share of games against the current policy")
    snapshot_weight: float = Field(default=0.0, ge=0, le=1e6, description="share of games against frozen snapshots")
    snapshot_every: int = Field(default=10, gt=0, description="iterations between snapshots of the learner")
    snapshot_pool: int = Field(default=8, gt=0, le=MAX_SNAPSHOTS, description="snapshots kept (the oldest is dropped)")
    snapshot_slots: int = Field(default=2, gt=0, le=MAX_SNAPSHOTS,
                                description="blocks of games playing snapshots, one snapshot each")
    sampling: Literal["uniform", "pfsp"] = Field(
        default="uniform", description="how a slot draws its snapshot: uniformly, or prioritized fictitious "
        "self-play (weight (1 - learner's win rate against it) ** pfsp_power)")
    pfsp_power: float = Field(default=2.0, ge=0, description="PFSP exponent: higher plays the hardest snapshots more")
    fast_compile: bool = Field(default=False, description="compile with XLA backend optimisation 0: "
                               "compiles several times faster, runs slower (smoke runs)")
    anneal_lr: bool = Field(default=False, description="decay algo.learning_rate linearly to 0 over "
                            "total_timesteps (CleanRL's anneal_lr)")
    privileged_critic: bool = Field(
        default=False, description="the critic, used only in training, also reads the opponent's observation "
        "(their hand included): an asymmetric actor-critic. The actor, the policy that plays and is exported, "
        "reads only its own observation (R7.3)")
    decision_share: float = Field(
        default=1.0, gt=0, le=1, description="the update's room for the learner's decisions, as a share of each "
        "minibatch's env steps: below 1 the update reads only the learner's decisions (the opponent's steps weigh "
        "0 anyway) and runs that much faster; a rollout with more decisions than the room drops the excess at "
        "random (progress.csv: decisions_dropped). 1: every env step, as before")


class ExperimentConfig(_Strict):
    name: str = Field(pattern=NAME_PATTERN,
                      description="experiment name, used in the run directory (letters, digits, _ - .)")
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    total_timesteps: int = Field(gt=0, le=MAX_TOTAL_TIMESTEPS)
    n_envs: int = Field(default=4, gt=0, le=MAX_N_ENVS)
    vec_env: Literal["dummy", "subproc"] = "dummy"
    device: str = "cpu"
    torch_threads: int = Field(default=1, gt=0, le=MAX_WORKERS)
    learner_seat: Literal["alternate", "random"] = "alternate"
    rules: dict[str, Any] = Field(default_factory=dict, description="RulesConfig overrides")
    opponents: list[OpponentConfig] = Field(default_factory=list, max_length=MAX_OPPONENTS, description="fixed "
                                            "opponents (at least one for sb3 and rllib; for league: JAX-ported "
                                            "heuristics, may be empty)")
    selfplay: SelfPlayConfig | None = None
    algo: AlgoConfig = Field(default_factory=AlgoConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    checkpoint_every: int = Field(default=50_000, gt=0)
    run_root: str = "runs"
    backend: Literal["sb3", "rllib", "league"] = Field(
        default="sb3", description="sb3: MaskablePPO in one process; rllib: PPO on Ray RLlib (needs the `rllib` "
        "section); league: jitted PPO on the batch engine against a league (needs the `league` section)")
    rllib: RllibConfig | None = None
    league: LeagueConfig | None = None

    @field_validator("rules")
    @classmethod
    def _valid_rules(cls, rules: dict[str, Any]) -> dict[str, Any]:
        RulesConfig(**rules)  # raises a ValidationError naming the rules field
        return rules

    @model_validator(mode="after")
    def _models_fit_the_rules(self) -> ExperimentConfig:
        """A trained opponent (`ppo:path=...`) must have been trained for these rules."""
        from agents.registry import make_agent

        fields = [("opponents", o.agent) for o in self.opponents] + [("eval.opponents", a) for a in self.eval.opponents]
        fields += [("eval.final", f.agent) for f in self.eval.final]
        ruleset = self.rules_config.ruleset_hash()
        for field, spec in fields:
            if spec.split(":", 1)[0].strip() in ("ppo", "league"):
                agent = make_agent(spec)
                try:
                    agent.check_ruleset(ruleset)  # type: ignore[attr-defined]
                except ValueError as err:
                    raise ValueError(f"{field}: {err}") from None
        return self

    @model_validator(mode="after")
    def _rollout_fits(self) -> ExperimentConfig:
        rollout = self.n_envs * self.algo.n_steps
        if self.backend != "rllib" and rollout > MAX_ROLLOUT_STEPS:
            raise ValueError(f"n_envs x algo.n_steps = {rollout:,} env steps per rollout is over the limit of "
                             f"{MAX_ROLLOUT_STEPS:,}")
        return self

    @model_validator(mode="after")
    def _no_minibatch_of_one(self) -> ExperimentConfig:
        if self.backend != "sb3":  # (RLlib's batches are rllib.train_batch_size, checked below)
            return self
        rollout = self.algo.n_steps * self.n_envs
        if rollout % self.algo.batch_size == 1:
            raise ValueError(
                f"algo.batch_size: a rollout of n_steps x n_envs = {rollout} steps leaves a last minibatch "
                f"of one step with batch_size {self.algo.batch_size} (its normalised advantage is NaN)"
            )
        return self

    @model_validator(mode="after")
    def _backend_section(self) -> ExperimentConfig:
        if self.backend == "rllib" and self.rllib is None:
            raise ValueError("backend 'rllib' needs an `rllib` section (e.g. rllib: {env_runners: 2})")
        if self.backend != "rllib" and self.rllib is not None:
            raise ValueError("the `rllib` section only applies with backend: rllib")
        if self.rllib is not None and self.algo.batch_size > self.rllib.train_batch_size:
            raise ValueError(f"algo.batch_size ({self.algo.batch_size}) is the PPO minibatch and must not exceed "
                             f"rllib.train_batch_size ({self.rllib.train_batch_size})")
        return self

    @model_validator(mode="after")
    def _league_fits(self) -> ExperimentConfig:
        """backend league: a `league` section, opponents with a JAX port, a batch that splits
        into whole minibatches and gives every opponent of the mixture at least one game."""
        if self.backend != "league":
            if self.league is not None:
                raise ValueError("the `league` section only applies with backend: league")
            if not self.opponents:
                raise ValueError(f"opponents: backend {self.backend} needs at least one opponent")
            return self
        from experiments.league.mixture import check_ported, split_rows

        if self.league is None:
            raise ValueError("backend 'league' needs a `league` section (e.g. league: {selfplay_weight: 1.0})")
        if self.selfplay is not None:
            raise ValueError("the `selfplay` section is SB3's; with backend: league, snapshots are set in `league` "
                             "(snapshot_weight, snapshot_every, snapshot_pool)")
        for i, opponent in enumerate(self.opponents):
            try:
                check_ported(opponent.agent)
            except ValueError as err:
                raise ValueError(f"opponents.{i}.agent: {err}") from None
        rollout = self.n_envs * self.algo.n_steps
        if rollout % self.algo.batch_size:
            raise ValueError(f"algo.batch_size: a rollout of n_envs x n_steps = {rollout} steps does not split into "
                             f"minibatches of {self.algo.batch_size} (choose a divisor of {rollout})")
        league = self.league
        if league.decision_share < 1 and math.ceil(league.decision_share * self.algo.batch_size) < 2:
            raise ValueError(f"league.decision_share: {league.decision_share} x algo.batch_size "
                             f"{self.algo.batch_size} leaves minibatches of fewer than 2 decisions "
                             "(their normalised advantage is NaN)")
        split_rows(self.n_envs, league.selfplay_weight, league.snapshot_weight, league.snapshot_slots,
                   [o.weight for o in self.opponents])
        needed = league_memory_bytes(self)
        if needed > MAX_LEAGUE_MEMORY_BYTES:
            raise ValueError(f"the league needs about {needed / 2**30:.1f} GiB for its rollout, environments and "
                             f"parameters (n_envs {self.n_envs}, algo.n_steps {self.algo.n_steps}, league.snapshot_pool "
                             f"{league.snapshot_pool}, algo.net_arch {self.algo.net_arch}), over the limit of "
                             f"{MAX_LEAGUE_MEMORY_BYTES / 2**30:.0f} GiB")
        return self

    @property
    def rules_config(self) -> RulesConfig:
        return RulesConfig(**self.rules)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)


def league_memory_bytes(config: ExperimentConfig) -> int:
    """What the league's jitted iteration (experiments/league/ppo.py) holds, in bytes, checked at
    validation, before anything compiles: the rollout (`n_envs x n_steps` transitions: the scaled
    observation and the critic's extra input, the mask, four 4-byte and two 1-byte fields, and the
    advantage and return computed from them), the environments (each row's observation and mask,
    old and new state) and the parameters (actor and critic: the learner, its gradient, Adam's two
    moments and `snapshot_pool` frozen copies). XLA's working memory comes on top of it."""
    from tacocat_env.observation import ObservationLayout
    from tacocat_env.ruleset import compile_rules

    league = config.league
    assert league is not None
    rules = compile_rules(config.rules_config)
    obs, actions = ObservationLayout(rules).size, rules.codec.size
    critic_in = 2 * obs if league.privileged_critic else obs
    transition = 4 * critic_in + actions + 4 * 4 + 2 + 2 * 4
    rollout = config.n_envs * config.algo.n_steps * transition
    environments = 2 * config.n_envs * (4 * obs + actions)

    def mlp(sizes: list[int]) -> int:
        return sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))

    hidden = list(config.algo.net_arch)
    params = mlp([obs, *hidden, actions]) + mlp([critic_in, *hidden, 1])
    return rollout + environments + 4 * params * (4 + league.snapshot_pool)


def one_line(err: BaseException | str) -> str:
    """An error message on one line (pydantic's multi-line reports joined with '; ')."""
    from pydantic import ValidationError

    if isinstance(err, ValidationError):
        parts = []
        for e in err.errors():
            field = ".".join(str(p) for p in e["loc"])
            message = e["msg"].removeprefix("Value error, ")
            parts.append(f"{field}: {message}" if field else message)
        return f"invalid {err.title}: " + "; ".join(parts)
    text = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
    return text or type(err).__name__


def parse_override(item: str) -> tuple[list[str], Any]:
    """'algo.learning_rate=1e-3' -> (['algo', 'learning_rate'], 0.001); values are YAML."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"override {item!r} must look like key=value (e.g. algo.learning_rate=1e-3)")
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError as err:
        raise ValueError(f"override {item!r}: the value is not valid YAML ({' '.join(str(err).split())})") from None
    return key.strip().split("."), parsed


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """A copy of `data` with dotted-key overrides applied (validation happens afterwards)."""
    out = yaml.safe_load(yaml.safe_dump(data))  # deep copy of plain data
    for item in overrides:
        path, value = parse_override(item)
        set_field(out, path, value, f"override {item!r}")
    return out


def set_field(data: dict[str, Any], path: list[str], value: Any, what: str) -> None:
    """Set the field at a dotted `path` of plain config data in place (sections are created);
    `what` names the setting in the error when a part of the path is not a section."""
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ValueError(f"{what}: {part!r} is not a section")
        node = child
    node[path[-1]] = value


#: the key of an experiment YAML that names the experiment it builds on (see `read_experiment`)
BASE_KEY = "base_config"


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes` laid over it: sections (mappings) merge key by key, any other
    value (a number, a list of opponents, ...) replaces the base's."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def read_small_file(path: Path, limit: int, what: str, error: type[ValueError] = ValueError) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; else `error` naming the
    file. The file is opened without blocking and checked before anything is read, so a FIFO, a
    device such as /dev/zero or a folder is refused at once."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise error(f"{path}: cannot read {what} ({err.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path}: {what} must be a regular file")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    finally:
        os.close(fd)
    if max(info.st_size, len(data)) > limit:
        raise error(f"{path}: {what} is over the limit of {limit:,} bytes")
    return data


class _NoAliasLoader(yaml.SafeLoader):
    """A safe loader without anchors and aliases (`*a` repeated in `*b` ... grows exponentially
    when the config is copied or validated); an experiment config has no use for them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in an experiment config",
                                              mark)
        return super().compose_node(parent, index)


def yaml_problem(err: yaml.YAMLError) -> str:
    """Where and what a YAML error is, without the snippet of the file PyYAML quotes (the file
    may not be a config at all)."""
    mark, problem = getattr(err, "problem_mark", None), getattr(err, "problem", None)
    if mark is None or problem is None:
        return "cannot be parsed"
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def parse_config_file(path: Path, what: str = "the experiment config",
                      error: type[ValueError] = ValueError) -> dict[str, Any]:
    """A config YAML file (`read_small_file`, at most MAX_CONFIG_BYTES) as a mapping; `error`
    naming the file else. No message quotes the file."""
    data = read_small_file(path, MAX_CONFIG_BYTES, what, error)
    try:
        parsed = yaml.load(data.decode("utf-8"), Loader=_NoAliasLoader)  # noqa: S506 (a safe loader)
    except UnicodeDecodeError:
        raise error(f"{path}: {what} is not UTF-8 text") from None
    except yaml.YAMLError as err:
        raise error(f"{path}: not valid YAML ({yaml_problem(err)})") from None
    except RecursionError:
        raise error(f"{path}: {what} nests too deeply") from None
    if not isinstance(parsed, dict):
        raise error(f"{path}: {what} must be a YAML mapping")
    return parsed


def _base_path(path: Path, base: Any) -> Path:
    """The file a `base_config` names: a .yaml/.yml file (relative to `path`'s folder) that,
    symlinks followed, lies in the shipped configs' folder or in `path`'s own folder."""
    if not isinstance(base, str) or not base.strip():
        raise ValueError(f"{path}: {BASE_KEY} must name an experiment YAML, got a {type(base).__name__}")
    base_path = path.parent / base
    if base_path.suffix not in (".yaml", ".yml"):
        raise ValueError(f"{path}: {BASE_KEY} must name a .yaml or .yml file")
    target, folders = base_path.resolve(), (CONFIGS_DIR, path.parent.resolve())
    if not any(target.is_relative_to(folder) for folder in folders):
        raise ValueError(f"{path}: {BASE_KEY} must lie in {CONFIGS_DIR} or in the folder of the config that names "
                         f"it ({path.parent}); {base_path} is elsewhere (symlinks followed)")
    return base_path


def read_experiment(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """An experiment YAML as plain data, unvalidated. A file with `base_config: other.yaml`
    (relative to the file; `_base_path` says where it may lie) states only what differs from
    that experiment: its values are laid over the base's (`merged`), bases of bases included
    (at most MAX_BASE_DEPTH); a cycle is an error."""
    path = Path(path)
    data = parse_config_file(path)
    base = data.pop(BASE_KEY, None)
    if base is None:
        return data
    base_path = _base_path(path, base)
    chain = (*_seen, path.resolve())
    if base_path.resolve() in chain:
        raise ValueError(f"{path}: {BASE_KEY} {base!r} makes a cycle ({' -> '.join(p.name for p in chain)} -> {base_path.name})")
    if len(chain) >= MAX_BASE_DEPTH:
        raise ValueError(f"{path}: {BASE_KEY} chains more than {MAX_BASE_DEPTH} configs deep")
    return merged(read_experiment(base_path, chain), data)


def load_experiment(path: str | Path, seed: int | None = None, overrides: list[str] | None = None) -> ExperimentConfig:
    """Read a YAML experiment (`read_experiment`: with its base's values, if it names one),
    then apply `seed` and `--set` overrides, then validate."""
    data = read_experiment(path)
    if seed is not None:
        data["seed"] = seed
    return ExperimentConfig(**apply_overrides(data, overrides or []))
