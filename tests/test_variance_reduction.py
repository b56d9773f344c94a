"""Variance-reduced returns (tacocat.evaluation.variance, AIVAT): the exact chance
distributions, unbiasedness against exact match values on an enumerated preset, a biased
variant caught, the value file's checks and the estimator's use in matches."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from typing import ClassVar

import numpy as np
import pytest
from typer.testing import CliRunner

from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.heuristic import PlannerAgent
from tacocat.agents.registry import make_agent
from tacocat.analysis.agent_tables import agent_policy
from tacocat.analysis.best_response import combine, policy_values
from tacocat.analysis.store import load_tree
from tacocat.cli.app import app
from tacocat.evaluation.arena import agent_rngs
from tacocat.evaluation.matches import deal_seed, match, play_deal
from tacocat.evaluation.stats import mean_interval
from tacocat.evaluation.variance import (
    AIVAT,
    Reduction,
    RoundPayoffs,
    UnknownPolicyError,
    ValueFeatures,
    ValueFileError,
    ValueNet,
    describe_reduction,
    draw_outcomes,
    load_value_net,
    parse_stand_in,
    policy_of,
    sample_outcomes,
    value_meta,
)
from tacocat.game.config import make_config
from tacocat.game.engine import new_game, next_space
from tacocat.game.presets import preset_config
from tacocat.game.ruleset import compile_rules

TINY = preset_config("tiny")
SKIRMISH = preset_config("skirmish")


def hand_value(rules):
    """A value that favours player_0 for holding low cards (R6.1: the lower last card wins):
    crude, but strongly dependent on the hands, so a wrong chance expectation shows."""
    features = ValueFeatures(compile_rules(rules))
    weights = np.linspace(1.0, -1.0, compile_rules(rules).n_values)

    def value(x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(x)
        return np.tanh(2.0 * (x[:, features.hand_slice(0)] - x[:, features.hand_slice(1)]) @ weights)

    return value


def exact_duplicate_return(rules, spec_a: str, spec_b: str) -> float:
    """A's exact expected return per game of a duplicate match (each deal with A in each seat)."""
    tree = load_tree(rules)
    a, b = agent_policy(tree, spec_a), agent_policy(tree, spec_b)
    return float(policy_values(tree, combine(tree, a, b))[0] + policy_values(tree, combine(tree, b, a))[1]) / 2


def duplicate_estimates(rules, spec_a, spec_b, reducer, pairs, seed=0):
    """(plain, reduced) per-deal-pair mean returns of A over `pairs` deal pairs."""
    a, b = make_agent(spec_a), make_agent(spec_b)
    plain, reduced = [], []
    for k in range(pairs):
        deal = play_deal(a, b, seed, k, rules, reducer=reducer)
        plain.append(sum(deal.a_returns()) / 2)
        reduced.append(sum(deal.a_reduced()) / 2)
    return np.array(plain), np.array(reduced)


# ---------------------------------------------------------------------------------------
# chance distributions (R2.2, R4.3)
# ---------------------------------------------------------------------------------------
def brute_force_draws(counts, sizes):
    """The distribution of (drawn counts per player) over every ordering of the pile."""
    cards = [v for v, c in enumerate(counts) for _ in range(c)]
    seen: Counter = Counter()
    orders = list(itertools.permutations(range(len(cards))))
    for order in orders:
        pile = [cards[i] for i in order]
        start, key = 0, []
        for size in sizes:
            key.append(tuple(np.bincount(pile[start : start + size], minlength=len(counts))))
            start += size
        seen[tuple(key)] += 1
    return {k: n / len(orders) for k, n in seen.items()}


@pytest.mark.parametrize(("counts", "sizes"), [((2, 1, 2), (2,)), ((2, 1, 2), (1, 2)), ((1, 3, 0, 2), (2, 2))])
def test_draw_outcomes_match_every_ordering_of_the_pile(counts, sizes):
    outcomes, probs = draw_outcomes(counts, sizes, cap=1000)
    exact = {tuple(tuple(int(v) for v in row) for row in o): p for o, p in zip(outcomes, probs, strict=True)}
    brute = brute_force_draws(counts, sizes)
    assert exact.keys() == brute.keys()
    for key, p in brute.items():
        assert exact[key] == pytest.approx(p, abs=1e-12)


