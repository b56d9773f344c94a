"""One scenario per rule of R1.3-R1.5, R2 and R4-R6, each built from an explicit position
(`setup_position`: hands, draw pile order, discard, space, tiles, phase, attacker ...), never
from a lucky seed. Expected outcomes are worked out from RULES_REFERENCE.md in the comments.

Default rules unless stated: values 1..12, board [4, 6, 9, 7, 9, 6, 4] (centre = space 3, deal 7,
two arrows; spaces 0-2 point at player_1, spaces 4-6 at player_0).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from conftest import DEFAULT, act, card_counts, hand, names, pile, play_random, values_of
from tacocat import (
    GameState,
    IllegalActionError,
    ObservationLayout,
    Phase,
    RulesConfig,
    apply_action,
    encode,
    legal_actions,
    new_game,
    returns,
    setup_position,
)
from tacocat.game.engine import next_space

LAYOUT = ObservationLayout(new_game(DEFAULT, 0).rules)


def ix(value: int, cfg: RulesConfig = DEFAULT) -> int:
    """Value index of a card value (events and state fields use indices)."""
    return cfg.values.index(value)


def obs(state: GameState, player: int, name: str) -> list[float]:
    return encode(state, player)[LAYOUT.slices[name]].tolist()


def full_deck(state: GameState) -> bool:
    return card_counts(state) == state.rules.copies


# ---------------------------------------------------------------------------------------
# R2 set-up
# ---------------------------------------------------------------------------------------
def test_R2_new_game_setup():
    state = new_game(DEFAULT, 7)
    assert state.space == 3 and not any(state.covered)  # R2.1
    assert [state.hand_size(p) for p in (0, 1)] == [7, 7]  # R2.2 centre deals 7
    assert len(state.draw_pile) == 38 - 14  # R2.3 the rest is the draw pile
    assert sum(state.discard) == 0
    assert full_deck(state)
    assert state.phase is Phase.REPLACE and state.rounds_played == 0


# ---------------------------------------------------------------------------------------
# R4 replace
# ---------------------------------------------------------------------------------------
P0_CENTRE = [1, 2, 3, 4, 5, 6, 7]
P1_CENTRE = [6, 7, 8, 9, 10, 11, 12]
TOP9 = [12, 11, 10, 9, 8, 1, 2, 3, 4]  # the next nine cards to be drawn, in order


def centre_position() -> GameState:
    return setup_position((P0_CENTRE, P1_CENTRE), draw_pile=pile(DEFAULT, P0_CENTRE, P1_CENTRE, top=TOP9))


def test_R4_1_two_arrow_centre_both_replace_nothing_revealed_until_both_finished():
    state = centre_position()
    assert state.arrow is None and state.phase is Phase.REPLACE and state.to_act == 0
    assert names(state) == {f"replace: discard a {v}" for v in P0_CENTRE} | {"replace: stop"}
    pile_before = list(state.draw_pile)
    events_before = list(state.events)

    act(state, "replace: discard a 7", "replace: discard a 6")
    # set aside, but nothing discarded face up nor drawn; the public hand size is still 7
    assert hand(state, 0) == [1, 2, 3, 4, 5]
    assert state.hand_size(0) == 7
    assert state.draw_pile == pile_before and sum(state.discard) == 0
    assert state.to_act == 0, "player_0 may go on replacing"

    act(state, "replace: stop")
    assert state.phase is Phase.REPLACE and state.to_act == 1
    assert state.draw_pile == pile_before and sum(state.discard) == 0
    assert state.events == events_before, "no replace event before both finished"
    assert state.replaced == [None, None]
    # what player_1 sees: hand sizes 7/7, no face-up cards, nothing replaced yet
    assert obs(state, 1, "hand_sizes") == [7, 7]
    assert obs(state, 1, "discard") == [0] * 12
    assert obs(state, 1, "replaced") == [0, 0]

    # player_1 may replace the whole hand (0 up to all 7)
    for v in P1_CENTRE:
        assert f"replace: discard a {v}" in names(state)
        act(state, f"replace: discard a {v}")
    assert names(state) == {"replace: stop"}
    assert state.hand_size(1) == 7 and len(state.draw_pile) == len(pile_before)

    act(state, "replace: stop")
    # revealed together: 2 + 7 cards face up, 9 drawn from the top of the pile
    assert state.phase is Phase.DUEL
    assert values_of(state, state.discard) == sorted([6, 7, *P1_CENTRE])
    assert state.replaced == [2, 7]
    assert state.draw_pile == pile_before[:-9]
    assert Counter(hand(state, 0) + hand(state, 1)) == Counter([1, 2, 3, 4, 5, *TOP9])
    assert Counter([1, 2, 3, 4, 5]) <= Counter(hand(state, 0))
    assert [state.hand_size(p) for p in (0, 1)] == [7, 7]  # R4.4
    assert {e[:2] for e in state.events if e[0] == "replace"} == {("replace", 0), ("replace", 1)}
    assert full_deck(state)


def test_R4_1_both_may_replace_nothing():
    state = centre_position()
    act(state, "replace: stop", "replace: stop")
    assert state.phase is Phase.DUEL
    assert hand(state, 0) == P0_CENTRE and hand(state, 1) == sorted(P1_CENTRE)
    assert state.replaced == [0, 0] and sum(state.discard) == 0


def test_R4_1_second_player_is_not_capped_on_two_arrow_space():
    # player_0 replaced nothing; player_1 may still replace its whole hand (no R4.2 cap)
    state = centre_position()
    act(state, "replace: stop")
    for v in P1_CENTRE:
        act(state, f"replace: discard a {v}")
    act(state, "replace: stop")
    assert state.replaced == [0, 7]
    assert hand(state, 1) == sorted(TOP9[:7])
    assert hand(state, 0) == P0_CENTRE


# space 2 (deal 9): the arrow points at player_1 (trailing), who replaces first; 3 was left, so covered
P0_S2 = [1, 2, 3, 4, 5, 6, 7, 8, 9]
P1_S2 = [2, 3, 4, 5, 6, 7, 8, 9, 10]
TOP_S2 = [11, 12, 10, 11, 12, 1]


def space2_position(**kw) -> GameState:
    return setup_position((P0_S2, P1_S2), space=2, covered=[3], draw_pile=pile(DEFAULT, P0_S2, P1_S2, top=TOP_S2), **kw)


def test_R4_2_arrow_player_replaces_first_then_opponent_at_most_as_many():
    state = space2_position()
    assert state.arrow == 1 and state.to_act == 1
    assert names(state) == {f"replace: discard a {v}" for v in P1_S2} | {"replace: stop"}
    act(state, "replace: discard a 2", "replace: discard a 3", "replace: discard a 4", "replace: stop")
    # revealed and drawn at once (one-arrow space: no simultaneity)
    assert values_of(state, state.discard) == [2, 3, 4]
    assert hand(state, 1) == sorted([5, 6, 7, 8, 9, 10, *TOP_S2[:3]])
    assert state.replaced[1] == 3
    # player_0 may now replace 0, 1, 2 or 3 cards: exactly three set-asides are offered
    assert state.to_act == 0 and state.phase is Phase.REPLACE
    for k in range(3):
        assert any(n.startswith("replace: discard") for n in names(state)), f"after {k} set aside"
        act(state, f"replace: discard a {k + 1}")
    assert names(state) == {"replace: stop"}, "the cap of 3 is reached"
    act(state, "replace: stop")
    assert state.phase is Phase.DUEL
    assert hand(state, 0) == sorted([4, 5, 6, 7, 8, 9, *TOP_S2[3:6]])
    assert state.replaced == [3, 3]
    assert [state.hand_size(p) for p in (0, 1)] == [9, 9]  # R4.4


def test_R4_2_second_player_may_replace_fewer():
    state = space2_position()
    act(state, "replace: discard a 10", "replace: discard a 9", "replace: stop")
    act(state, "replace: discard a 1", "replace: stop")
    assert state.phase is Phase.DUEL
    assert state.replaced == [1, 2]
    assert values_of(state, state.discard) == [1, 9, 10]
    assert [state.hand_size(p) for p in (0, 1)] == [9, 9]


def test_R4_2_cap_zero_skips_the_second_player():
    state = space2_position()
    act(state, "replace: stop")
    # player_1 replaced nothing, so player_0 may replace nothing: straight to the duel
    assert state.phase is Phase.DUEL and state.to_act == 0
    assert state.replaced == [0, 0]
    assert hand(state, 0) == P0_S2 and state.actions == [(1, DEFAULT_STOP)]
    assert ("replace", 0, ()) in state.events and ("replace", 1, ()) in state.events


DEFAULT_STOP = new_game(DEFAULT, 0).rules.codec.stop


@pytest.mark.parametrize("cap", [1, 2, 5])
def test_R4_2_cap_from_a_set_up_second_replacer(cap):
    # the first replacer (player_1) replaced `cap` cards; player_0 may set aside up to `cap`
    state = space2_position(to_act=0, replace_cap=cap)
    for k in range(cap):
        assert names(state) == {f"replace: discard a {v}" for v in P0_S2[k:]} | {"replace: stop"}
        act(state, f"replace: discard a {P0_S2[k]}")
    assert names(state) == {"replace: stop"}
    assert encode(state, 0)[LAYOUT.slices["replace_allowance"]].tolist() == [0]


def test_R4_3_replace_discards_face_up_then_draws_and_drawn_cards_stay():
    # space 4 (deal 9): the arrow points at player_0, who replaces first; two 12s are on top
    p0 = [1, 1, 2, 2, 3, 5, 6, 7, 8]
    p1 = [3, 4, 5, 6, 7, 8, 9, 10, 11]
    state = setup_position((p0, p1), space=4, covered=[3], draw_pile=pile(DEFAULT, p0, p1, top=[12, 12, 9]))
    assert state.to_act == 0
    assert "replace: discard a 12" not in names(state)
    act(state, "replace: discard a 1")
    assert "replace: discard a 1" in names(state)
    act(state, "replace: discard a 1")
    # both 1s are set aside: no longer in hand, cannot be set aside again
    assert "replace: discard a 1" not in names(state)
    act(state, "replace: stop")
    # discarded face up (public to player_1), then the same number drawn from the top
    assert values_of(state, state.discard) == [1, 1]
    assert obs(state, 1, "discard")[ix(1)] == 2
    assert hand(state, 0) == [2, 2, 3, 5, 6, 7, 8, 12, 12]
    assert ("replace", 0, (ix(1), ix(1))) in state.events
    # player_0's step is over: the drawn 12s cannot be discarded in it
    assert state.to_act == 1
    act(state, "replace: discard a 11", "replace: stop")
    assert state.phase is Phase.DUEL
    assert hand(state, 0) == [2, 2, 3, 5, 6, 7, 8, 12, 12]
    assert hand(state, 1) == [3, 4, 5, 6, 7, 8, 9, 9, 10]
    assert full_deck(state)


def test_R4_3_simultaneous_replace_draws_only_after_both_finished():
    # on the two-arrow centre nobody holds a drawn card before the replace step is over
    state = centre_position()
    act(state, "replace: discard a 1", "replace: stop")
    assert 12 not in hand(state, 0) and state.to_act == 1
    act(state, "replace: stop")
    assert state.phase is Phase.DUEL, "no replace turn left in which a drawn card could be discarded"
    assert hand(state, 0) == [2, 3, 4, 5, 6, 7, 12]


def test_R4_4_hand_sizes_stay_equal_through_replace():
    state = space2_position()
    sizes = []
    for move in [
        "replace: discard a 10",
        "replace: discard a 2",
        "replace: stop",
        "replace: discard a 9",
        "replace: stop",
    ]:
        act(state, move)
        sizes.append((state.hand_size(0), state.hand_size(1)))
    assert sizes == [(9, 9)] * 5


# ---------------------------------------------------------------------------------------
# R5 duel and play
# ---------------------------------------------------------------------------------------
def test_R5_1_duel_higher_card_attacks_and_both_are_discarded():
    state = setup_position(([3, 9, 11], [4, 8, 10]), phase="duel")
    assert names(state) == {"duel: play a 3", "duel: play a 9", "duel: play a 11"}
    act(state, "duel: play a 9")
    # player_0's card is chosen, hidden: still counted in its hand size, not yet face up
    assert state.phase is Phase.DUEL and state.to_act == 1
    assert state.hand_size(0) == 3 and sum(state.discard) == 0 and state.last_duel is None
    act(state, "duel: play a 4")
    assert state.last_duel == (ix(9), ix(4))
    assert values_of(state, state.discard) == [4, 9]
    assert state.attacker == 0 and state.phase is Phase.ATTACK and state.to_act == 0
    assert hand(state, 0) == [3, 11] and hand(state, 1) == [8, 10]


def test_R5_1_duel_player_1_higher_attacks():
    state = setup_position(([3, 9, 11], [4, 8, 10]), phase="duel")
    act(state, "duel: play a 3", "duel: play a 8")
    assert state.attacker == 1 and state.phase is Phase.ATTACK and state.to_act == 1
    assert values_of(state, state.discard) == [3, 8]


def test_R5_2_tie_reduels_then_decisive_duel_with_one_card_each_goes_to_showdown():
    state = setup_position(([5, 9, 2], [5, 7, 1]), phase="duel")
    act(state, "duel: play a 5", "duel: play a 5")
    # tie: both discarded, duel again, nobody attacks
    assert state.phase is Phase.DUEL and state.to_act == 0 and state.attacker is None
    assert values_of(state, state.discard) == [5, 5]
    assert hand(state, 0) == [2, 9] and hand(state, 1) == [1, 7]
    act(state, "duel: play a 9", "duel: play a 7")
    # player_0 won the duel, but each holds one card: no play phase, showdown 2 vs 1
    showdown = [e for e in state.events if e[0] == "showdown"]
    assert showdown == [("showdown", ix(2), ix(1), 1)]
    assert not any(e[0] == "attack" for e in state.events)
    assert state.rounds_played == 1 and state.space == 4 and state.covered[3]


def test_R5_2_tie_with_one_card_each_goes_to_showdown():
    state = setup_position(([6, 2], [6, 9]), phase="duel")
    act(state, "duel: play a 6", "duel: play a 6")
    assert [e for e in state.events if e[0] == "showdown"] == [("showdown", ix(2), ix(9), 0)]
    assert state.rounds_played == 1 and state.space == 2 and state.covered[3]


def test_R5_2_decisive_duel_leaving_two_cards_each_goes_to_play():
    state = setup_position(([6, 2, 3], [5, 9, 4]), phase="duel")
    act(state, "duel: play a 6", "duel: play a 5")
    assert state.phase is Phase.ATTACK and state.attacker == 0 and state.rounds_played == 0


# attacker player_0 holds 2 3 4 4 4 5 7 9 9 (nine cards), player_1 nine cards
P0_ATTACK = [2, 3, 4, 4, 4, 5, 7, 9, 9]
P1_ATTACK = [1, 1, 6, 6, 8, 10, 11, 12, 12]


def test_R5_3_attack_enumeration_exact():
    state = setup_position((P0_ATTACK, P1_ATTACK), phase="attack", attacker=0, space=2, covered=[3])
    expected = {
        # singles: one per held value
        "attack: single 2",
        "attack: single 3",
        "attack: single 4",
        "attack: single 5",
        "attack: single 7",
        "attack: single 9",
        # sets: two or more of a value (three 4s, two 9s)
        "attack: set 2x4",
        "attack: set 3x4",
        "attack: set 2x9",
        # sequences: three or more consecutive values, one card each, from the run 2-3-4-5
        "attack: sequence 2-3-4",
        "attack: sequence 3-4-5",
        "attack: sequence 2-3-4-5",
    }
    assert names(state) == expected


@pytest.mark.parametrize(
    ("move", "table", "left"),
    [
        ("attack: single 7", [7], [2, 3, 4, 4, 4, 5, 9, 9]),
        ("attack: set 3x4", [4, 4, 4], [2, 3, 5, 7, 9, 9]),
        ("attack: sequence 2-3-4-5", [5, 4, 3, 2], [4, 4, 7, 9, 9]),
    ],
)
def test_R5_3_attack_puts_cards_on_the_table_highest_first(move, table, left):
    state = setup_position((P0_ATTACK, P1_ATTACK), phase="attack", attacker=0)
    act(state, move)
    assert state.phase is Phase.ANSWER and state.to_act == 1
    assert [DEFAULT.values[v] for v in state.attack] == table
    assert hand(state, 0) == left
    assert state.hand_size(0) + len(state.attack) == state.hand_size(1)  # R4.4 with the trick


def test_R5_3_sequence_needs_consecutive_values():
    # deck without 4 and 8: 3-5-6 is no sequence, 5-6-7 is
    cfg = RulesConfig(deck={1: 3, 2: 3, 3: 3, 5: 3, 6: 3, 7: 3, 9: 3}, board=(4, 5, 4))
    state = setup_position(([2, 3, 5, 6, 7], [1, 1, 9, 9, 9]), config=cfg, phase="attack", attacker=0)
    assert names(state) == {
        "attack: single 2",
        "attack: single 3",
        "attack: single 5",
        "attack: single 6",
        "attack: single 7",
        "attack: sequence 5-6-7",
    }


@pytest.mark.parametrize(
    ("attacker_hand", "expected"),
    [
        # three cards: a set of 3 or a sequence of 3 would leave no card
        ([4, 4, 4], {"attack: single 4", "attack: set 2x4"}),
        ([5, 6, 7], {"attack: single 5", "attack: single 6", "attack: single 7"}),
        # four cards: sequences of 3 but not 4
        (
            [5, 6, 7, 8],
            {
                "attack: single 5",
                "attack: single 6",
                "attack: single 7",
                "attack: single 8",
                "attack: sequence 5-6-7",
                "attack: sequence 6-7-8",
            },
        ),
        # two cards of one value: only a single
        ([9, 9], {"attack: single 9"}),
    ],
)
def test_R5_4_attack_must_keep_one_card(attacker_hand, expected):
    other = [1, 1, 2, 2][: len(attacker_hand)]
    state = setup_position((other, attacker_hand), phase="attack", attacker=1)
    assert state.to_act == 1
    assert names(state) == expected


def test_R5_5_answers_per_card_highest_first_defend_or_sacrifice_lowest():
    # player_0 attacks with the sequence 7-8-9; player_1 answers 9 first, then 8, then 7
    state = setup_position(([1, 2, 12], [3, 6, 8, 9, 10, 11]), phase="answer", attacker=0, attack=[7, 8, 9])
    assert state.to_act == 1
    assert obs(state, 1, "current_attack_card")[ix(9)] == 1
    assert names(state) == {
        "answer: defend with 9",
        "answer: defend with 10",
        "answer: defend with 11",
        "answer: sacrifice",
    }
    act(state, "answer: defend with 10")
    # now the 8: defend with 8, 9, 11 (>= 8), or sacrifice the lowest card (3)
    assert state.to_act == 1 and state.phase is Phase.ANSWER
    assert names(state) == {
        "answer: defend with 8",
        "answer: defend with 9",
        "answer: defend with 11",
        "answer: sacrifice",
    }
    act(state, "answer: sacrifice")
    assert [DEFAULT.values[v] for v in state.answers] == [10, 3]
    assert state.events[-1] == ("answer", 1, ix(3), False)
    assert hand(state, 1) == [6, 8, 9, 11]
    # finally the 7: 8, 9, 11 defend; the lowest card (6) is a real sacrifice
    assert names(state) == {
        "answer: defend with 8",
        "answer: defend with 9",
        "answer: defend with 11",
        "answer: sacrifice",
    }


def test_R5_5_defence_is_equal_or_higher():
    state = setup_position(([2, 8], [7, 8, 9]), phase="answer", attacker=0, attack=[8])
    assert names(state) == {"answer: defend with 8", "answer: defend with 9", "answer: sacrifice"}
    act(state, "answer: defend with 8")
    assert state.events[-2] == ("answer", 1, ix(8), True)
    assert state.attacker == 1, "an equal card defends"


def test_R5_5_lowest_card_high_enough_is_a_defence_no_separate_sacrifice():
    state = setup_position(([1, 2], [5, 7, 9]), phase="answer", attacker=0, attack=[4])
    assert names(state) == {"answer: defend with 5", "answer: defend with 7", "answer: defend with 9"}
    codec = state.rules.codec
    with pytest.raises(IllegalActionError):
        apply_action(state, codec.sacrifice)


def test_R5_5_unable_to_defend_must_sacrifice_lowest():
    state = setup_position(([1, 12], [2, 5, 8]), phase="answer", attacker=0, attack=[10])
    assert names(state) == {"answer: sacrifice"}
    act(state, "answer: sacrifice")
    assert hand(state, 1) == [5, 8]
    assert ("answer", 1, ix(2), False) in state.events


def test_R5_6_all_defences_defender_wins_trick_and_attacks_next():
    state = setup_position(([1, 3, 5, 5], [2, 6, 7, 10, 11, 11]), phase="answer", attacker=0, attack=[6, 6])
    act(state, "answer: defend with 7", "answer: defend with 6")
    assert state.events[-1] == ("trick", 1)
    assert state.attacker == 1 and state.phase is Phase.ATTACK and state.to_act == 1


@pytest.mark.parametrize(
    "answers",
    [
        # a failure on the first (highest) card, defences after it
        ["answer: sacrifice", "answer: defend with 4", "answer: defend with 9"],
        # defences first, a failure on the last card
        ["answer: defend with 9", "answer: defend with 4", "answer: sacrifice"],
    ],
)
def test_R5_6_one_failed_answer_attacker_wins_trick_and_attacks_again(answers):
    # player_0 attacks 3-4-5; player_1 holds 1 4 9 11 ... answer order: 5, 4, 3
    state = setup_position(([2, 12, 12], [1, 4, 9, 11, 7, 6]), phase="answer", attacker=0, attack=[3, 4, 5])
    act(state, *answers)
    assert state.events[-1] == ("trick", 0)
    assert state.attacker == 0 and state.phase is Phase.ATTACK and state.to_act == 0


def test_R5_6_player_1_attacker_and_defender_roles():
    # roles are not tied to seats: player_1 attacks, player_0 defends and wins the trick
    state = setup_position(([5, 9, 10], [2, 3]), phase="answer", attacker=1, attack=[8])
    assert state.to_act == 0
    act(state, "answer: defend with 9")
    assert state.attacker == 0 and state.to_act == 0 and state.phase is Phase.ATTACK


def test_R5_7_trick_cards_discarded_and_play_continues_until_one_card_each():
    discard = [5, 7]  # the duel of this round
    state = setup_position(
        ([1, 2, 12], [3, 6, 8, 9, 10, 11]), phase="answer", attacker=0, attack=[7, 8, 9], discard=discard
    )
    act(state, "answer: defend with 9", "answer: defend with 8", "answer: sacrifice")
    # all six trick cards face up, the table empty, two cards each: attacks continue
    assert values_of(state, state.discard) == sorted([*discard, 7, 8, 9, 9, 8, 3])
    assert state.attack == [] and state.answers == []
    assert state.phase is Phase.ATTACK and state.attacker == 0
    assert [state.hand_size(p) for p in (0, 1)] == [3, 3]
    assert full_deck(state)
    act(state, "attack: single 12", "answer: sacrifice")
    # player_0 12 vs player_1's lowest 6: attacker keeps the attack; two cards each remain
    assert state.phase is Phase.ATTACK and state.attacker == 0 and hand(state, 0) == [1, 2]
    act(state, "attack: single 2", "answer: defend with 10")
    # one card each: no more attacks, showdown 1 vs 11 -> player_0 wins the round (R6.1)
    assert state.rounds_played == 1
    assert [e for e in state.events if e[0] == "showdown"] == [("showdown", ix(1), ix(11), 0)]


# ---------------------------------------------------------------------------------------
# R6 showdown and the Tacocat
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "winner"),
    [
        # defending with the 12 keeps the 3: 4 vs 3, the lower card (player_1's) wins
        ("answer: defend with 12", 1),
        # sacrificing the 3 keeps the 12: 4 vs 12, player_0's lower card wins
        ("answer: sacrifice", 0),
    ],
)
def test_R6_1_showdown_lower_card_wins(answer, winner):
    state = setup_position(([4], [3, 12]), phase="answer", attacker=0, attack=[9])
    act(state, answer)
    showdown = [e for e in state.events if e[0] == "showdown"][-1]
    assert showdown[3] == winner
    assert state.last_round_winner == winner
    assert state.space == (2 if winner == 0 else 4)


def test_R6_2_equal_last_cards_void_round_reshuffle_same_space():
    state = setup_position(([6], [6, 11]), phase="answer", attacker=0, attack=[10], rounds_played=4)
    act(state, "answer: defend with 11")
    assert ("showdown", ix(6), ix(6), None) in state.events
    assert not any(e[0] == "move" for e in state.events)
    # no move, no tile; a new round on the same space with all 38 cards reshuffled
    assert state.space == 3 and not any(state.covered)
    assert state.rounds_played == 5 and state.last_round_winner is None
    assert state.events[-1] == ("round", 6, 3, 7, None)
    assert state.phase is Phase.REPLACE and [state.hand_size(p) for p in (0, 1)] == [7, 7]
    assert sum(state.discard) == 0 and len(state.draw_pile) == 38 - 14
    assert full_deck(state)


ARROW_WINS = RulesConfig(tie_policy="arrow_player_wins")


def duel_to_showdown(last0: int, last1: int, **kw) -> GameState:
    """A duel 12 vs 11 with one card left each: straight to the showdown last0 vs last1 (R5.2)."""
    state = setup_position(([12, last0], [11, last1]), phase="duel", **kw)
    return act(state, "duel: play a 12", "duel: play a 11")


def test_R1_4_arrow_player_wins_tie_on_one_arrow_space():
    # space 2 points at player_1 (trailing); 3 is covered, so player_1 moves 2 -> 4
    state = duel_to_showdown(5, 5, config=ARROW_WINS, space=2, covered=[3])
    assert ("showdown", ix(5), ix(5), 1) in state.events
    assert state.space == 4 and state.covered[2] and state.covered[3]
    # and under the leading arrows the same space points at player_0: 2 -> 1
    lead = ARROW_WINS.with_overrides(arrow_policy="leading")
    state = duel_to_showdown(5, 5, config=lead, space=2, covered=[3])
    assert ("showdown", ix(5), ix(5), 0) in state.events and state.space == 1


def test_R1_4_arrow_player_wins_tie_stays_void_on_two_arrow_space():
    state = duel_to_showdown(5, 5, config=ARROW_WINS)
    assert ("showdown", ix(5), ix(5), None) in state.events
    assert state.space == 3 and not any(state.covered) and state.last_round_winner is None


def test_R1_4_default_tie_on_one_arrow_space_is_void():
    state = duel_to_showdown(5, 5, space=2, covered=[3])
    assert state.space == 2 and state.covered == [False, False, False, True, False, False, False]


@pytest.mark.parametrize(
    ("space", "covered", "winner", "target"),
    [
        (3, [], 0, 2),
        (3, [], 1, 4),
        (3, [1, 2], 0, 0),  # skips both covered spaces
        (4, [3, 5], 0, 2),
        (4, [3, 5], 1, 6),
        (2, [3, 4, 5], 1, 6),
    ],
)
def test_R6_3_tacocat_moves_towards_winner_skipping_covered_and_covers_space_left(space, covered, winner, target):
    last = (2, 3) if winner == 0 else (3, 2)  # the lower card wins
    state = duel_to_showdown(*last, space=space, covered=covered)
    assert ("move", winner, space, target) in state.events
    assert state.space == target
    assert [s for s in range(7) if state.covered[s]] == sorted(set(covered) | {space})
    # R6.4: all 38 cards reshuffled, the next round dealt with the new space's deal size and arrow
    assert [state.hand_size(p) for p in (0, 1)] == [DEFAULT.board[target]] * 2
    assert sum(state.discard) == 0 and len(state.draw_pile) == 38 - 2 * DEFAULT.board[target]
    assert state.phase is Phase.REPLACE and state.arrow == DEFAULT.arrow(target)
    assert state.to_act == (0 if DEFAULT.arrow(target) is None else DEFAULT.arrow(target))
    assert full_deck(state)


def test_R6_3_next_space():
    covered = [False, True, True, False, False, True, False]
    assert next_space(covered, 3, 0) == 0
    assert next_space(covered, 0, 0) == -1  # player_0's goal
    assert next_space(covered, 4, 1) == 6
    assert next_space(covered, 6, 1) == 7  # player_1's goal
    assert next_space([True] * 3 + [False] + [True] * 3, 3, 1) == 7


@pytest.mark.parametrize(
    ("space", "covered", "winner"),
    [
        (0, [1, 2, 3], 0),
        (3, [0, 1, 2], 0),  # every space towards the goal is covered: straight into it
        (6, [3, 4, 5], 1),
        (5, [3, 4, 6], 1),
    ],
)
def test_R6_4_tacocat_in_goal_ends_game_with_winner(space, covered, winner):
    last = (2, 3) if winner == 0 else (3, 2)
    state = duel_to_showdown(*last, space=space, covered=covered)
    assert state.is_over and state.winner == winner and not state.truncated
    assert state.current_player is None and legal_actions(state) == ()
    assert returns(state) == ([1.0, -1.0] if winner == 0 else [-1.0, 1.0])
    assert state.events[-1] == ("game_over", winner)
    assert state.covered[space]


def test_R1_5_truncation_after_max_rounds_counts_void_rounds():
    cfg = RulesConfig(max_rounds=3)
    # round 2 of 3 ends void: a third round follows
    state = duel_to_showdown(5, 5, config=cfg, rounds_played=1)
    assert not state.is_over and state.rounds_played == 2
    # round 3 of 3 ends void: the game is truncated, no winner
    state = duel_to_showdown(5, 5, config=cfg, rounds_played=2)
    assert state.is_over and state.truncated and state.winner is None
    assert returns(state) == [0.0, 0.0] and state.events[-1] == ("game_over", None)
    # a decisive round at the limit that does not reach a goal also truncates
    state = duel_to_showdown(2, 3, config=cfg, rounds_played=2)
    assert state.is_over and state.truncated and state.winner is None and state.space == 2
    # a round at the limit that reaches a goal is a win (three tiles need three rounds, R6.5)
    state = duel_to_showdown(2, 3, config=RulesConfig(max_rounds=4), rounds_played=3, space=0, covered=[3, 2, 1])
    assert state.is_over and not state.truncated and state.winner == 0


@pytest.mark.parametrize("tie_policy", ["void", "arrow_player_wins"])
def test_R1_5_R6_2_void_rounds_alone_truncate_a_game(tie_policy, rng):
    # a deck of one value: every duel ties (R5.2) and every showdown is equal, so every round is
    # void (R6.2; the centre has two arrows, so arrow_player_wins voids too, R1.4) and the game
    # ends truncated after exactly max_rounds rounds (R1.5)
    cfg = RulesConfig(deck={5: 24}, board=(4, 6, 4), max_rounds=4, tie_policy=tie_policy)
    state = play_random(new_game(cfg, rng), rng)
    assert state.truncated and state.winner is None and state.rounds_played == 4
    assert state.space == 1 and not any(state.covered)
    assert [e[3] for e in state.events if e[0] == "showdown"] == [None] * 4
    assert sum(1 for e in state.events if e[0] == "round") == 4


@pytest.mark.parametrize(
    ("policy", "arrows", "first_at"),
    [
        # first replacer on spaces 0..6 (None: both, simultaneously)
        ("trailing", None, [1, 1, 1, None, 0, 0, 0]),
        ("leading", None, [0, 0, 0, None, 1, 1, 1]),
        (
            "explicit",
            ("player_0", "both", "player_1", "player_0", "player_1", "both", "player_0"),
            [0, None, 1, 0, 1, None, 0],
        ),
    ],
)
def test_R1_3_arrow_policies_decide_who_replaces_first(policy, arrows, first_at):
    cfg = RulesConfig(arrow_policy=policy, arrows=arrows)
    for space, first in enumerate(first_at):
        p0, p1 = [1, 2, 3, 4], [5, 6, 7, 8]
        state = setup_position((p0, p1), config=cfg, space=space, seed=space)
        assert state.arrow == first
        act(state, f"replace: discard a {1 if state.to_act == 0 else 5}", "replace: stop")
        if first is None:
            # simultaneous: player_0 then player_1 choose, nothing revealed in between
            assert state.to_act == 1 and state.replaced == [None, None] and sum(state.discard) == 0
            act(state, "replace: stop")
        else:
            assert state.actions[0][0] == first
            assert state.replaced[first] == 1 and sum(state.discard) == 1
            assert state.to_act == 1 - first and state.phase is Phase.REPLACE  # capped at 1
            act(state, "replace: stop")
        assert state.phase is Phase.DUEL


def test_R1_3_arrows_printed_on_board_do_not_change_with_tiles():
    # space 4 points at player_0 whether or not other spaces are covered
    for covered in ([], [3], [3, 5, 6], [0, 1, 2, 3]):
        state = setup_position(([1, 2], [3, 4]), space=4, covered=covered, seed=1)
        assert state.arrow == 0 and state.to_act == 0


def test_new_game_is_reproducible_from_an_explicit_generator():
    a = new_game(DEFAULT, np.random.default_rng(5))
    b = new_game(DEFAULT, 5)
    assert a.hands == b.hands and a.draw_pile == b.draw_pile
