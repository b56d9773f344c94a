"""Agents: legal moves only, determinism from their seed, no peeking at hidden cards (R7.3)."""

from __future__ import annotations

import numpy as np
import pytest

from tacocat.agents.base import AgentInput
from tacocat.agents.registry import list_agents, make_agent
from tacocat.agents.search import SearchAgent, play_out_round, rollout_action
from tacocat.evaluation.arena import play_game
from tacocat.game.engine import apply_action, legal_actions, new_game
from tacocat.game.positions import setup_position
from tacocat.game.state import Phase
from tacocat.game.view import opponent_bounds, player_view, sample_state, view_digest

LADDER = ["random", "highcard", "planner", "counter", "search:simulations=8"]


def random_positions(count: int, seed: int):
    """States reached by random play from many deals (a sample of positions)."""
    rng = np.random.default_rng(seed)
    out = []
    game = new_game(seed=int(rng.integers(1 << 30)))
    while len(out) < count:
        if game.is_over:
            game = new_game(seed=int(rng.integers(1 << 30)))
            continue
        if rng.random() < 0.3:
            out.append(game.clone())
        legal = legal_actions(game)
        apply_action(game, legal[int(rng.integers(len(legal)))])
    return out


@pytest.mark.parametrize("spec", LADDER)
def test_agents_only_choose_legal_actions(spec):
    agent = make_agent(spec)
    positions = random_positions(400 if spec.startswith("search") else 3000, seed=7)
    for i, state in enumerate(positions):
        agent.reset(state.to_act, np.random.default_rng(i))
        action = agent.act(AgentInput.from_state(state, state.to_act))
        assert action in legal_actions(state), (spec, state.phase, action)


@pytest.mark.parametrize("spec", LADDER)
def test_agents_are_deterministic_given_their_seed(spec):
    def game(agent_seed):
        agents = [make_agent(spec), make_agent("random")]
        gens = [np.random.default_rng(agent_seed), np.random.default_rng(99)]
        return play_game(agents, seed=5, agent_generators=gens).actions

    assert game(1) == game(1)
    if spec in ("random", "search:simulations=8"):
        assert game(1) != game(2)  # randomised agents do use their generator


def test_registry_lists_every_rung_and_rejects_unknown_names():
    names = {name for name, _ in list_agents()}
    assert {"random", "highcard", "planner", "counter", "search"} <= names
    with pytest.raises(ValueError, match=r"unknown agent 'nope'.*known agents"):
        make_agent("nope")
    with pytest.raises(ValueError, match="agent 'search' has no parameter 'bogus'; it accepts: simulations"):
        make_agent("search", bogus=1)
    assert make_agent("search:simulations=12").simulations == 12


def _swap_hidden(state, observer, rng):
    """Same public information, other hidden cards: re-deal the opponent's hand from the
    cards the observer cannot see (opponent hand + draw pile), and shuffle the draw pile."""
    twin = state.clone()
    opp = 1 - observer
    hidden = [v for v, n in enumerate(twin.hands[opp]) for _ in range(n)] + twin.draw_pile
    rng.shuffle(hidden)
    size = sum(twin.hands[opp])
    twin.hands[opp] = [0] * len(twin.hands[opp])
    for v in hidden[:size]:
        twin.hands[opp][v] += 1
    twin.draw_pile = hidden[size:]
    twin.invalidate_legal_cache()
    return twin


def test_search_agent_ignores_the_true_hidden_cards():
    """R7.3 leak test: with public info and own cards equal, the search agent's choices do
    not change when the opponent's hidden cards and the draw pile change."""
    rng = np.random.default_rng(3)
    checked = 0
    for state in random_positions(200, seed=11):
        if state.phase is Phase.REPLACE or len(legal_actions(state)) < 2:
            continue
        if any(state.duel) or sum(map(sum, state.set_aside)):
            continue  # a hidden choice already made is part of the hidden state too
        me = state.to_act
        twin = _swap_hidden(state, me, rng)
        if twin.hands == state.hands:
            continue
        choices = []
        for world in (state, twin):
            agent = SearchAgent(simulations=24)
            agent.reset(me, np.random.default_rng(42))
            choices.append(agent.act(AgentInput.from_state(world, me)))
        assert choices[0] == choices[1]
        checked += 1
    assert checked >= 30


