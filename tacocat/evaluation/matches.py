"""Head-to-head evaluation of two agents in the duplicate format.

Duplicate format. A match of `games` *deal pairs* plays 2 * `games` games. Deal k has a deal
seed derived from (match seed, k) by `deal_seed`; it is played twice, seats swapped:

* game 2k:   agent A is player_0, agent B is player_1;
* game 2k+1: agent B is player_0, agent A is player_1;

both games start with `new_game(config, deal_seed)`. The engine reshuffles the whole deck
from its own generator at every round start, so the k-th round of both games deals exactly
the same hands to the same seats (common random numbers): whatever luck the cards bring to a
seat, each agent gets it once. Each agent draws its own randomness for deal k from
`agent_rngs(seed, k)` (A from the first generator, B from the second), fresh and identical in
both games of the pair, independent of the deal's generator.

Every game's result depends only on (seed, k, agents, config), so the result of a match is
the same for any number of worker processes: deals are played in chunks and merged in deal
order. Agents must draw all their randomness from the generator given to `Agent.reset` and
must not carry state from one game to the next (the agent contract).

Worker processes start with the 'forkserver' method (safe when torch or other threaded
libraries are loaded), so a script that calls `match(..., workers=2)` needs the usual
`if __name__ == "__main__":` guard; the `tacocat` CLI, notebooks and pytest need nothing.

The win rate of A counts a draw (a truncated game, R1.5) as half a win. Beside it, the mean
*return* of A per game (+1 win, -1 loss, 0 truncation, plus any round shaping, R1: the game's
returns as `tacocat.game.engine.shaped_returns` and the exact tools count them) with its paired
interval; on a one-round preset every game is truncated, so the win rate is 0.5 by construction
and the return is the measure. With a `Reduction` (`reduction=`: a value file and its options),
each game's return is also estimated with variance reduction (`tacocat.evaluation.variance`,
AIVAT): unbiased, and its
paired interval is narrower when the value function is good; both are reported. Its primary 95%
interval (`ci_low`, `ci_high`) is on the deal-pair unit: a Student t interval over the
per-pair mean scores (`tacocat.evaluation.stats.paired_interval`), since the two games of a pair share
their cards and are not independent. The Wilson score interval over the 2 * `games` games
(`wilson_low`, `wilson_high`), which treats the games as independent, is kept as a secondary
figure.
"""

from __future__ import annotations

import copy
import math
import multiprocessing
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from tacocat.agents.base import Agent
from tacocat.agents.registry import make_agent
from tacocat.evaluation.arena import GameRecord, agent_rngs, play_game
from tacocat.evaluation.stats import mean_interval, paired_interval, wilson_interval
from tacocat.evaluation.variance import AIVAT, Reduction, ValueNet
from tacocat.game.config import RulesConfig, make_config

AgentLike = str | Agent


def deal_seed(seed: int, deal: int) -> int:
    """The engine seed of deal `deal` of a match seeded `seed` (a 63-bit integer)."""
    words = np.random.SeedSequence([int(seed), int(deal), 0]).generate_state(2, dtype=np.uint32)
    return int((int(words[0]) << 31) ^ int(words[1]))


def agent_spec(agent: AgentLike) -> str:
    """The spec string of an agent given by spec or by instance: the spec `make_agent` built it
    from (parameters included), else its registry name."""
    if isinstance(agent, str):
        return agent
    return agent.spec or type(agent).name or type(agent).__name__


@dataclass
class GameOutcome:
    """One game of a deal pair, from the seats' point of view."""

    winner: int | None  # seat of the winner, None for a draw (truncated game)
    length: int  # actions
    rounds: int
    truncated: bool
    #: player_0's return (+1/-1/0 plus round shaping) and its variance-reduced estimate (None
    #: without a value file)
    return0: float = 0.0
    reduced0: float | None = None


@dataclass
class DealResult:
    """Both games of one deal: `games[0]` has A in seat 0, `games[1]` has A in seat 1."""

    deal: int
    deal_seed: int
    games: tuple[GameOutcome, GameOutcome]
    records: tuple[GameRecord, GameRecord] | None = None

    def a_scores(self) -> tuple[float, float]:
        """Points of agent A in each game (1 win, 0.5 draw, 0 loss)."""
        out = []
        for a_seat, game in enumerate(self.games):
            out.append(0.5 if game.winner is None else float(game.winner == a_seat))
        return out[0], out[1]

    def a_returns(self) -> tuple[float, float]:
        """Agent A's return in each game."""
        return self.games[0].return0, -self.games[1].return0

    def a_reduced(self) -> tuple[float, float] | None:
        """Agent A's variance-reduced return in each game (None without a value file)."""
        first, second = self.games[0].reduced0, self.games[1].reduced0
        return None if first is None or second is None else (first, -second)


