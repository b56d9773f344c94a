"""Chance as an engine seam and the one constructor of states (issue 27).

(a) The random path is "draw a `Deal` from the generator, then deal it": seeded games,
    `sample_state` worlds and OpenSpiel traversals match digests recorded before the seam
    existed (tests/seeded_traces.py), and at every round start of random play the deal
    `shuffled_deal` draws from a copy of the generator, given to `apply_action`, makes the
    same state, generator included (R2.2, R6.4).
(b) A given deal is dealt exactly (hands, pile order; the generator untouched); impossible
    deals (wrong sizes, cards not in the deck, a card twice or missing) are refused with an
    `InvalidPositionError` naming the problem and the state unchanged. `reorder_pile` keeps
    the pile's cards and refuses others.
(c) `make_state` rebuilds every state of play from its parts and refuses inconsistent parts,
    naming them. `shaped_returns` is `round_shaping` over every round, added to `returns`.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import seeded_traces
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEFAULT, random_action, rules_configs, seeds, snapshot
from tacocat import InvalidPositionError, Phase, RulesConfig, apply_action, legal_actions, new_game, returns
from tacocat.game.checks import card_counts, make_state
from tacocat.game.engine import reorder_pile, round_shaping, shaped_returns, shuffled_deal
from tacocat.game.state import Deal, GameState

FEW = settings(max_examples=30, deadline=None)
SOME = settings(max_examples=60, deadline=None)
configs = st.one_of(st.just(DEFAULT), rules_configs())
STORED = json.loads(seeded_traces.PATH.read_text())


def play_to_round_end(state: GameState, moves: np.random.Generator) -> int | None:
    """Play random moves until the next one would start a round (R6.4); that move, or None
    when the game ends first."""
    while not state.is_over:
        action = random_action(state, moves)
        probe = state.clone()
        apply_action(probe, action)
        if probe.rounds_played != state.rounds_played and not probe.is_over:
            return action
        apply_action(state, action)
    return None


def next_deal_size(state: GameState, action: int) -> int:
    """The deal size of the round `action` starts."""
    probe = state.clone()
    apply_action(probe, action)
    return probe.deal_size


def random_deal(rules, size: int, order: list[int]) -> Deal:
    """The deal of a deck in `order` (indices into `rules.deck_cards`): the first `size` cards
    to player_0, the next `size` to player_1, the rest the pile."""
    cards = [rules.deck_cards[i] for i in order]
    hands = [[0] * rules.n_values, [0] * rules.n_values]
    for player in (0, 1):
        for v in cards[player * size : (player + 1) * size]:
            hands[player][v] += 1
    return Deal((tuple(hands[0]), tuple(hands[1])), tuple(cards[2 * size :]))


# ---------------------------------------------------------------------------------------
# (a) the random path is unchanged
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(seeded_traces.CONFIGS))
def test_seeded_games_are_those_recorded_before_the_seam(name):
    cfg = seeded_traces.CONFIGS[name]
    got = [seeded_traces.digest(seeded_traces.game_trace(cfg, s)) for s in range(seeded_traces.GAMES)]
    assert got == STORED["games"][name]
    got = [seeded_traces.digest(seeded_traces.sample_trace(cfg, s)) for s in range(seeded_traces.SAMPLED_GAMES)]
    assert got == STORED["samples"][name]


def test_openspiel_traversals_are_those_recorded_before_the_seam():
    pytest.importorskip("pyspiel")
    spiel = STORED["spiel"]
    assert seeded_traces.digest(seeded_traces.spiel_tree("tiny")) == spiel["tiny_tree"]
    assert [
        seeded_traces.digest(seeded_traces.spiel_walk("race", s)) for s in range(seeded_traces.RACE_WALKS)
    ] == spiel["race_walks"]
    assert [
        seeded_traces.digest(seeded_traces.spiel_walk(None, s)) for s in range(seeded_traces.DEFAULT_WALKS)
    ] == spiel["default_walks"]


def test_the_digests_can_fail():
    """Another seed, or one move changed, gives another digest."""
    cfg = seeded_traces.CONFIGS["default"]
    assert seeded_traces.digest(seeded_traces.game_trace(cfg, 1)) != STORED["games"]["default"][0]
    trace = seeded_traces.game_trace(cfg, 0)
    assert seeded_traces.digest(trace[:-1]) != STORED["games"]["default"][0]


@SOME
@given(seed=seeds, cfg=configs)
def test_a_seeded_round_start_is_a_shuffled_deal_dealt(seed, cfg):
    """Every deal of a seeded game is `shuffled_deal` of the game's generator, dealt: a twin
    given those deals (drawn from its own copy of the generator) stays equal, generator
    included, through the whole game."""
    moves = np.random.default_rng(seed + 1)
    live = new_game(cfg, np.random.default_rng(seed))
    twin_rng = np.random.default_rng(seed)
    twin = new_game(cfg, twin_rng, deal=shuffled_deal(live.rules, live.rules.board[cfg.centre], twin_rng))
    assert snapshot(twin) == snapshot(live)
    while not live.is_over:
        action = random_action(live, moves)
        apply_action(live, action)
        if live.rounds_played != twin.rounds_played and not live.is_over:
            apply_action(twin, action, deal=shuffled_deal(twin.rules, live.deal_size, twin.rng))
        else:
            apply_action(twin, action)
        assert snapshot(twin) == snapshot(live)


# ---------------------------------------------------------------------------------------
# (b) given deals
# ---------------------------------------------------------------------------------------
@SOME
@given(seed=seeds, cfg=configs, data=st.data())
def test_a_given_deal_is_dealt_exactly(seed, cfg, data):
    """new_game and apply_action deal exactly the given hands and pile order and draw nothing
    from the generator; everything else is as the shuffled path makes it."""
    rules = new_game(cfg, 0).rules
    deck = list(range(len(rules.deck_cards)))
    deal = random_deal(rules, rules.board[cfg.centre], data.draw(st.permutations(deck)))
    rng = np.random.default_rng(seed)
    state = new_game(cfg, rng, deal=deal)
    assert state.hands == [list(h) for h in deal.hands] and state.draw_pile == list(deal.pile)
    assert rng.bit_generator.state == np.random.default_rng(seed).bit_generator.state
    assert state.phase is Phase.REPLACE and state.events[-1].kind == "round"
    action = play_to_round_end(state, np.random.default_rng(seed + 1))
    if action is None:
        return
    shuffled = state.clone()
    apply_action(shuffled, action)
    deal = random_deal(rules, shuffled.deal_size, data.draw(st.permutations(deck)))
    apply_action(state, action, deal=deal)
    assert state.hands == [list(h) for h in deal.hands] and state.draw_pile == list(deal.pile)
    assert rng.bit_generator.state == np.random.default_rng(seed).bit_generator.state
    state.hands, state.draw_pile = shuffled.hands, shuffled.draw_pile
    assert snapshot(state)[:-1] == snapshot(shuffled)[:-1], "the same round start but for the cards"


def _corrupt(deal: Deal, rules, kind: str, pick: int) -> tuple[object, str]:
    """`deal` made impossible in one way, and the message that must name it."""
    hands = [list(h) for h in deal.hands]
    pile = list(deal.pile)
    values = rules.values
    if kind == "short hand":
        player = pick % 2
        v = next(v for v, n in enumerate(hands[player]) if n)
        hands[player][v] -= 1
        pile.append(v)
        size = sum(deal.hands[player])
        return Deal((hands[0], hands[1]), pile), (
            rf"player_{player}'s hand holds {size - 1} card\(s\), but a round "
            rf"on space \d+ deals {size} \(R2.2\)"
        )
    if kind == "long hand":
        player = pick % 2
        hands[player][pile.pop()] += 1
        return Deal((hands[0], hands[1]), pile), rf"player_{player}'s hand holds {sum(hands[player])} card\(s\)"
    if kind == "card not in the deck":
        bad = [rules.n_values, -1, 1.5, True, None, "3"][pick % 6]
        pile[pick % len(pile)] = bad
        return Deal(deal.hands, pile), rf"the pile holds {re.escape(repr(bad))}, which is not a card of this deck"
    if kind == "a card twice":  # one card of the pile made another value's: one too many of it
        i = pick % len(pile)
        old = pile[i]
        pile[i] = (old + 1 + pick % (rules.n_values - 1)) % rules.n_values
        first = min(old, pile[i])  # the lowest value whose count is off is named
        n = rules.copies[first] + (1 if first == pile[i] else -1)
        return Deal(deal.hands, pile), (
            rf"value {values[first]} is dealt {n} time\(s\), but the deck has "
            rf"{rules.copies[first]}"
        )
    if kind == "a card missing":
        v = pile.pop(pick % len(pile))
        return Deal(deal.hands, pile), (
            rf"value {values[v]} is dealt {rules.copies[v] - 1} time\(s\), but the deck "
            rf"has {rules.copies[v]}"
        )
    if kind == "hands of the wrong form":
        bad = [[hands[0][:-1], hands[1]], [hands[0]], [[-1, *hands[0][1:]], hands[1]], "hands"][pick % 4]
        return Deal(bad, pile), rf"hands must be two lists of {rules.n_values} non-negative counts"  # type: ignore[arg-type]  # bad on purpose
    if kind == "pile of the wrong form":
        return Deal(deal.hands, [np.asarray(pile), "pile", None][pick % 3]), "pile must be a list of value indices"
    assert kind == "not a Deal"
    return [(deal.hands, deal.pile), {"hands": deal.hands, "pile": deal.pile}][pick % 2], "expected a Deal"


IMPOSSIBLE = [
    "short hand",
    "long hand",
    "card not in the deck",
    "a card twice",
    "a card missing",
    "hands of the wrong form",
    "pile of the wrong form",
    "not a Deal",
]


@SOME
@given(seed=seeds, cfg=configs, kind=st.sampled_from(IMPOSSIBLE), pick=st.integers(0, 10**6))
def test_an_impossible_deal_is_refused_naming_it_and_changes_nothing(seed, cfg, kind, pick):
    rng = np.random.default_rng(seed)
    rules = new_game(cfg, 0).rules
    bad, message = _corrupt(shuffled_deal(rules, rules.board[cfg.centre], rng), rules, kind, pick)
    before = rng.bit_generator.state
    with pytest.raises(InvalidPositionError, match=r"^deal: .*" + message):
        new_game(cfg, rng, deal=bad)  # type: ignore[arg-type]  # bad on purpose
    assert rng.bit_generator.state == before
    state = new_game(cfg, rng)
    action = play_to_round_end(state, np.random.default_rng(seed + 1))
    if action is None:
        return
    bad, message = _corrupt(shuffled_deal(rules, next_deal_size(state, action), rng), rules, kind, pick)
    unchanged, events, legal = snapshot(state), state.events, legal_actions(state)
    with pytest.raises(InvalidPositionError, match=r"^deal: .*" + message):
        apply_action(state, action, deal=bad)  # type: ignore[arg-type]  # bad on purpose
    assert snapshot(state) == unchanged and state.events is events and legal_actions(state) == legal


@FEW
@given(seed=seeds, cfg=configs)
def test_a_deal_for_a_move_that_starts_no_round_is_refused(seed, cfg):
    state = new_game(cfg, seed)
    rules = state.rules
    deal = shuffled_deal(rules, state.deal_size, np.random.default_rng(seed))
    unchanged = snapshot(state)
    action = legal_actions(state)[0]  # a replace step's move never ends a round
    with pytest.raises(InvalidPositionError, match=r"deal: .* starts no round, so there is nothing to deal"):
        apply_action(state, action, deal=deal)
    assert snapshot(state) == unchanged
    apply_action(state, action)  # and the move itself is fine


@SOME
@given(seed=seeds, cfg=configs, data=st.data())
def test_reorder_pile_keeps_the_cards_and_refuses_others(seed, cfg, data):
    state = new_game(cfg, seed)
    pile = list(state.draw_pile)
    order = data.draw(st.permutations(pile))
    reorder_pile(state, order)
    assert state.draw_pile == list(order) and state.draw_pile is not order
    unchanged = snapshot(state)
    i = data.draw(st.integers(0, len(pile) - 1))
    other = next(v for v in range(state.rules.n_values) if v != pile[i])
    for bad in (
        pile[:i] + pile[i + 1 :],
        [*pile, pile[i]],
        [*pile[:i], other, *pile[i + 1 :]],
        [*pile[:i], -1],
        [*pile[:i], True, *pile[i + 1 :]],
        "pile",
        7,
    ):
        with pytest.raises(InvalidPositionError, match="is not an order of the draw pile's"):
            reorder_pile(state, bad)  # type: ignore[arg-type]  # bad on purpose
        assert snapshot(state) == unchanged


def test_the_openspiel_adapter_stages_no_generator():
    """OpenSpiel's chance outcomes go through the engine's deal, not a Generator subclass."""
    openspiel = pytest.importorskip("tacocat.game.openspiel")
    generators = [
        name for name, obj in vars(openspiel).items() if isinstance(obj, type) and issubclass(obj, np.random.Generator)
    ]
    assert generators == []


# ---------------------------------------------------------------------------------------
# (c) states from their parts
# ---------------------------------------------------------------------------------------
PARTS = (
    "space",
    "covered",
    "hands",
    "draw_pile",
    "rng",
    "rounds_played",
    "phase",
    "to_act",
    "set_aside",
    "discard",
    "replace_queue",
    "replace_cap",
    "replaced",
    "duel",
    "last_duel",
    "attacker",
    "attack",
    "answers",
    "winner",
    "truncated",
    "last_round_winner",
    "events",
)


def parts(state: GameState) -> dict:
    """The parts `make_state` takes, copied from a state."""
    out = {name: getattr(state, name) for name in PARTS}
    return {
        **out,
        **{name: [list(h) for h in out[name]] for name in ("hands", "set_aside")},
        **{
            name: list(out[name])
            for name in (
                "covered",
                "draw_pile",
                "discard",
                "replace_queue",
                "replace_cap",
                "replaced",
                "duel",
                "attack",
                "answers",
                "events",
            )
        },
    }


def states_of_play(seed: int, cfg) -> list[GameState]:
    moves = np.random.default_rng(seed + 1)
    state = new_game(cfg, seed)
    out = [state.clone()]
    while not state.is_over:
        apply_action(state, random_action(state, moves))
        out.append(state.clone())
    return out


@FEW
@given(seed=seeds, cfg=configs)
def test_make_state_rebuilds_every_state_of_play_from_its_parts(seed, cfg):
    for state in states_of_play(seed, cfg):
        given_parts = parts(state)
        built = make_state(state.rules, **given_parts)
        state.actions = []  # (the move log is not a part: a built state starts without one)
        assert snapshot(built) == snapshot(state)
        assert legal_actions(built) == legal_actions(state)
        built.hands[0][0] += 1
        built.draw_pile.append(0)
        built.events.append(None)
        assert (
            given_parts["hands"] == state.hands
            and given_parts["draw_pile"] == state.draw_pile
            and given_parts["events"] == state.events
        ), "the built state owns copies of its parts"


def _inconsistent(state: GameState, kind: str, pick: int) -> tuple[dict, str] | None:
    """The parts of `state` changed to be inconsistent in one way, and the message that must
    name it; None where the kind does not apply to the state."""
    p = parts(state)
    over, phase = state.phase is Phase.OVER, state.phase
    held = [v for v, n in enumerate(state.hands[pick % 2]) for _ in range(n)]
    if kind == "a card more":
        p["draw_pile"].append(pick % state.rules.n_values)
        return p, r"value \d+ is held \d+ time\(s\), but the deck has \d+ .* every card must be in exactly one place"
    if kind == "a card lost":
        if not state.draw_pile:
            return None
        p["draw_pile"].pop()
        return p, r"is held \d+ time\(s\), but the deck has"
    if kind == "unequal hands":
        if not held:
            return None
        v = held[pick % len(held)]
        p["hands"][pick % 2][v] -= 1
        p["discard"][v] += 1
        return p, r"hand sizes must be equal \(R4.4\)"
    if kind == "the other player acts":
        if over:
            return None
        p["to_act"] = 1 - state.to_act
        return p, {
            Phase.REPLACE: "must be the first of replace_queue",
            Phase.DUEL: "only player_0's card is ever hidden",
            Phase.ATTACK: "the attacker .* acts",
            Phase.ANSWER: "the defender acts",
        }[phase]
    if kind == "a trick outside the answer phase":
        if phase is Phase.ANSWER or not state.draw_pile:
            return None
        p["attack"].append(p["draw_pile"].pop())
        return p, "attack and answers are only on the table while a trick is answered"
    if kind == "a winner while playing":
        if over:
            return None
        p["winner"] = pick % 2
        return p, "a game is over exactly when it has a winner or was truncated"
    if kind == "over without a result":
        if not over:
            return None
        p["winner"], p["truncated"] = None, False
        return p, "a game is over exactly when it has a winner or was truncated"
    if kind == "the Tacocat on a covered space":
        if over:
            return None
        p["covered"][state.space] = True
        return p, r"the Tacocat cannot stand on covered space \d+ \(R0.5\)"
    if kind == "an attacker before a duel is won":
        if phase not in (Phase.REPLACE, Phase.DUEL):
            return None
        p["attacker"] = pick % 2
        return p, "attacker must be None until a duel is won"
    if kind == "replacing after the replace step":
        if phase is Phase.REPLACE or over:
            return None
        p["replace_queue"] = [state.to_act]
        return p, "replace_queue must be empty once replacing is over"
    assert kind == "a field of the wrong type"
    name, value = [
        ("space", str(state.space)),
        ("phase", int(phase)),
        ("hands", p["hands"][:1]),
        ("covered", p["covered"][:-1]),
        ("to_act", True),
        ("draw_pile", (*tuple(p["draw_pile"]), 1.5)),
        ("events", None),
    ][pick % 7]
    p[name] = value
    return p, f"field {name} must be"


INCONSISTENT = [
    "a card more",
    "a card lost",
    "unequal hands",
    "the other player acts",
    "a trick outside the answer phase",
    "a winner while playing",
    "over without a result",
    "the Tacocat on a covered space",
    "an attacker before a duel is won",
    "replacing after the replace step",
    "a field of the wrong type",
]


@SOME
@given(seed=seeds, cfg=configs, kind=st.sampled_from(INCONSISTENT), pick=st.integers(0, 10**6))
def test_make_state_refuses_inconsistent_parts_naming_them(seed, cfg, kind, pick):
    states = states_of_play(seed, cfg)
    state = states[pick % len(states)]
    case = _inconsistent(state, kind, pick)
    if case is None:
        return
    given_parts, message = case
    with pytest.raises(InvalidPositionError, match="^make_state: .*" + message):
        make_state(state.rules, **given_parts)


def test_make_state_defaults_and_where():
    """Set-asides and the discard pile default to empty; errors name `where`."""
    state = new_game(DEFAULT, 3)
    built = make_state(
        state.rules,
        space=state.space,
        covered=state.covered,
        hands=state.hands,
        draw_pile=state.draw_pile,
        replace_queue=[0, 1],
        replace_cap=[7, 7],
        rng=3,
    )
    assert built.set_aside == [[0] * 12] * 2 and built.discard == [0] * 12 and card_counts(built) == state.rules.copies
    with pytest.raises(InvalidPositionError, match=r"^my position: hand sizes must be equal \(R4.4\), got 7 and 6"):
        hands = [list(state.hands[0]), list(state.hands[1])]
        v = next(v for v, n in enumerate(hands[1]) if n)
        hands[1][v] -= 1
        make_state(
            state.rules,
            space=state.space,
            covered=state.covered,
            hands=hands,
            draw_pile=[*state.draw_pile, v],
            replace_queue=[0, 1],
            replace_cap=[7, 7],
            where="my position",
        )


@FEW
@given(seed=seeds, cfg=configs, reward=st.sampled_from([0.0, 0.1, 0.5, 1.0]))
def test_shaped_returns_is_round_shaping_over_the_game(seed, cfg, reward):
    """What `round_shaping` pays after every move, added in order to the game's returns."""
    cfg = RulesConfig(**{**cfg.model_dump(), "round_reward": reward})
    moves = np.random.default_rng(seed + 1)
    state = new_game(cfg, seed)
    paid = []
    while not state.is_over:
        before = state.rounds_played
        apply_action(state, random_action(state, moves))
        paid.append(round_shaping(state, before))
        assert sum(paid[-1]) == 0.0
    expected = returns(state)
    for shaping in paid:
        expected = [expected[0] + shaping[0], expected[1] + shaping[1]]
    assert shaped_returns(state) == expected
    if abs(sum(shaping[0] for shaping in paid)) > 1e-9:  # rounds won and lost do not cancel out
        assert shaped_returns(state) != returns(state)