def test_draw_outcomes_give_up_above_the_cap_and_samples_follow_the_distribution():
    assert draw_outcomes((4, 4, 4, 4), (4, 4), cap=50) is None
    outcomes, probs = draw_outcomes((3, 2, 1), (2,), cap=100)
    drawn = sample_outcomes((3, 2, 1), (2,), 20_000, np.random.default_rng(0))
    for row, p in zip(outcomes[:, 0], probs, strict=True):
        share = np.mean(np.all(drawn[:, 0] == row, axis=1))
        assert share == pytest.approx(p, abs=0.015)


# ---------------------------------------------------------------------------------------
# unbiasedness, exactly
# ---------------------------------------------------------------------------------------
def seat_estimates(rules, spec_a, spec_b, reducer, pairs, seed=0):
    """A's reduced returns with A in seat 0 and with A in seat 1, over `pairs` deal pairs."""
    a, b = make_agent(spec_a), make_agent(spec_b)
    deals = [play_deal(a, b, seed, k, rules, reducer=reducer) for k in range(pairs)]
    return [np.array([d.a_reduced()[seat] for d in deals]) for seat in (0, 1)]


class FirstActionBelief(AIVAT):
    """A deliberately biased variant: it believes an agent with known probabilities always
    takes its first legal action, so its decision baselines are wrong."""

    def policy(self, agent):
        known = super().policy(agent)
        if not callable(known):
            return known

        def first(inp):
            out = np.zeros(inp.action_mask.size)
            out[np.flatnonzero(inp.action_mask)[0]] = 1.0
            return out

        return first


def test_reduced_return_agrees_with_the_exact_values_and_a_biased_variant_is_caught():
    """random (uniform, its decisions corrected) against planner (deterministic) on tiny, in
    each seat (no duplicate averaging to hide a seat-dependent bias): the exact expected return
    from the enumerated tree lies inside the reduced estimate's 95% interval, and the interval is
    narrower than the plain one's; a variant with wrong decision probabilities misses it."""
    tree = load_tree(TINY)
    random_rows, planner_rows = agent_policy(tree, "random"), agent_policy(tree, "planner")
    exact = (
        policy_values(tree, combine(tree, random_rows, planner_rows))[0],
        policy_values(tree, combine(tree, planner_rows, random_rows))[1],
    )
    value = hand_value(TINY)
    for seat, reduced in enumerate(seat_estimates(TINY, "random", "planner", AIVAT(TINY, value), 120)):
        _, low, high = mean_interval(reduced)
        assert low <= exact[seat] <= high, (seat, exact[seat], low, high)
    for seat, biased in enumerate(seat_estimates(TINY, "random", "planner", FirstActionBelief(TINY, value), 120)):
        _, low, high = mean_interval(biased)
        assert not low <= exact[seat] <= high, (seat, exact[seat], low, high)


@pytest.mark.slow
def test_duplicate_reduced_return_agrees_with_the_exact_match_value_on_skirmish():
    exact = exact_duplicate_return(SKIRMISH, "random", "planner")
    plain, reduced = duplicate_estimates(SKIRMISH, "random", "planner", AIVAT(SKIRMISH, hand_value(SKIRMISH)), 120)
    for estimates in (plain, reduced):
        _, low, high = mean_interval(estimates)
        assert low <= exact <= high, (exact, low, high)
    assert np.var(reduced) < np.var(plain)


def test_a_zero_value_without_decision_terms_gives_the_plain_return():
    """planner is deterministic and counter's probabilities are unknown: no decision terms, and
    a zero value makes every chance bracket 0, so the estimate is the return, game by game."""
    zero = AIVAT(TINY, lambda x: np.zeros(len(np.atleast_2d(x))), draws=0)
    plain, reduced = duplicate_estimates(TINY, "planner", "counter", zero, 40)
    np.testing.assert_allclose(reduced, plain, atol=1e-12)


# ---------------------------------------------------------------------------------------
# decisions
# ---------------------------------------------------------------------------------------
def test_policies_known_deterministic_and_unknown():
    assert policy_of(make_agent("planner")) is None
    assert policy_of(make_agent("champion")) is None  # greedy: one-hot, no term
    assert callable(policy_of(make_agent("random")))
    assert callable(policy_of(make_agent("champion:deterministic=false")))
    assert policy_of(make_agent("counter")) == "unknown"
    assert policy_of(make_agent("planner:sacrifice_rate=0.5")) == "unknown"
    assert policy_of(make_agent("search")) == "unknown"
    assert policy_of(make_agent("search:seeded=true")) is None  # worlds seeded by its view: a pure strategy