@dataclass
class WLD:
    """Wins, losses, draws of one agent."""

    wins: int = 0
    losses: int = 0
    draws: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.losses + self.draws

    @property
    def score(self) -> float:
        """Points: wins + draws / 2."""
        return self.wins + 0.5 * self.draws

    def mirrored(self) -> WLD:
        """The same games seen from the opponent."""
        return WLD(self.losses, self.wins, self.draws)

    def __add__(self, other: WLD) -> WLD:
        return WLD(self.wins + other.wins, self.losses + other.losses, self.draws + other.draws)


def speed_text(games_per_s: float) -> str:
    """`games_per_s` to three significant digits: "1,234 games/s", "2.5 games/s", or, below one
    game per second, "3.23 s/game"; "too fast to time" for a match timed at 0 s (infinite)."""
    if math.isinf(games_per_s):
        return "too fast to time"
    if games_per_s >= 1:
        return f"{_three_digits(games_per_s)} games/s"
    return f"{_three_digits(1 / games_per_s)} s/game"


def _three_digits(x: float) -> str:
    """A positive number to three significant digits, without an exponent (1,234 as 1,234)."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


@dataclass
class MatchResult:
    """The result of a duplicate match between agents A and B.

    `games` is the number of deal pairs; `n_games` = 2 * games were played. `a_seat0` /
    `a_seat1` are A's wins, losses and draws when A sat in seat 0 / seat 1 (B's are the
    mirror). `win_rate_a` counts draws as half a win; `ci_low`/`ci_high` is its primary 95%
    interval, paired over deal pairs; `wilson_low`/`wilson_high` the secondary Wilson
    interval over games. `deal_scores[k]` = A's points in the two games of deal k (A in seat 0, A in seat 1).
    `mean_return_a` is A's mean return per game with its paired interval `return_ci`; with a
    value file, `reduced_return_a` / `reduced_ci` are the variance-reduced estimate of the same
    expectation; `deal_returns` / `deal_reduced` are the per-deal-pair means.
    """

    agent_a: str
    agent_b: str
    games: int
    seed: int
    ruleset_hash: str
    rules: dict[str, Any]
    a_seat0: WLD
    a_seat1: WLD
    win_rate_a: float
    ci_low: float
    ci_high: float
    wilson_low: float
    wilson_high: float
    mean_length: float
    mean_rounds: float
    truncated: int
    wall_s: float
    games_per_s: float
    workers: int
    deal_scores: list[tuple[float, float]] = field(default_factory=list)
    mean_return_a: float = 0.0
    return_ci: tuple[float, float] = (0.0, 0.0)
    reduced_return_a: float | None = None
    reduced_ci: tuple[float, float] | None = None
    reduction: Reduction | None = None
    deal_returns: list[float] = field(default_factory=list)
    deal_reduced: list[float] | None = None
    #: every game played (in order 2k, 2k+1), when the match was asked to keep them
    records: list[GameRecord] | None = field(default=None, repr=False)

    @property
    def n_games(self) -> int:
        return 2 * self.games

    @property
    def speed(self) -> str:
        """The match's speed in words, to three significant digits: games per second, or
        seconds per game below one game per second."""
        return speed_text(self.games_per_s)

    @property
    def a_total(self) -> WLD:
        return self.a_seat0 + self.a_seat1

    @property
    def b_total(self) -> WLD:
        return self.a_total.mirrored()

    @property
    def wins_a(self) -> int:
        return self.a_total.wins

    @property
    def wins_b(self) -> int:
        return self.a_total.losses

    @property
    def draws(self) -> int:
        return self.a_total.draws

    def per_agent(self) -> dict[str, dict[str, dict[str, int]]]:
        """{"A": {"total"|"player_0"|"player_1": {wins, losses, draws}}, "B": ...}."""
        a = {"total": self.a_total, "player_0": self.a_seat0, "player_1": self.a_seat1}
        b = {"total": self.b_total, "player_0": self.a_seat1.mirrored(), "player_1": self.a_seat0.mirrored()}
        return {
            "A": {k: asdict(v) for k, v in a.items()},
            "B": {k: asdict(v) for k, v in b.items()},
        }

    def seat_pairs(self) -> list[tuple[str, str]]:
        """(player_0 spec, player_1 spec) of every game, in game order 2k, 2k+1."""
        return [(self.agent_a, self.agent_b), (self.agent_b, self.agent_a)] * self.games

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (without the game records)."""
        return {
            "format": "duplicate: `games` deal pairs, each dealt game played twice with seats swapped",
            "agent_a": self.agent_a,
            "agent_b": self.agent_b,
            "games": self.games,
            "n_games": self.n_games,
            "seed": self.seed,
            "ruleset_hash": self.ruleset_hash,
            "rules": self.rules,
            "wins_a": self.wins_a,
            "wins_b": self.wins_b,
            "draws": self.draws,
            "per_agent": self.per_agent(),
            "win_rate_a": self.win_rate_a,
            "win_rate_a_note": "draws count as half a win",
            "ci95": [self.ci_low, self.ci_high],
            "ci_method": "paired: Student t interval over the per-deal-pair mean scores (the deal pair is the unit)",
            "ci95_wilson": [self.wilson_low, self.wilson_high],
            "ci95_wilson_method": "Wilson score interval over all games (treats the games as independent)",
            "mean_length": self.mean_length,
            "mean_rounds": self.mean_rounds,
            "truncated": self.truncated,
            "wall_s": self.wall_s,
            "games_per_s": self.games_per_s,
            "workers": self.workers,
            "deal_scores": [list(s) for s in self.deal_scores],
            "mean_return_a": self.mean_return_a,
            "return_ci95": list(self.return_ci),
            "return_note": "A's return per game (+1 win, -1 loss, 0 truncation, plus round shaping); "
            "paired Student t interval over the deal pairs' mean returns",
            "reduced_return_a": self.reduced_return_a,
            "reduced_ci95": None if self.reduced_ci is None else list(self.reduced_ci),
            "reduction": None if self.reduction is None else self.reduction.to_dict(),
            "reduced_note": "variance-reduced (AIVAT) estimate of the same expected return; "
            "paired Student t interval over deal pairs",
            "variance_ratio": self.variance_ratio(),
        }

    def variance_ratio(self) -> float | None:
        """The plain per-deal-pair return variance over the reduced one: how many times fewer
        deal pairs the reduced estimate needs for the same interval width (None without one)."""
        if self.deal_reduced is None or len(self.deal_returns) < 2:
            return None
        reduced = float(np.var(self.deal_reduced, ddof=1))
        plain = float(np.var(self.deal_returns, ddof=1))
        return plain / reduced if reduced > 0 else float("inf")