def test_seeded_search_plays_one_pure_strategy_blind_to_hidden_cards():
    """search:seeded=true draws its worlds from its view's digest: whatever generator it is
    reset with, in whichever order it meets the positions, it makes the same move at the same
    view (decisions of every phase, replace included), and neither the digest nor the move
    changes when the opponent's hidden cards and the draw pile change (R7.3)."""
    positions = [s for s in random_positions(150, seed=13) if len(legal_actions(s)) > 1]
    assert {s.phase for s in positions} == set(Phase) - {Phase.OVER}
    moves = []
    for order, agent_seed in ((1, 0), (-1, 1)):
        agent = make_agent("search:seeded=true,simulations=16")
        seen = {}
        for i, state in enumerate(positions[::order]):
            agent.reset(state.to_act, np.random.default_rng(agent_seed * 1000 + i))
            seen[id(state)] = agent.act(AgentInput.from_state(state, state.to_act))
        moves.append(seen)
    assert moves[0] == moves[1]
    unseeded = make_agent("search:simulations=16")
    differs = 0
    for i, state in enumerate(positions):
        unseeded.reset(state.to_act, np.random.default_rng(i))
        differs += unseeded.act(AgentInput.from_state(state, state.to_act)) != moves[0][id(state)]
    assert differs > 0  # the same search, other draws: the seeding is what makes the moves repeat
    rng, checked = np.random.default_rng(4), 0
    for state in positions:
        me = state.to_act
        if any(state.duel) or sum(map(sum, state.set_aside)):
            continue  # a hidden choice already made is part of the hidden state too
        twin = _swap_hidden(state, me, rng)
        if twin.hands == state.hands:
            continue
        views = [player_view(world, me) for world in (state, twin)]
        assert view_digest(views[0]) == view_digest(views[1])
        fresh = make_agent("search:seeded=true,simulations=16")
        fresh.reset(me, np.random.default_rng(7))
        assert fresh.act(AgentInput(views[1])) == moves[0][id(state)]
        checked += 1
    assert checked >= 20


def test_view_digest_changes_with_what_the_player_knows():
    """The digest of a view is the same for an equal view built again and changes when the
    player's own cards, the public history or the seat change."""
    state = random_positions(1, seed=21)[0]
    me = state.to_act
    view = player_view(state, me)
    assert view_digest(view) == view_digest(player_view(state.clone(), me))
    own = state.clone()
    held = [v for v, n in enumerate(own.hands[me]) if n]
    own.hands[me][held[0]] -= 1
    own.hands[me][(held[0] + 1) % len(own.hands[me])] += 1
    history = state.clone()
    history.events = history.events[:-1]
    others = [player_view(own, me), player_view(history, me), player_view(state, 1 - me)]
    assert len({view_digest(view), *(view_digest(v) for v in others)}) == 4


def test_sampled_worlds_agree_with_the_view():
    for state in random_positions(300, seed=5):
        me = state.to_act
        view = player_view(state, me)
        world = sample_state(view, np.random.default_rng(0))
        assert player_view(world, me).hand == view.hand
        assert world.hand_size(1 - me) == state.hand_size(1 - me)
        assert len(world.draw_pile) == len(state.draw_pile)
        assert world.discard == state.discard
        assert legal_actions(world) == legal_actions(state)
        total = [
            sum(h[v] for h in world.hands)
            + sum(a[v] for a in world.set_aside)
            + world.discard[v]
            + world.draw_pile.count(v)
            + world.table_cards().count(v)
            + sum(1 for d in world.duel if d == v)
            for v in range(world.rules.n_values)
        ]
        assert total == world.rules.copies


