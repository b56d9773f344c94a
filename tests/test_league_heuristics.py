"""The JAX ports of `highcard`, `planner` and `counter` (tacocat/agents/heuristic_jax.py)
against the Python agents (tacocat/agents/heuristic.py): the same action in the same position over at
least 10,000 positions of the default rules and positions of a variant, bit-exact where the
agent draws no random numbers; where `counter` samples opponent hands (choosing among its
widest attacks), the port's sampler is compared with the Python one in distribution and its
count of forced sacrifices bit-exact on the same hands.
Positions come from the reference engine under mixed play (random moves and the planner's), so
both early replace steps and late tricks are visited; the port sees the same observation
vector and mask the Python agent sees, and the public floor on the opponent's cards (R7.3:
nothing else), which `failed_answer_floor` tracks from the moves (tested against the
reference's event log)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from play_positions import mixed_play_positions
from scipy.stats import chi2

from support.lockstep import FAST_COMPILE
from tacocat import RulesConfig, apply_action, legal_actions, new_game
from tacocat.agents.base import AgentInput
from tacocat.agents.heuristic import _forced_sacrifices, attack_cards, keeps_keeper
from tacocat.agents.heuristic_jax import (
    NotPortedError,
    _where_needed,
    attack_sacrifices,
    failed_answer_floor,
    make_heuristic,
    opponent_hand_sampler,
)
from tacocat.agents.registry import make_agent
from tacocat.game.observation import encode
from tacocat.game.ruleset import compile_rules
from tacocat.game.state import Phase
from tacocat.game.view import opponent_bounds, player_view, sample_opponent_hands

VARIANT = RulesConfig(deck={1: 4, 2: 4, 4: 5, 5: 4, 7: 4, 8: 4, 10: 5}, board=(3, 5, 7, 5, 3), round_reward=0.1)


def port_actions(spec: str, config: RulesConfig, inputs: list[AgentInput], key: jax.Array) -> np.ndarray:
    """The port's action in each position (one key per position, split from `key`)."""
    obs = jnp.asarray(np.stack([inp.observation for inp in inputs]))
    mask = jnp.asarray(np.stack([inp.action_mask.astype(bool) for inp in inputs]))
    floor = jnp.asarray([opponent_bounds(inp.view)[0] for inp in inputs], jnp.int32)
    keys = jax.random.split(key, len(inputs))
    port = jax.jit(jax.vmap(make_heuristic(spec, config)), compiler_options=FAST_COMPILE)  # compiled for one call
    return np.asarray(port(obs, mask, keys, floor))


def sampled(rules_config: RulesConfig, inp: AgentInput) -> bool:
    """`counter` samples opponent hands here: an attack with two or more widest candidates."""
    rules = compile_rules(rules_config)
    if inp.view.phase is not Phase.ATTACK:
        return False
    hand = list(inp.view.hand)
    legal = [a for a in inp.legal_actions if keeps_keeper(hand, attack_cards(rules, a))] or list(inp.legal_actions)
    width = max(len(attack_cards(rules, a)) for a in legal)
    return sum(len(attack_cards(rules, a)) == width for a in legal) > 1


def compare(spec: str, config: RulesConfig, inputs: list[AgentInput]) -> tuple[int, set[Phase]]:
    agent = make_agent(spec)
    if spec.startswith("counter"):  # the sampled choices are compared in distribution (below)
        inputs = [inp for inp in inputs if not sampled(config, inp)]
    expected = np.array([agent.act(inp) for inp in inputs])
    got = port_actions(spec, config, inputs, jax.random.key(0))
    wrong = np.flatnonzero(got != expected)
    assert wrong.size == 0, (
        f"{spec}: {wrong.size} of {len(inputs)} positions differ; first: {inputs[wrong[0]].view.phase.name}, "
        f"python {expected[wrong[0]]}, jax {got[wrong[0]]}"
    )
    assert all(inputs[i].action_mask[a] for i, a in enumerate(got)), f"{spec}: the port chose an illegal action"
    return len(inputs), {inp.view.phase for inp in inputs}


@pytest.fixture(scope="module")
def default_positions() -> list[AgentInput]:
    return mixed_play_positions(RulesConfig(), 11_000, seed=9)  # (10,000 and more where counter does not sample)


@pytest.mark.parametrize("spec", ["highcard", "planner", "planner:keep_from=5"])
def test_port_equals_python_agent_on_10000_positions(spec: str, default_positions: list[AgentInput]) -> None:
    n, phases = compare(spec, RulesConfig(), default_positions)
    assert n >= 10_000
    assert {Phase.REPLACE, Phase.DUEL, Phase.ATTACK, Phase.ANSWER} <= phases