def test_unknown_probabilities_refused_in_one_line_when_required():
    strict = AIVAT(TINY, hand_value(TINY), draws=0, require_policies=True)
    with pytest.raises(UnknownPolicyError, match="action probabilities of counter") as err:
        strict.estimate(1, [], [make_agent("random"), make_agent("counter")])
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------------------------------
# sampled decision terms: agents whose probabilities the estimator does not know
# ---------------------------------------------------------------------------------------
class CoinPlanner(Agent):
    """A stochastic agent the estimator knows nothing about (`policy_of`: unknown), with a
    policy the test can tabulate exactly: planner's move with probability 1/2, else a uniform
    legal action, both drawn from its seeded generator."""

    seen: ClassVar[list[tuple[int, AgentInput]]] = []  # (player, input) of every act, copies included

    def __init__(self) -> None:
        super().__init__()
        self.planner = PlannerAgent()

    def act(self, inp: AgentInput) -> int:
        CoinPlanner.seen.append((self.player, inp))
        if self.rng.random() < 0.5:
            return self.planner.act(inp)
        return int(self.rng.choice(inp.legal_actions))


def coin_planner_exact_values() -> tuple[float, float]:
    """CoinPlanner's exact expected return against planner on tiny, in seat 0 and in seat 1
    (tabulated exactly: half planner, half uniform)."""
    tree = load_tree(TINY)
    planner_rows = agent_policy(tree, "planner")
    coin_rows = 0.5 * planner_rows + 0.5 * tree.uniform_policy()
    return (
        policy_values(tree, combine(tree, coin_rows, planner_rows))[0],
        policy_values(tree, combine(tree, planner_rows, coin_rows))[1],
    )


class PlannerDraws(AIVAT):
    """A deliberately biased variant: it draws the unknown agent's actions from planner
    instead of the agent itself, so its sampled baselines are wrong."""

    def sampled_policy(self, agent, player, rng):
        return super().sampled_policy(PlannerAgent(), player, rng)


def test_sampled_decision_terms_agree_with_the_exact_values_and_biased_draws_are_caught():
    """CoinPlanner (probabilities unknown to the estimator: its decisions get sampled terms,
    4 draws) against planner on tiny, in each seat: the exact expected return from the
    enumerated tree (CoinPlanner tabulated exactly: half planner, half uniform) lies inside the
    reduced estimate's 95% interval; drawing from the wrong agent misses it."""
    assert policy_of(CoinPlanner()) == "unknown"
    exact = coin_planner_exact_values()
    value = hand_value(TINY)
    for reducer, inside in ((AIVAT(TINY, value, draws=4), True), (PlannerDraws(TINY, value, draws=4), False)):
        deals = [play_deal(CoinPlanner(), PlannerAgent(), 0, k, TINY, reducer=reducer) for k in range(120)]
        for seat in (0, 1):
            _, low, high = mean_interval(np.array([d.a_reduced()[seat] for d in deals]))
            assert bool(low <= exact[seat] <= high) == inside, (type(reducer).__name__, seat, exact[seat], low, high)


def test_sampled_draws_leave_the_game_and_the_agents_untouched_and_see_only_their_player():
    """The draws come from copies with their own generators: the games played with the
    estimator are the games played without it, action for action, the agents' generators end
    where they were, and every copy acted on its own player's input only (R7.3)."""
    reducer = AIVAT(TINY, hand_value(TINY), draws=4)
    a, b = CoinPlanner(), make_agent("counter")
    for k in range(6):
        with_draws = play_deal(a, b, 5, k, TINY, keep_records=True, reducer=reducer)
        without = play_deal(a, b, 5, k, TINY, keep_records=True)
        assert [r.actions for r in with_draws.records] == [r.actions for r in without.records]
        assert with_draws.a_returns() == without.a_returns()
    agents = [CoinPlanner(), make_agent("counter")]
    CoinPlanner.seen.clear()
    actions = play_deal(agents[0], agents[1], 9, 0, TINY, keep_records=True).records[0].actions
    played = len(CoinPlanner.seen)
    before = [agent.rng.bit_generator.state for agent in agents]
    reducer.estimate(deal_seed(9, 0), actions, agents)
    assert [agent.rng.bit_generator.state for agent in agents] == before
    drawn = CoinPlanner.seen[played:]
    assert drawn, "no draws were made"
    assert all(player == 0 and inp.view.player == 0 and type(inp) is AgentInput for player, inp in drawn)


