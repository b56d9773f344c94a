"""Property-based tests over random play (hypothesis draws the seeds and, where stated, the ruleset).

Invariants checked at every step of every sampled game:
- every card of the deck is somewhere exactly once (R0.4, R2.3);
- public hand sizes stay equal once the cards of the trick in progress are counted back (R4.4);
- every legal action is accepted, every other action id is rejected with the state unchanged;
- exactly the acting agent of the env has a non-empty action mask;
- games end within the R1.5 / R6.5 bounds and rewards sum to zero.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEFAULT, card_counts, random_action, rules_configs, seeds, snapshot, trick_cards, walk
from tacocat import IllegalActionError, Phase, apply_action, env, legal_actions, new_game, returns
from tacocat.game.state import GameState

FEW = settings(max_examples=30, deadline=None)
SOME = settings(max_examples=50, deadline=None)
configs = st.one_of(st.just(DEFAULT), rules_configs())


def new(seed: int, cfg) -> tuple[GameState, np.random.Generator]:
    rng = np.random.default_rng(seed)
    return new_game(cfg, rng), rng


def max_moves_per_round(cfg) -> int:
    """Upper bound on decisions in one round of deal d: each player sets aside at most d cards and
    stops (2d + 2); every duel, and every trick of k cards (1 attack + k answers), removes at least
    one card from each hand, and hands start at d and end at 1: at most 2 * 2(d - 1)."""
    d = max(cfg.board)
    return 2 * d + 2 + 4 * (d - 1)


@SOME
@given(seed=seeds, cfg=configs)
def test_R0_4_every_card_accounted_for_and_R4_4_hand_sizes_equal(seed, cfg):
    state, rng = new(seed, cfg)
    copies = state.rules.copies
    for live in walk(state, rng):
        assert card_counts(live) == copies, "hands + set aside + duel + draw + discard + table == deck"
        sizes = [live.hand_size(p) + trick_cards(live, p) for p in (0, 1)]
        assert sizes[0] == sizes[1], (sizes, live.phase)
        assert 1 <= sizes[0] <= live.deal_size
        if live.phase is Phase.ANSWER:
            # the attacker keeps at least one card (R5.4); answers never outnumber attack cards
            assert live.hand_size(live.attacker) >= 1
            assert len(live.answers) < len(live.attack)
    assert card_counts(state) == copies


@FEW
@given(seed=seeds, cfg=configs)
def test_legal_actions_accepted_all_others_rejected_state_unchanged(seed, cfg):
    state, rng = new(seed, cfg)
    n = state.rules.codec.size
    for live in walk(state, rng):
        legal = legal_actions(live)
        assert legal == tuple(sorted(set(legal))) and legal, "ascending, unique, non-empty while the game runs"
        before = snapshot(live)
        for action in range(n):
            if action in legal:
                twin = live.clone()
                apply_action(twin, action, live.to_act)  # accepted
                assert twin.actions[-1] == (live.to_act, action)
            else:
                try:
                    apply_action(live, action)
                except IllegalActionError as err:
                    assert err.action == action and err.legal_actions == legal
                else:
                    raise AssertionError(f"illegal action {action} was accepted")
        assert snapshot(live) == before, "rejected actions (and clones) left the state unchanged"


@SOME
@given(seed=seeds, cfg=configs)
def test_R1_5_R6_5_games_end_within_bounds_and_returns_sum_to_zero(seed, cfg):
    state, rng = new(seed, cfg)
    bound = cfg.max_rounds * max_moves_per_round(cfg)
    moves = sum(1 for _ in walk(state, rng, max_steps=bound + 1))
    assert state.is_over and moves <= bound
    assert state.rounds_played <= cfg.max_rounds
    decisive = [e for e in state.events if e[0] == "showdown" and e[3] is not None]
    assert len(decisive) <= len(cfg.board), "R6.5: every decisive round covers a space"
    assert sum(state.covered) == len(decisive)
    if state.truncated:
        assert state.winner is None and state.rounds_played == cfg.max_rounds
    else:
        assert state.winner in (0, 1)
        # R6.4: the round that brought the Tacocat home was won by the game's winner
        assert decisive and decisive[-1][3] == state.winner
    assert sum(returns(state)) == 0
    assert state.events[-1] == ("game_over", state.winner)


@FEW
@given(seed=seeds, cfg=configs)
def test_env_only_acting_agent_has_a_mask_and_rewards_sum_to_zero(seed, cfg):
    e = env(config=cfg)
    e.reset(seed=seed)
    rng = np.random.default_rng(seed)
    totals = dict.fromkeys(e.possible_agents, 0.0)
    steps = 0
    for agent in e.agent_iter(max_iter=100_000):
        observation, reward, terminated, truncated, info = e.last()
        totals[agent] += reward
        if terminated or truncated:
            assert not observation["action_mask"].any()
            e.step(None)
            continue
        game = e.unwrapped.game
        acting = e.possible_agents[game.current_player]
        assert agent == acting
        for other in e.possible_agents:
            mask = e.observe(other)["action_mask"]
            if other == acting:
                assert tuple(np.flatnonzero(mask).tolist()) == legal_actions(game)
                assert info["legal_moves"] == [e.unwrapped.action_name(a) for a in legal_actions(game)]
            else:
                assert not mask.any(), "the agent that is not acting gets an all-zero mask"
        # the rewards of every step are zero-sum (round_reward shaping included)
        assert abs(sum(e.rewards.values())) < 1e-9
        legal = np.flatnonzero(observation["action_mask"])
        e.step(int(legal[rng.integers(len(legal))]))
        steps += 1
    game = e.unwrapped.game
    assert game.is_over
    assert abs(sum(totals.values())) < 1e-9
    final = returns(game)
    shaping = cfg.round_reward * sum(
        (1 if ev[3] == 0 else -1) for ev in game.events if ev[0] == "showdown" and ev[3] is not None
    )
    assert abs(totals["player_0"] - (final[0] + shaping)) < 1e-9
    assert abs(totals["player_1"] - (final[1] - shaping)) < 1e-9


@SOME
@given(seed=seeds, cfg=configs)
def test_clone_is_independent_and_replays_identically(seed, cfg):
    state, rng = new(seed, cfg)
    steps = int(np.random.default_rng(seed).integers(0, 200))
    for i, _ in enumerate(walk(state, rng)):
        if i == steps:
            break
    if state.is_over:
        return
    twin = state.clone()
    assert snapshot(twin) == snapshot(state)
    before = snapshot(state)
    probe = state.clone()
    apply_action(probe, legal_actions(probe)[-1])
    probe.rng.random()
    assert snapshot(state) == before, "changing a clone (and its rng) leaves the original alone"
    r1, r2 = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    while not state.is_over:
        apply_action(state, random_action(state, r1))
        apply_action(twin, random_action(twin, r2))
    assert snapshot(twin) == snapshot(state)