# ---------------------------------------------------------------------------------------
# playing deals
# ---------------------------------------------------------------------------------------
def _build(agent: AgentLike) -> Agent:
    return make_agent(agent) if isinstance(agent, str) else agent


def play_deal(
    agent_a: Agent,
    agent_b: Agent,
    seed: int,
    deal: int,
    config: RulesConfig,
    keep_records: bool = False,
    reducer: AIVAT | None = None,
) -> DealResult:
    """Play deal `deal` of a match seeded `seed` twice, seats swapped (see module docstring);
    with `reducer`, each game's return is also estimated with variance reduction."""
    dseed = deal_seed(seed, deal)

    def seated_generators(a_seat: int) -> tuple[np.random.Generator, np.random.Generator]:
        """Fresh, identical streams in both games, player_0's first."""
        gen_a, gen_b = agent_rngs(seed, deal)
        return (gen_a, gen_b) if a_seat == 0 else (gen_b, gen_a)

    outcomes = []
    records = []
    for a_seat in (0, 1):
        agents = (agent_a, agent_b) if a_seat == 0 else (agent_b, agent_a)
        gens = seated_generators(a_seat)
        record = play_game(agents, dseed, config=config, agent_generators=gens, keep_events=keep_records)
        return0 = record.returns[0]
        reduced0 = (  # the streams again, as the game began, for replayed rollouts
            None
            if reducer is None
            else reducer.estimate(dseed, record.actions, agents, generators=seated_generators(a_seat))[1]
        )
        outcomes.append(GameOutcome(record.winner, record.length, record.rounds, record.truncated, return0, reduced0))
        records.append(record)
    return DealResult(deal, dseed, (outcomes[0], outcomes[1]), (records[0], records[1]) if keep_records else None)