# ---------------------------------------------------------------------------------------
# round rollouts
# ---------------------------------------------------------------------------------------
def seat0_estimates(rules, a, b, estimators, pairs, seed):
    """For each estimator, the reduced returns of the games with `a` in seat 0 over `pairs`
    deals: the same games valued by each."""
    out: list[list[float]] = [[] for _ in estimators]
    for k in range(pairs):
        record = play_deal(a, b, seed, k, rules, keep_records=True).records[0]
        for estimates, estimator in zip(out, estimators, strict=True):
            estimates.append(estimator.estimate(deal_seed(seed, k), record.actions, (a, b))[1])
    return out


def test_rollouts_keep_the_estimate_unbiased_in_each_seat():
    """random (uniform, its decisions corrected) against planner on tiny with the round played
    out past the replace phase (4 rollouts per expectation): the exact expected return lies
    inside the reduced estimate's 95% interval in each seat."""
    tree = load_tree(TINY)
    random_rows, planner_rows = agent_policy(tree, "random"), agent_policy(tree, "planner")
    exact = (
        policy_values(tree, combine(tree, random_rows, planner_rows))[0],
        policy_values(tree, combine(tree, planner_rows, random_rows))[1],
    )
    reducer = AIVAT(TINY, hand_value(TINY), rollouts=4)
    for seat, reduced in enumerate(seat_estimates(TINY, "random", "planner", reducer, 120)):
        _, low, high = mean_interval(reduced)
        assert low <= exact[seat] <= high, (seat, exact[seat], low, high)


def test_rollouts_of_deterministic_agents_remove_the_variance_of_their_play():
    """planner (deterministic) against counter (sampling only to break ties) on skirmish, in
    seat 0: played out, the duel and the play no longer move U, so the reduced estimate is far
    narrower than with the same (crude) value alone, and the exact value lies inside its
    interval."""
    tree = load_tree(SKIRMISH)
    exact = policy_values(tree, combine(tree, agent_policy(tree, "planner"), agent_policy(tree, "counter")))[0]
    a, b = make_agent("planner"), make_agent("counter")
    value = hand_value(SKIRMISH)
    reduced, played_out = seat0_estimates(
        SKIRMISH, a, b, (AIVAT(SKIRMISH, value), AIVAT(SKIRMISH, value, rollouts=16)), 80, seed=3
    )
    _, low, high = mean_interval(np.array(played_out))
    assert low <= exact <= high, (exact, low, high)
    assert np.var(played_out) < 0.6 * np.var(reduced), (np.var(played_out), np.var(reduced))


def test_playouts_average_the_rollouts_of_an_agent_that_samples():
    """random against planner on tiny, in seat 0: 8 playouts per value narrow the estimate
    below one playout's and keep the exact value inside the interval; for two deterministic
    agents every playout is the same, and so are the estimates."""
    tree = load_tree(TINY)
    exact = policy_values(tree, combine(tree, agent_policy(tree, "random"), agent_policy(tree, "planner")))[0]
    value = hand_value(TINY)
    a, b = make_agent("random"), make_agent("planner")
    estimators = (AIVAT(TINY, value, rollouts=4), AIVAT(TINY, value, rollouts=4, playouts=8))
    single, averaged = seat0_estimates(TINY, a, b, estimators, 100, seed=2)
    _, low, high = mean_interval(np.array(averaged))
    assert low <= exact <= high, (exact, low, high)
    assert np.var(averaged) < 0.8 * np.var(single), (np.var(averaged), np.var(single))
    c, d = make_agent("planner"), make_agent("highcard")
    record = play_deal(c, d, 2, 0, SKIRMISH, keep_records=True).records[0]
    estimates = [
        AIVAT(SKIRMISH, hand_value(SKIRMISH), rollouts=4, playouts=n).estimate(deal_seed(2, 0), record.actions, (c, d))
        for n in (1, 4)
    ]
    assert estimates[0] == estimates[1]
    with pytest.raises(ValueError, match="playouts >= 1"):
        AIVAT(TINY, value, playouts=0)