@pytest.mark.parametrize("spec", ["counter", "counter:duel_from=0,replace_keeper_from=12,keep_from=6"])
def test_counter_port_equals_python_agent_where_it_does_not_sample(
    spec: str, default_positions: list[AgentInput]
) -> None:
    """Every position of the 11,000 where `counter` draws no random numbers: bit-exact."""
    n, phases = compare(spec, RulesConfig(), default_positions)
    assert n >= 10_000
    assert {Phase.REPLACE, Phase.DUEL, Phase.ATTACK, Phase.ANSWER} <= phases


@pytest.fixture(scope="module")
def sampled_positions(default_positions: list[AgentInput]) -> list[AgentInput]:
    """Attack positions where `counter` samples opponent hands, those with a floor first."""
    chosen = [inp for inp in default_positions if sampled(RulesConfig(), inp)]
    chosen.sort(key=lambda inp: -opponent_bounds(inp.view)[0])
    assert len(chosen) >= 60 and opponent_bounds(chosen[10].view)[0] > 0
    return chosen[:60]


def python_hands(inp: AgentInput, draws: int, seed: int) -> np.ndarray:
    """(draws, V) opponent hands from the one sampler the Python agents use."""
    rng = np.random.default_rng(seed)
    hands = sample_opponent_hands(inp.view, rng, draws, assume_forced_sacrifice=False)
    return np.array([np.bincount(h, minlength=inp.view.rules.n_values) for h in hands])


def port_hands(inp: AgentInput, draws: int, seed: int, floor: int | None = None) -> np.ndarray:
    view = inp.view
    rules = view.rules
    sample = opponent_hand_sampler(rules, draws)
    floor = opponent_bounds(view)[0] if floor is None else floor
    return np.asarray(
        sample(
            jax.random.key(seed),
            jnp.asarray(view.unseen()),
            jnp.int32(view.hand_sizes[view.opponent]),
            jnp.int32(floor),
        )
    )