@dataclass(frozen=True)
class DealChunk:
    """A unit of work for a worker process: some deals of one pairing."""

    key: Any
    agent_a: str
    agent_b: str
    seed: int
    deals: tuple[int, ...]
    config: RulesConfig
    keep_records: bool
    reduction: Reduction | None = None


def reducer_for(reduction: Reduction | None, config: RulesConfig) -> AIVAT | None:
    """The variance-reduced estimator of `reduction` for games under `config` (its value file
    checked: one-line `tacocat.evaluation.variance.ValueFileError` otherwise), None without one."""
    return None if reduction is None else reduction.estimator(config)


def _play_chunk(chunk: DealChunk) -> tuple[Any, list[DealResult]]:
    a = make_agent(chunk.agent_a)
    b = make_agent(chunk.agent_b)
    reducer = reducer_for(chunk.reduction, chunk.config)
    return chunk.key, [play_deal(a, b, chunk.seed, k, chunk.config, chunk.keep_records, reducer) for k in chunk.deals]


def split_deals(deals: int, workers: int) -> list[tuple[int, ...]]:
    """Deal indices 0..deals-1 in chunks sized for `workers` processes (at most 50 deals each)."""
    size = max(1, min(50, math.ceil(deals / (4 * workers))))
    return [tuple(range(start, min(deals, start + size))) for start in range(0, deals, size)]