def test_rollouts_leave_the_game_and_the_agents_untouched():
    """The rollouts are played by copies with their own generators: the games played with the
    estimator are the games played without it, action for action, and the agents' generators
    end where they were."""
    reducer = AIVAT(TINY, hand_value(TINY), rollouts=4)
    agents = [make_agent("counter"), CoinPlanner()]
    for k in range(4):
        with_rollouts = play_deal(agents[0], agents[1], 5, k, TINY, keep_records=True, reducer=reducer)
        without = play_deal(agents[0], agents[1], 5, k, TINY, keep_records=True)
        assert [r.actions for r in with_rollouts.records] == [r.actions for r in without.records]
    actions = play_deal(agents[0], agents[1], 9, 0, TINY, keep_records=True).records[0].actions
    before = [agent.rng.bit_generator.state for agent in agents]
    first = reducer.estimate(deal_seed(9, 0), actions, agents)
    assert [agent.rng.bit_generator.state for agent in agents] == before
    assert reducer.estimate(deal_seed(9, 0), actions, agents) == first  # its own streams, seeded by the deal


# ---------------------------------------------------------------------------------------
# stand-ins in the rollouts
# ---------------------------------------------------------------------------------------
def test_a_stand_in_plays_the_rollouts_and_the_estimate_stays_unbiased_in_each_seat():
    """random (its decisions corrected with its own probabilities) against planner on tiny,
    random's part of the rollouts played by planner: the exact value lies inside the interval
    in each seat, and in seat 0 the deterministic stand-in more than halves the variance of
    random's own rollouts on the same games."""
    tree = load_tree(TINY)
    random_rows, planner_rows = agent_policy(tree, "random"), agent_policy(tree, "planner")
    exact = (
        policy_values(tree, combine(tree, random_rows, planner_rows))[0],
        policy_values(tree, combine(tree, planner_rows, random_rows))[1],
    )
    value = hand_value(TINY)
    stand_in = AIVAT(TINY, value, rollouts=4, stand_ins={"random": "planner"})
    assert type(stand_in.rollout_agent(make_agent("random"))) is PlannerAgent
    planner = make_agent("planner")
    assert type(stand_in.rollout_agent(planner)) is PlannerAgent and stand_in.rollout_agent(planner) is not planner
    for seat, reduced in enumerate(seat_estimates(TINY, "random", "planner", stand_in, 120)):
        _, low, high = mean_interval(reduced)
        assert low <= exact[seat] <= high, (seat, exact[seat], low, high)
    a, b = make_agent("random"), make_agent("planner")
    own, stood_in = seat0_estimates(TINY, a, b, (AIVAT(TINY, value, rollouts=4), stand_in), 100, seed=2)
    assert np.var(stood_in) < 0.6 * np.var(own), (np.var(stood_in), np.var(own))
    _, low, high = mean_interval(np.array(stood_in))
    assert low <= exact[0] <= high, (exact[0], low, high)
    playouts = AIVAT(TINY, value, rollouts=4, playouts=8, stand_ins={"random": "planner"})
    record = play_deal(a, b, 2, 0, TINY, keep_records=True).records[0]
    both = [estimator.estimate(deal_seed(2, 0), record.actions, (a, b)) for estimator in (stand_in, playouts)]
    assert both[0] == both[1]  # two deterministic players in the rollouts: one playout is every playout


def test_rollouts_of_a_seeded_search_are_exact_and_the_estimate_unbiased():
    """planner against search:seeded=true (a pure strategy) on skirmish, in seat 0: its own
    copies play the rollouts, the exact value (from its table) lies inside the reduced
    interval, the variance falls below 0.6 of that of the value alone, and one playout is every
    playout."""
    spec = "search:seeded=true,simulations=8"
    tree = load_tree(SKIRMISH)
    exact = policy_values(tree, combine(tree, agent_policy(tree, "planner"), agent_policy(tree, spec)))[0]
    a, b = make_agent("planner"), make_agent(spec)
    value = hand_value(SKIRMISH)
    estimators = (AIVAT(SKIRMISH, value), AIVAT(SKIRMISH, value, rollouts=16))
    reduced, played_out = seat0_estimates(SKIRMISH, a, b, estimators, 80, seed=4)
    _, low, high = mean_interval(np.array(played_out))
    assert low <= exact <= high, (exact, low, high)
    assert np.var(played_out) < 0.6 * np.var(reduced), (np.var(played_out), np.var(reduced))
    record = play_deal(a, b, 4, 0, SKIRMISH, keep_records=True).records[0]
    estimates = [
        AIVAT(SKIRMISH, value, rollouts=16, playouts=n).estimate(deal_seed(4, 0), record.actions, (a, b))
        for n in (1, 4)
    ]
    assert estimates[0] == estimates[1]