def test_a_failed_answer_bounds_the_opponent_from_below():
    """R5.5: a failed answer is the defender's lowest card, so what they keep is not lower."""
    # player_0 attacks with a 9; player_1 fails with a 3 (their lowest); then player_0 attacks again
    state = setup_position(([9, 1, 10], [3, 8, 11]), phase="attack", attacker=0, space=3)
    apply_action(state, state.rules.codec.single_base + state.rules.values.index(9))
    apply_action(state, state.rules.codec.sacrifice)
    view = player_view(state, 0)
    low, high = opponent_bounds(view)
    assert state.rules.values[low] == 3 and high == state.rules.n_values
    low, high = opponent_bounds(view, assume_forced_sacrifice=True)
    assert state.rules.values[high] == 9
    for seed in range(50):
        world = sample_state(view, np.random.default_rng(seed))
        held = [state.rules.values[v] for v, n in enumerate(world.hands[1]) for _ in range(n)]
        assert all(3 <= c < 9 for c in held)


def test_rollout_plays_out_exactly_one_round():
    state = new_game(seed=4)
    start = state.rounds_played
    value = play_out_round(state, 0, start)
    assert state.rounds_played == start + 1
    assert value == {None: 0.0, 0: 1.0, 1: -1.0}[state.last_round_winner]
    assert rollout_action(state) in legal_actions(state)


@pytest.mark.parametrize("params", [{}, {"duel_from": 0, "replace_keeper_from": 12}, {"keep_from": 5, "duel_from": 6}])
def test_rollout_replaces_and_duels_as_the_counter(params):
    """The rollout's replace (R4.3) and duel (R5.1) moves are the counter's, at its defaults or
    at given parameters: the counter's own-cards rules are defined once (`CounterRules`)."""
    from tacocat.agents.heuristic import CardCounterAgent, CounterRules

    counter = CardCounterAgent(**params)
    rollout_args = (CounterRules(**params),) if params else ()  # no parameters: the rollout's default
    seen = set()
    for state in random_positions(3000, seed=5):
        if state.phase not in (Phase.REPLACE, Phase.DUEL) or len(legal_actions(state)) == 1:
            continue
        seen.add(state.phase)
        counter.reset(state.to_act, np.random.default_rng(0))
        assert rollout_action(state, *rollout_args) == counter.act(AgentInput.from_state(state, state.to_act))
    assert seen == {Phase.REPLACE, Phase.DUEL}


def test_sampled_world_keeps_the_replaced_counts_in_seat_order():
    """R4.2: `replaced` is per seat; the view holds (own, opponent's). Searching as player_1
    used to store them swapped."""
    # space 2: the arrow points at player_1, who replaces first (R4.2)
    state = setup_position(([1, 2, 3, 4, 5, 6, 7, 8, 9], [2, 3, 4, 5, 6, 7, 8, 9, 10]), space=2, covered=[3])
    assert state.to_act == 1 and state.phase is Phase.REPLACE
    codec = state.rules.codec
    for v in (2, 3):
        apply_action(state, next(a for a in legal_actions(state) if codec.name(a) == f"replace: discard a {v}"))
    apply_action(state, codec.stop)
    assert state.replaced == [None, 2]
    for me in (0, 1):
        world = sample_state(player_view(state, me), np.random.default_rng(me))
        assert world.replaced == state.replaced


@pytest.mark.parametrize("belief", ["on", "off", "soft"])
def test_search_belief_modes_play_legal_deterministic_games(belief):
    def game(seed):
        agents = [make_agent(f"search:simulations=8,belief={belief}"), make_agent("counter:sacrifice_rate=0.3")]
        gens = [np.random.default_rng(seed), np.random.default_rng(99)]
        return play_game(agents, seed=5, agent_generators=gens).actions

    assert game(1) == game(1)