def mp_context() -> multiprocessing.context.BaseContext:
    """The process start method of worker pools: 'forkserver' where available (safe with
    threads, e.g. torch), else the platform default."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else None)


def run_chunks(
    chunks: Sequence[DealChunk],
    workers: int,
    progress: bool | tqdm = True,
    desc: str = "games",
) -> dict[Any, list[DealResult]]:
    """Play chunks in `workers` processes; results per key, in deal order."""
    total = sum(2 * len(c.deals) for c in chunks)
    bar = (
        progress
        if isinstance(progress, tqdm)
        else tqdm(total=total, unit="game", desc=desc, disable=not progress, leave=False)
    )
    out: dict[Any, list[DealResult]] = {}
    try:
        if workers <= 1:
            for chunk in chunks:
                key, results = _play_chunk(chunk)
                out.setdefault(key, []).extend(results)
                bar.update(2 * len(chunk.deals))
        else:
            with ProcessPoolExecutor(max_workers=workers, mp_context=mp_context()) as pool:
                futures = [pool.submit(_play_chunk, c) for c in chunks]
                for future in as_completed(futures):
                    key, results = future.result()
                    out.setdefault(key, []).extend(results)
                    bar.update(2 * len(results))
    finally:
        if bar is not progress:
            bar.close()
    for results in out.values():
        results.sort(key=lambda r: r.deal)
    return out


def summarize(
    agent_a: str,
    agent_b: str,
    seed: int,
    config: RulesConfig,
    deals: Sequence[DealResult],
    wall_s: float,
    workers: int,
    keep_records: bool = False,
    reduction: Reduction | None = None,
) -> MatchResult:
    """A MatchResult from the deal results of one pairing (in deal order)."""
    seat = [WLD(), WLD()]
    lengths: list[int] = []
    rounds: list[int] = []
    truncated = 0
    for deal in deals:
        for a_seat, game in enumerate(deal.games):
            if game.winner is None:
                seat[a_seat].draws += 1
            elif game.winner == a_seat:
                seat[a_seat].wins += 1
            else:
                seat[a_seat].losses += 1
            lengths.append(game.length)
            rounds.append(game.rounds)
            truncated += game.truncated
    n = 2 * len(deals)
    score = seat[0].score + seat[1].score
    wilson_low, wilson_high = wilson_interval(score, n)
    pair_scores = [sum(d.a_scores()) / 2.0 for d in deals]
    low, high = paired_interval(pair_scores)
    deal_returns = [sum(d.a_returns()) / 2.0 for d in deals]
    mean_return, *return_ci = mean_interval(deal_returns)
    reduced = [d.a_reduced() for d in deals]
    deal_reduced = [sum(r) / 2.0 for r in reduced if r is not None]
    reduced_stats = mean_interval(deal_reduced) if deals and len(deal_reduced) == len(deals) else None
    records = None
    if keep_records:
        records = [r for d in deals for r in (d.records or ())]
    return MatchResult(
        agent_a=agent_a,
        agent_b=agent_b,
        games=len(deals),
        seed=seed,
        ruleset_hash=config.ruleset_hash(),
        rules=config.canonical_dict(),
        a_seat0=seat[0],
        a_seat1=seat[1],
        win_rate_a=score / n if n else float("nan"),
        ci_low=low,
        ci_high=high,
        wilson_low=wilson_low,
        wilson_high=wilson_high,
        mean_length=float(np.mean(lengths)) if lengths else 0.0,
        mean_rounds=float(np.mean(rounds)) if rounds else 0.0,
        truncated=truncated,
        wall_s=wall_s,
        games_per_s=n / wall_s if wall_s > 0 else float("inf"),
        workers=workers,
        deal_scores=[d.a_scores() for d in deals],
        mean_return_a=mean_return,
        return_ci=(return_ci[0], return_ci[1]),
        reduced_return_a=None if reduced_stats is None else reduced_stats[0],
        reduced_ci=None if reduced_stats is None else (reduced_stats[1], reduced_stats[2]),
        reduction=reduction if reduced_stats is not None else None,
        deal_returns=deal_returns,
        deal_reduced=deal_reduced if reduced_stats is not None else None,
        records=records,
    )


def match(
    agent_a: AgentLike,
    agent_b: AgentLike,
    deal_pairs: int,
    seed: int,
    workers: int = 1,
    config: RulesConfig | dict[str, Any] | str | None = None,
    progress: bool = True,
    keep_records: bool = False,
    reduction: Reduction | None = None,
) -> MatchResult:
    """A duplicate match: `deal_pairs` deal pairs (2 * deal_pairs games), seats swapped in each pair.

    Agents are given by spec string ("search:simulations=200") or, with workers=1 only, by
    instance. `config`: a RulesConfig, a mapping, a YAML path or None (defaults).
    `keep_records`: keep every game's `GameRecord` (actions and public events) in `MatchResult.records`.
    `reduction`: every game's return is also estimated with variance reduction
    (`tacocat.evaluation.variance.Reduction`: a value file for these rules and the estimator's
    options; refused with one line before any game if the file was trained for other rules,
    another feature size or, seated, another pairing). The result is identical for any
    `workers` (see the module docstring).
    """
    if deal_pairs < 1:
        raise ValueError(f"deal_pairs must be >= 1, got {deal_pairs}")
    cfg = config if isinstance(config, RulesConfig) else make_config(config)
    reducer = reducer_for(reduction, cfg)
    spec_a, spec_b = agent_spec(agent_a), agent_spec(agent_b)
    if reducer is not None and isinstance(reducer.value, ValueNet):  # a seated file: this pairing's, before any game
        reducer.value.for_seating((spec_a, spec_b))
    start = time.perf_counter()
    if workers > 1:
        for agent in (agent_a, agent_b):
            if not isinstance(agent, str):
                raise ValueError(
                    f"with workers={workers} agents must be given as spec strings (worker processes "
                    f"rebuild them with make_agent), got an instance {agent!r}"
                )
        chunks = [
            DealChunk("match", spec_a, spec_b, seed, deals, cfg, keep_records, reduction)
            for deals in split_deals(deal_pairs, workers)
        ]
        deals = run_chunks(chunks, workers, progress, desc=f"{spec_a} vs {spec_b}")["match"]
    else:
        a = _build(agent_a)
        b = _build(agent_b)
        if b is a:  # one instance cannot sit in both seats
            b = copy.deepcopy(a)
        deals = []
        with tqdm(
            total=2 * deal_pairs, unit="game", desc=f"{spec_a} vs {spec_b}", disable=not progress, leave=False
        ) as bar:
            for k in range(deal_pairs):
                deals.append(play_deal(a, b, seed, k, cfg, keep_records, reducer))
                bar.update(2)
    wall = time.perf_counter() - start
    return summarize(spec_a, spec_b, seed, cfg, deals, wall, max(1, workers), keep_records, reduction)


def iter_match_records(result: MatchResult) -> Iterable[tuple[tuple[str, str], GameRecord]]:
    """((player_0 spec, player_1 spec), record) of every kept game of a match."""
    if result.records is None:
        raise ValueError("the match kept no game records (use keep_records=True)")
    return zip(result.seat_pairs(), result.records, strict=True)