def test_replayed_rollouts_keep_the_estimate_unbiased_and_remove_the_noise_of_fresh_ones():
    """CoinPlanner (it samples, its probabilities unknown to the estimator) against planner on
    tiny, in each seat, 4 rollouts per expectation: with `replay` its rollouts draw from its own
    generator as the game left it, the exact expected return lies inside the reduced interval,
    and the variance falls below 0.75 of that with fresh generators in the rollouts (measured
    0.55 and 0.51), over the same games."""
    exact = coin_planner_exact_values()
    value = hand_value(TINY)
    fresh, replayed = (
        [play_deal(CoinPlanner(), PlannerAgent(), 0, k, TINY, reducer=reducer) for k in range(120)]
        for reducer in (AIVAT(TINY, value, rollouts=4), AIVAT(TINY, value, rollouts=4, replay=True))
    )
    for seat in (0, 1):
        reduced = np.array([d.a_reduced()[seat] for d in replayed])
        _, low, high = mean_interval(reduced)
        assert low <= exact[seat] <= high, (seat, exact[seat], low, high)
        noisy = np.array([d.a_reduced()[seat] for d in fresh])
        assert np.var(reduced) < 0.75 * np.var(noisy), (seat, np.var(reduced), np.var(noisy))


def test_replay_needs_the_games_generators_and_refuses_an_agent_that_does_not_replay():
    """A replayed agent's copy makes the game's moves again from the generators given: without
    them, or with other generators (its moves then differ), one line; the agents that played
    keep their generators, an agent with known probabilities or a stand-in is not replayed,
    and the estimate reproduces."""
    reducer = AIVAT(TINY, hand_value(TINY), rollouts=4, replay=True)
    a, b = CoinPlanner(), PlannerAgent()
    record = play_deal(a, b, 3, 0, TINY, keep_records=True).records[0]
    seed = deal_seed(3, 0)
    with pytest.raises(ValueError, match="replayed rollouts need the agents' generators"):
        reducer.estimate(seed, record.actions, (a, b))
    refused = 0
    for other in range(8):
        generators = (np.random.default_rng(100 + other), np.random.default_rng(0))
        try:
            reducer.estimate(seed, record.actions, (a, b), generators=generators)
        except ValueError as err:
            assert "CoinPlanner does not replay its game from its generator" in str(err)
            assert "\n" not in str(err)
            refused += 1
    assert refused > 0
    before = [agent.rng.bit_generator.state for agent in (a, b)]
    first = reducer.estimate(seed, record.actions, (a, b), generators=agent_rngs(3, 0))
    assert reducer.estimate(seed, record.actions, (a, b), generators=agent_rngs(3, 0)) == first
    assert [agent.rng.bit_generator.state for agent in (a, b)] == before
    random_record = play_deal(make_agent("random"), b, 3, 0, TINY, keep_records=True).records[0]
    other_generators = (np.random.default_rng(7), np.random.default_rng(8))
    reducer.estimate(seed, random_record.actions, (make_agent("random"), b), generators=other_generators)
    counter = make_agent("counter")
    counter_record = play_deal(counter, b, 3, 0, TINY, keep_records=True).records[0]
    stand_in = AIVAT(TINY, hand_value(TINY), rollouts=4, replay=True, stand_ins={"counter": "planner"})
    stand_in.estimate(seed, counter_record.actions, (counter, b), generators=other_generators)


def test_a_reduction_refuses_options_that_do_not_fit_in_one_line():
    with pytest.raises(ValueError, match="playouts shape the rollouts, which are off"):
        Reduction("v.npz", playouts=4)
    with pytest.raises(ValueError, match="stand-ins shape the rollouts, which are off"):
        Reduction("v.npz", stand_ins=(("random", "planner"),))
    with pytest.raises(ValueError, match="one stand-in per agent: random named twice"):
        Reduction("v.npz", rollouts=4, stand_ins=(("random", "planner"), ("random", "highcard")))
    with pytest.raises(ValueError, match="draws and rollouts must be >= 0"):
        Reduction("v.npz", rollouts=-1)
    with pytest.raises(ValueError, match="replayed generators shape the rollouts, which are off"):
        Reduction("v.npz", replay=True)
    with pytest.raises(ValueError, match="replay and draws exclude each other"):
        Reduction("v.npz", rollouts=4, draws=2, replay=True)
    # the estimator itself refuses the same (one check for both)
    with pytest.raises(ValueError, match="replay and draws exclude each other"):
        AIVAT(TINY, hand_value(TINY), rollouts=4, draws=2, replay=True)
    with pytest.raises(ValueError, match="stand-ins shape the rollouts, which are off"):
        AIVAT(TINY, hand_value(TINY), stand_ins={"random": "planner"})
    assert "rollouts replay the generators" in describe_reduction(Reduction("v.npz", rollouts=4, replay=True).to_dict())
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        AIVAT(TINY, hand_value(TINY), rollouts=4, stand_ins={"random": "nobody"})
    assert parse_stand_in("champion:deterministic=false@champion") == ("champion:deterministic=false", "champion")
    for text in ("champion", "@champion", "champion@", " @ "):
        with pytest.raises(ValueError, match="a stand-in is AGENT@STAND_IN"):
            parse_stand_in(text)
    reduction = Reduction("/x/v.npz", rollouts=16, playouts=2, stand_ins=(("search", "counter"),))
    assert describe_reduction(reduction.to_dict()) == (
        "value file v.npz, 16 rollouts x 2 playouts, counter plays search's rollouts"
    )