def hand_distribution_p_value(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    """Chi-square homogeneity of the count of each value in the hands of `a` and `b`, summed
    over positions and values."""
    stat, dof = 0.0, 0
    for hands_a, hands_b in zip(a, b, strict=True):
        for v in range(hands_a.shape[1]):
            counts = np.union1d(hands_a[:, v], hands_b[:, v])
            if counts.size < 2:
                continue
            table = np.array([[np.sum(hands_a[:, v] == c), np.sum(hands_b[:, v] == c)] for c in counts], float)
            expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
            stat += float(((table - expected) ** 2 / expected).sum())
            dof += counts.size - 1
    return float(chi2.sf(stat, dof))


def test_counter_port_samples_opponent_hands_like_python(sampled_positions: list[AgentInput]) -> None:
    """The port's hidden-hand sampler against `sample_opponent_hands` (no forced-sacrifice
    belief) at 60 positions where counter samples, 400 hands each: every hand has the
    opponent's size and unseen cards only, and each value's count has the same distribution."""
    ours, theirs = [], []
    for i, inp in enumerate(sampled_positions):
        hands = port_hands(inp, 400, seed=i)
        assert (hands.sum(1) == inp.view.hand_sizes[inp.view.opponent]).all()
        assert (hands <= np.asarray(inp.view.unseen())).all()
        ours.append(hands)
        theirs.append(python_hands(inp, 400, seed=i))
    assert hand_distribution_p_value(theirs, ours) > 1e-3


def test_the_sampler_test_catches_a_sampler_without_the_floor(sampled_positions: list[AgentInput]) -> None:
    """Ignoring the opponent's failed answers changes the hands: the test can fail."""
    with_floor = [inp for inp in sampled_positions if opponent_bounds(inp.view)[0] > 0]
    theirs = [python_hands(inp, 400, seed=i) for i, inp in enumerate(with_floor)]
    ours = [port_hands(inp, 400, seed=i, floor=0) for i, inp in enumerate(with_floor)]
    assert hand_distribution_p_value(theirs, ours) < 1e-6


def test_counter_port_counts_forced_sacrifices_like_python(sampled_positions: list[AgentInput]) -> None:
    """Given the same hands, the port's count of forced sacrifices equals `_forced_sacrifices`
    for every attack the opponent's hand can answer, bit-exact (60 positions x 16 hands)."""
    rules = compile_rules(RulesConfig())
    count = jax.jit(attack_sacrifices(rules), compiler_options=FAST_COMPILE)
    for i, inp in enumerate(sampled_positions):
        size = inp.view.hand_sizes[inp.view.opponent]  # R5.4: an attack leaves both players a card
        attacks = [a for a, move in enumerate(rules.codec.moves) if move.kind.is_attack and len(move.cards) < size]
        hands = python_hands(inp, 16, seed=i)
        got = np.asarray(count(jnp.asarray(hands), jnp.asarray(attacks)))
        expected = np.array(
            [[_forced_sacrifices(rules, list(h), attack_cards(rules, a)) for a in attacks] for h in hands]
        )
        np.testing.assert_array_equal(got, expected)


@pytest.mark.slow  # over 15 s on the 2-core machine; `-m 'not slow'` skips it
def test_failed_answer_floor_tracks_the_event_log() -> None:
    """The floor kept from the moves equals `opponent_bounds` of the reference's events, for
    both players, at every step of 300 games of mixed play."""
    config = RulesConfig()
    update = jax.jit(failed_answer_floor(config))
    rng = np.random.default_rng(11)
    guide = make_agent("planner")
    checked = raised = 0
    for _ in range(300):
        state = new_game(config, rng)
        floor = jnp.zeros(2, jnp.int32)
        while not state.is_over:
            actor, rounds = state.current_player, state.rounds_played
            inp = AgentInput.from_state(state, actor)
            legal = legal_actions(state)
            move = guide.act(inp) if rng.random() < 0.5 else legal[int(rng.integers(len(legal)))]
            obs = encode(state, actor)
            apply_action(state, move)
            floor = update(
                floor,
                jnp.asarray(obs),
                jnp.int32(move),
                jnp.int32(actor),
                jnp.bool_(state.rounds_played != rounds or state.is_over),
            )
            if state.is_over:
                break
            for player in (0, 1):  # the floor on `player`'s cards is the low bound their opponent holds
                assert int(floor[player]) == opponent_bounds(player_view(state, 1 - player))[0]
            checked += 1
            raised += int(floor.max() > 0)
    assert checked > 10_000 and raised > 1_000


@pytest.mark.parametrize("spec", ["highcard", "planner", "counter"])
def test_port_equals_python_agent_on_a_variant(spec: str) -> None:
    compare(spec, VARIANT, mixed_play_positions(VARIANT, 2_000, seed=10))


def test_the_comparison_catches_a_wrong_port(default_positions: list[AgentInput]) -> None:
    """highcard's port is not planner's: comparing the wrong pair fails (the test can fail)."""
    agent = make_agent("planner")
    expected = np.array([agent.act(inp) for inp in default_positions[:2000]])
    got = port_actions("highcard", RulesConfig(), default_positions[:2000], jax.random.key(0))
    assert (got != expected).sum() > 100


@pytest.mark.parametrize(
    "spec, message",
    [
        ("search", "no JAX port"),
        ("planner:sacrifice_rate=0.5", "sacrifice_rate=0"),
        ("counter:sacrifice_rate=0.1", "sacrifice_rate=0"),
        ("counter:samples=0", "samples must be"),
        ("highcard:keep_from=3", "no parameter 'keep_from'"),
    ],
)
def test_unported_specs_are_refused(spec: str, message: str) -> None:
    with pytest.raises(NotPortedError, match=message):
        make_heuristic(spec, RulesConfig())


def test_counter_sampling_batched_equals_one_by_one(sampled_positions: list[AgentInput]) -> None:
    """Under vmap the port samples hands only for the rows that need them (packed into a
    buffer, scattered back): each needing row's forced-sacrifice sums equal the unbatched
    computation's with the same key, among 9 times as many rows that do not need them."""
    rules = compile_rules(RulesConfig())
    forced = _where_needed(rules, 16)
    inputs = sampled_positions[:40]
    rows = len(inputs) * 10
    needed = np.zeros(rows, bool)
    needed[::10] = True  # the needing rows are spread over the batch, and fit its eighth
    picks = [inputs[i // 10] for i in range(rows)]
    keys = jax.random.split(jax.random.key(4), rows)
    unseen = jnp.asarray([inp.view.unseen() for inp in picks])
    size = jnp.asarray([inp.view.hand_sizes[inp.view.opponent] for inp in picks])
    floor = jnp.asarray([opponent_bounds(inp.view)[0] for inp in picks])
    ids = jnp.tile(jnp.asarray([a for a, m in enumerate(rules.codec.moves) if m.kind.is_attack][:9]), (rows, 1))
    batched = np.asarray(
        jax.jit(jax.vmap(forced), compiler_options=FAST_COMPILE)(jnp.asarray(needed), keys, unseen, size, floor, ids)
    )
    one = jax.jit(forced, compiler_options=FAST_COMPILE)
    for r in np.flatnonzero(needed):
        np.testing.assert_array_equal(batched[r], np.asarray(one(True, keys[r], unseen[r], size[r], floor[r], ids[r])))
    assert batched[needed].any()
