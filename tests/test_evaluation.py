"""Duplicate-format matches (tacocat.evaluation.matches)."""

from __future__ import annotations

import json

import pytest

from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.registry import make_agent
from tacocat.evaluation.matches import deal_seed, match
from tacocat.evaluation.stats import paired_interval, wilson_interval
from tacocat.game.config import make_config
from tacocat.game.engine import apply_action, new_game


class Recorder(Agent):
    """Deterministic (first legal action); logs (game, seat, hand) at its first decision of a game."""

    name = "recorder"

    def __init__(self, log: list, label: str, pick: int = 0) -> None:
        super().__init__()
        self.log, self.label, self.pick = log, label, pick
        self.game = -1
        self.fresh = False

    def reset(self, player, rng):
        super().reset(player, rng)
        self.game += 1
        self.fresh = True

    def act(self, inp: AgentInput) -> int:
        if self.fresh:
            self.log.append((self.label, self.game, inp.view.player, inp.view.hand))
            self.fresh = False
        return inp.legal_actions[self.pick if self.pick == 0 else -1]


def _round_hands(seed: int, actions) -> list[tuple]:
    """(space, hands dealt) at the start of every round of a game (replayed)."""
    state = new_game(make_config(), seed)
    hands = [(state.space, tuple(map(tuple, state.hands)))]
    rounds = state.rounds_played
    for player, action in actions:
        apply_action(state, action, player)
        if not state.is_over and state.rounds_played != rounds:
            rounds = state.rounds_played
            hands.append((state.space, tuple(map(tuple, state.hands))))
    return hands


def test_deal_seed_is_stable_and_distinct():
    assert deal_seed(1, 0) == deal_seed(1, 0)
    seeds = {deal_seed(s, k) for s in range(3) for k in range(50)}
    assert len(seeds) == 150
    assert all(0 <= s < 2**63 for s in seeds)


def test_duplicate_pairs_replay_the_same_deal_with_seats_swapped():
    log: list = []
    a, b = Recorder(log, "A"), Recorder(log, "B", pick=-1)
    result = match(a, b, deal_pairs=3, seed=11, progress=False, keep_records=True)
    records = result.records
    assert len(records) == 6 and result.n_games == 6
    first = {(label, game): (seat, hand) for label, game, seat, hand in log}
    for k in range(3):
        g0, g1 = records[2 * k], records[2 * k + 1]
        assert g0.seed == g1.seed == deal_seed(11, k)
        # A sits in seat 0 in game 2k, in seat 1 in game 2k+1
        assert first[("A", 2 * k)][0] == 0 and first[("A", 2 * k + 1)][0] == 1
        assert first[("B", 2 * k)][0] == 1 and first[("B", 2 * k + 1)][0] == 0
        # the first-round hands are the same cards, swapped between the agents
        assert first[("A", 2 * k)][1] == first[("B", 2 * k + 1)][1]
        assert first[("B", 2 * k)][1] == first[("A", 2 * k + 1)][1]
        # every round reshuffles from the same generator: round r of both games deals the same
        # hands to the same seats whenever the Tacocat stands on the same space (same deal size)
        h0, h1 = _round_hands(g0.seed, g0.actions), _round_hands(g1.seed, g1.actions)
        assert h0[0] == h1[0]
        same_space = [(x, y) for x, y in zip(h0, h1, strict=False) if x[0] == y[0]]
        assert all(x == y for x, y in same_space)


def test_identical_deterministic_agents_play_identical_pair_games():
    result = match("test-first", "test-first", deal_pairs=4, seed=2, progress=False, keep_records=True)
    for k in range(4):
        assert result.records[2 * k].actions == result.records[2 * k + 1].actions
        # same game, so the same seat wins: A wins one of the two games of each deal
        assert result.deal_scores[k] in ((1.0, 0.0), (0.0, 1.0), (0.5, 0.5))
    assert result.win_rate_a == pytest.approx(0.5)