def test_cli_match_takes_rollouts_and_stand_ins_and_refuses_them_without_a_reduction(tmp_path):
    """--rollouts, --playouts, --stand-in and --replay reach the match and its JSON; given without
    --reduce, or a stand-in for an agent not in the match: one line, exit 2, nothing written."""
    rules = tmp_path / "trio_decided.yaml"
    rules.write_text(json.dumps(preset_config("trio_decided").model_dump(mode="json")))
    out = tmp_path / "out.json"
    base = ["match", "random", "planner", "-n", "3", "--rules", str(rules), "--no-progress", "--json", str(out)]
    runner = CliRunner()
    shown = runner.invoke(app, [*base, "--reduce", "--rollouts", "4", "--stand-in", "random@planner"])
    assert shown.exit_code == 0, shown.output
    assert "4 rollouts, planner plays random's rollouts" in shown.output
    summary = json.loads(out.read_text())
    assert summary["reduction"]["rollouts"] == 4 and summary["reduction"]["stand_ins"] == {"random": "planner"}
    out.unlink()
    replayed = runner.invoke(app, [*base, "--reduce", "--rollouts", "4", "--replay"])
    assert replayed.exit_code == 0 and "4 rollouts, rollouts replay the generators" in replayed.output, replayed.output
    assert json.loads(out.read_text())["reduction"]["replay"] is True
    out.unlink()
    for extra, words in (
        (["--rollouts", "4"], "shapes the variance reduction, which is off"),
        (["--replay"], "shapes the variance reduction, which is off"),
        (["--reduce", "--replay"], "replayed generators shape the rollouts, which are off"),
        (["--stand-in", "random@planner", "--rollouts", "4"], "shapes the variance reduction, which is off"),
        (["--reduce", "--rollouts", "4", "--stand-in", "counter@planner"], "counter is not an opponent"),
        (["--reduce", "--rollouts", "4", "--stand-in", "random@nobody"], "unknown agent 'nobody'"),
        (["--reduce", "--stand-in", "random@planner"], "stand-ins shape the rollouts, which are off"),
        (["--reduce", "--rollouts", "4", "--stand-in", "random"], "a stand-in is AGENT@STAND_IN"),
    ):
        refused = runner.invoke(app, [*base, *extra])
        assert refused.exit_code == 2 and words in refused.output, (extra, refused.output)
        assert "Traceback" not in refused.output and not out.exists()


# ---------------------------------------------------------------------------------------
# the value file
# ---------------------------------------------------------------------------------------
def small_net(rules, seed=0) -> ValueNet:
    size = ValueFeatures(compile_rules(rules)).size
    rng = np.random.default_rng(seed)
    return ValueNet(
        (rng.normal(size=(size, 8)) * 0.1, rng.normal(size=(8, 3)) * 0.1),
        (np.zeros(8), np.zeros(3)),
        np.zeros(size),
        np.ones(size),
        value_meta(rules),
        RoundPayoffs(compile_rules(rules)),
    )