def test_search_belief_controls_the_sampler(monkeypatch):
    """on: every world under the belief; off: none; soft: a mixture at `soft_weight`."""
    import tacocat.agents.search as search_module

    calls = []
    real = search_module.sample_state
    monkeypatch.setattr(
        search_module, "sample_state", lambda view, rng, belief: calls.append(belief) or real(view, rng, belief)
    )
    state = setup_position(([9, 1, 10], [3, 8, 11]), phase="attack", attacker=0, space=3)
    for belief, expected in (("on", {True}), ("off", {False}), ("soft", {True, False})):
        calls.clear()
        agent = make_agent("search", simulations=400, belief=belief, soft_weight=0.5)
        agent.reset(0, np.random.default_rng(0))
        agent.act(AgentInput.from_state(state, 0))
        assert set(calls) == expected, belief
    with pytest.raises(ValueError, match="belief must be one of"):
        make_agent("search", belief="maybe")


def test_sacrifice_rate_makes_a_heuristic_sacrifice_by_choice():
    """R5.5: sacrificing is allowed when the lowest card is below the attack card, even if a
    card could defend; planner never does so by default, sacrifice_rate=1 always does."""
    state = setup_position(([9, 1, 10], [3, 8, 11]), phase="attack", attacker=0, space=3)
    apply_action(state, state.rules.codec.single_base + state.rules.values.index(9))
    inp = AgentInput.from_state(state, 1)
    sacrifice = state.rules.codec.sacrifice
    assert sacrifice in inp.legal_actions
    for spec, expected_sacrifice in (
        ("planner", False),
        ("planner:sacrifice_rate=1.0", True),
        ("counter:sacrifice_rate=1.0", True),
    ):
        agent = make_agent(spec)
        agent.reset(1, np.random.default_rng(0))
        assert (agent.act(inp) == sacrifice) is expected_sacrifice, spec
    with pytest.raises(ValueError, match="sacrifice_rate"):
        make_agent("planner", sacrifice_rate=2)


def _hand(*values: int, n_values: int = 12) -> list[int]:
    hand = [0] * n_values
    for v in values:
        hand[v] += 1
    return hand


def test_counter_duels_above_its_low_reserves():
    """The counter's duel card (R5.1): the lowest spare card at value index >= duel_from; one
    keeper copy is never spent; duel_from=0 is the earlier rule (lowest spare card)."""
    from tacocat.agents.heuristic import cheapest_duel_card

    assert cheapest_duel_card(_hand(0, 1, 5, 9), duel_from=3) == 5  # 1 kept as a reserve
    assert cheapest_duel_card(_hand(0, 1, 5, 9), duel_from=0) == 1
    assert cheapest_duel_card(_hand(0, 0, 5), duel_from=0) == 0  # a second keeper copy
    assert cheapest_duel_card(_hand(0, 0, 5), duel_from=3) == 5
    assert cheapest_duel_card(_hand(0, 1, 2), duel_from=3) == 1  # nothing above: lowest spare
    assert cheapest_duel_card(_hand(4, 4), duel_from=3) == 4


def test_counter_redraws_a_weak_keeper_last():
    """R4.3: middle cards first, then the keeper when its value index is in [keeper_from, keep_from)."""
    from tacocat.agents.heuristic import middle_cards_to_replace, replacement_with_weak_keeper

    assert replacement_with_weak_keeper(_hand(4, 5, 9, 10), 7, 4) == [5, 4]
    assert replacement_with_weak_keeper(_hand(3, 5, 9, 10), 7, 4) == [5]  # a strong keeper stays
    assert replacement_with_weak_keeper(_hand(8, 9, 10), 7, 4) == []  # nothing below keep_from
    hand = _hand(4, 5, 6, 11)
    assert replacement_with_weak_keeper(hand, 7, 12) == middle_cards_to_replace(hand, 7)


@pytest.mark.parametrize("param", ["duel_from", "replace_keeper_from"])
def test_counter_rejects_a_negative_value_index(param):
    with pytest.raises(ValueError, match=param):
        make_agent("counter", **{param: -1})