def test_match_result_counts_and_json():
    r = match("test-last", "test-first", deal_pairs=5, seed=4, progress=False)
    total = r.a_total
    assert total.games == 10 == r.n_games
    assert r.wins_a + r.wins_b + r.draws == 10
    assert r.a_seat0.games == r.a_seat1.games == 5
    assert r.win_rate_a == pytest.approx((r.wins_a + 0.5 * r.draws) / 10)
    assert r.ci_low <= r.win_rate_a <= r.ci_high
    assert r.mean_length > 0 and r.mean_rounds >= 4 and r.games_per_s > 0
    d = json.loads(json.dumps(r.to_dict()))
    assert d["agent_a"] == "test-last" and d["games"] == 5 and d["n_games"] == 10
    assert d["ruleset_hash"] == make_config().ruleset_hash()
    assert d["per_agent"]["B"]["total"]["wins"] == r.wins_b
    assert d["per_agent"]["A"]["player_0"] == {
        "wins": r.a_seat0.wins,
        "losses": r.a_seat0.losses,
        "draws": r.a_seat0.draws,
    }
    assert len(d["deal_scores"]) == 5
    # the primary interval is paired over deal pairs; Wilson over games is kept as secondary
    assert d["ci95"] == [r.ci_low, r.ci_high] and "paired" in d["ci_method"]
    assert d["ci95_wilson"] == [r.wilson_low, r.wilson_high] and "Wilson" in d["ci95_wilson_method"]
    assert (r.ci_low, r.ci_high) == paired_interval([sum(s) / 2 for s in r.deal_scores])
    assert (r.wilson_low, r.wilson_high) == wilson_interval(r.wins_a + 0.5 * r.draws, 10)


def test_instances_and_specs_give_the_same_result():
    by_spec = match("random", "test-first", deal_pairs=3, seed=9, progress=False)
    by_instance = match(make_agent("random"), make_agent("test-first"), deal_pairs=3, seed=9, progress=False)
    assert by_spec.deal_scores == by_instance.deal_scores
    assert by_spec.mean_length == by_instance.mean_length


def test_parallel_and_serial_results_are_identical():
    serial = match("random", "random", deal_pairs=12, seed=21, workers=1, progress=False, keep_records=True)
    parallel = match("random", "random", deal_pairs=12, seed=21, workers=2, progress=False, keep_records=True)
    ds, dp = serial.to_dict(), parallel.to_dict()
    for key in ("wall_s", "games_per_s", "workers"):
        ds.pop(key), dp.pop(key)
    assert ds == dp
    assert [r.actions for r in serial.records] == [r.actions for r in parallel.records]
    assert parallel.workers == 2


def test_parallel_needs_specs_and_bad_input_is_rejected():
    with pytest.raises(ValueError, match="spec strings"):
        match(make_agent("random"), "random", deal_pairs=2, seed=0, workers=2, progress=False)
    with pytest.raises(ValueError):
        match("random", "random", deal_pairs=0, seed=0, progress=False)
    with pytest.raises(ValueError, match="unknown agent"):
        match("no-such-agent", "random", deal_pairs=1, seed=0, progress=False)


def test_config_is_used():
    cfg = make_config(max_rounds=2)
    r = match("test-first", "test-first", deal_pairs=2, seed=0, config=cfg, progress=False)
    assert r.ruleset_hash == cfg.ruleset_hash()
    assert r.mean_rounds <= 2


def test_results_record_the_agent_with_its_parameters():
    from tacocat.evaluation.matches import agent_spec

    assert agent_spec(make_agent("search:simulations=200")) == "search:simulations=200"
    assert agent_spec(make_agent("planner", keep_from=6)) == "planner:keep_from=6"
    assert agent_spec(make_agent("counter")) == "counter"
    assert make_agent(agent_spec(make_agent("search:simulations=24,belief=off"))).belief == "off"


def test_mean_return_is_the_engine_return_replayed_and_the_win_rate_misses_it_on_one_round():
    """On a one-round preset (R1.5: every game truncated, round_reward 1) the win rate is 0.5 by
    construction; the mean return is A's shaped return (`shaped_returns` of each game replayed
    from its seed and actions, an independent path) and its interval is the t interval of the
    deal pairs' mean returns."""
    from tacocat.evaluation.stats import mean_interval
    from tacocat.game.engine import shaped_returns
    from tacocat.game.presets import preset_config

    rules = preset_config("trio")
    result = match("planner", "random", 60, seed=5, config=rules, progress=False, keep_records=True)
    assert result.win_rate_a == 0.5 and result.truncated == result.n_games
    replayed = []
    for game, record in enumerate(result.records):
        state = new_game(rules, record.seed)
        for player, action in record.actions:
            apply_action(state, action, player)
        replayed.append(shaped_returns(state)[game % 2])  # A sits in seat game % 2
    pairs = [(replayed[2 * k] + replayed[2 * k + 1]) / 2 for k in range(result.games)]
    assert result.deal_returns == pytest.approx(pairs)
    mean, low, high = mean_interval(pairs)
    assert result.mean_return_a == pytest.approx(mean) and result.return_ci == pytest.approx((low, high))
    assert result.mean_return_a > 0.2  # planner beats random on trio
    assert result.to_dict()["return_ci95"] == pytest.approx([low, high])