def test_round_payoffs_one_round_presets_and_the_race_by_simulation():
    """tiny: one round with round_reward 1 (R1), so the payoffs are the shaping alone; the
    default board: the race value of a position (every decisive round a coin flip, R6.3)
    agrees with a simulation of that race, and the seats are symmetric (R1.6)."""
    tiny = RoundPayoffs(compile_rules(TINY))
    x = ValueFeatures(compile_rules(TINY))(new_game(TINY, 0))[None, :]
    np.testing.assert_allclose(tiny(x)[0], [1.0, -1.0, 0.0])
    rules = make_config()
    payoffs = RoundPayoffs(compile_rules(rules))
    state = new_game(rules, 0)
    start = ValueFeatures(compile_rules(rules))(state)[None, :]
    win0, win1, void = payoffs(start)[0]
    assert win0 == pytest.approx(-win1) and void == pytest.approx(0.0)
    rng = np.random.default_rng(0)
    wins = 0
    trials = 20_000
    for _ in range(trials):  # after player_0 won the first round: coin flips until a goal
        covered, space = [False] * 7, 3
        covered[space], space = True, next_space(covered, space, 0)
        while 0 <= space < 7:
            winner = int(rng.integers(2))
            covered[space], space = True, next_space(covered, space, winner)
        wins += space == -1
    assert win0 == pytest.approx(2 * wins / trials - 1, abs=0.02)


def test_value_file_round_trip_and_refusals(tmp_path):
    path = tmp_path / "v.npz"
    net = small_net(TINY)
    net.save(path)
    loaded = load_value_net(path, TINY)
    x = np.stack([ValueFeatures(compile_rules(TINY))(new_game(TINY, seed)) for seed in range(5)])
    np.testing.assert_allclose(loaded(x), net(x))
    with pytest.raises(ValueFileError, match=f"trained for ruleset {TINY.ruleset_hash()}") as err:
        load_value_net(path, SKIRMISH)
    assert "\n" not in str(err.value)
    wrong = small_net(TINY)
    wrong.meta["feature_size"] += 1
    wrong.save(tmp_path / "w.npz")
    with pytest.raises(ValueFileError, match="takes features of size"):
        load_value_net(tmp_path / "w.npz", TINY)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueFileError, match="is not a value file"):
        load_value_net(tmp_path / "junk.npz", TINY)
    with pytest.raises(ValueFileError, match="does not exist"):
        load_value_net(tmp_path / "absent.npz", TINY)


def test_match_reports_the_reduced_return_and_the_cli_refuses_a_foreign_value_file(tmp_path):
    path = tmp_path / "v.npz"
    small_net(TINY).save(path)
    result = match("random", "planner", 30, seed=3, config=TINY, progress=False, reduction=Reduction(str(path)))
    plain = match("random", "planner", 30, seed=3, config=TINY, progress=False)
    assert result.deal_returns == plain.deal_returns and plain.reduced_ci is None
    assert result.reduced_ci is not None and result.reduced_ci[0] < result.reduced_return_a < result.reduced_ci[1]
    summary = result.to_dict()
    assert summary["reduced_return_a"] == result.reduced_return_a and summary["variance_ratio"] > 0
    rules = tmp_path / "skirmish.yaml"
    rules.write_text(json.dumps(SKIRMISH.model_dump(mode="json")))
    out = tmp_path / "out.json"
    cli = CliRunner().invoke(
        app, ["match", "random", "planner", "-n", "2", "--rules", str(rules), "--value", str(path), "--json", str(out)]
    )
    assert cli.exit_code == 2
    assert "trained for ruleset" in cli.output and "Traceback" not in cli.output
    assert not out.exists()


def test_default_rules_features_are_finite_and_sized():
    rules = make_config()
    features = ValueFeatures(compile_rules(rules))
    x = features(new_game(rules, 0))
    assert x.shape == (features.size,) and np.all(np.isfinite(x))
    assert math.isclose(x[features.hand_slice(0)].sum() * max(compile_rules(rules).copies), rules.board[3])


def test_cli_match_prints_the_mean_return_and_refuses_reduce_without_a_value_file(tmp_path):
    """On a one-round preset the win rate is 0.5 by construction (R1.5): the match shows the
    mean return beside it. --reduce on rules with no shipped value file: one line, exit 2."""
    rules = tmp_path / "trio.yaml"
    rules.write_text(json.dumps(preset_config("trio").model_dump(mode="json")))
    runner = CliRunner()
    shown = runner.invoke(app, ["match", "planner", "random", "-n", "20", "--rules", str(rules), "--no-progress"])
    assert shown.exit_code == 0, shown.output
    assert "win rate A 0.500" in shown.output and "mean return A +" in shown.output
    out = tmp_path / "out.json"
    refused = runner.invoke(app, ["match", "planner", "random", "--rules", str(rules), "--reduce", "--json", str(out)])
    assert refused.exit_code == 2 and "no shipped value file" in refused.output and not out.exists()
