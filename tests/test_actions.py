"""ActionCodec: one fixed Discrete(N) action space per ruleset (R4 replace, R5.1 duel, R5.3 attacks,
R5.5 answers), ids <-> moves <-> readable names."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings

from conftest import rules_configs
from tacocat import ActionCodec, Move, RulesConfig


def expected_size(cfg: RulesConfig) -> int:
    """N counted from the rules: per value a replace, a duel card, a single and a defence; stop and
    sacrifice; sets of 2..min(copies, largest deal - 1) (R5.3/R5.4); sequences of 3..(largest deal - 1)
    consecutive values (R5.3/R5.4)."""
    values = cfg.values
    longest = max(cfg.board) - 1
    sets = sum(max(0, min(c, longest) - 1) for c in cfg.deck.values())
    sequences = 0
    for start in range(len(values)):
        length = 1
        while start + length < len(values) and values[start + length] == values[start] + length:
            length += 1
        # runs starting at `start`: lengths 3..min(length, longest)
        sequences += max(0, min(length, longest) - 2)
    return 4 * len(values) + 2 + sets + sequences


def test_default_action_space_size_from_rules():
    codec = ActionCodec(RulesConfig())
    # 12 values: 4*12 + 2 = 50; sets: copies-1 per value = 1+2+2+2+3+3+3+3+2+2+2+1 = 26;
    # sequences of length 3..8 over 12 consecutive values: 10+9+8+7+6+5 = 45  -> 121
    assert codec.size == 50 + 26 + 45 == 121
    assert codec.size == expected_size(RulesConfig())


@settings(max_examples=40, deadline=None)
@given(cfg=rules_configs())
def test_action_space_size_and_names_for_any_ruleset(cfg):
    codec = ActionCodec(cfg)
    assert codec.size == expected_size(cfg)
    assert len(set(codec.names)) == codec.size, "readable names must be unique"
    for a in range(codec.size):
        assert codec.parse(codec.name(a)) == a
        assert codec.action(codec.move(a)) == a


def test_moves_list_cards_highest_first_and_are_well_formed():
    cfg = RulesConfig()
    codec = ActionCodec(cfg)
    values = cfg.values
    kinds = {}
    for move in codec.moves:
        kinds[move.kind] = kinds.get(move.kind, 0) + 1
        assert list(move.cards) == sorted(move.cards, reverse=True)
        cards = [values[c] for c in move.cards]
        if move.kind == "set":
            assert len(set(cards)) == 1 and 2 <= len(cards) <= min(cfg.deck[cards[0]], max(cfg.board) - 1)
        elif move.kind == "sequence":
            assert len(cards) >= 3
            assert all(a == b + 1 for a, b in itertools.pairwise(cards)), cards
        elif move.kind in ("stop", "sacrifice"):
            assert cards == []
        else:
            assert len(cards) == 1
    assert kinds == {
        "replace": 12,
        "stop": 1,
        "duel": 12,
        "single": 12,
        "set": 26,
        "sequence": 45,
        "defend": 12,
        "sacrifice": 1,
    }


def test_readable_names():
    codec = ActionCodec(RulesConfig())
    assert codec.name(codec.stop) == "replace: stop"
    assert codec.name(codec.sacrifice) == "answer: sacrifice"
    assert codec.name(codec.replace_base + 6) == "replace: discard a 7"
    assert codec.name(codec.duel_base + 8) == "duel: play a 9"
    assert codec.name(codec.single_base + 11) == "attack: single 12"
    assert codec.name(codec.defend_base + 0) == "answer: defend with 1"
    assert codec.name(codec.set_action(6, 3)) == "attack: set 3x7"
    assert codec.name(codec.sequence_action(3, 3)) == "attack: sequence 4-5-6"
    assert codec.parse("  attack: sequence 4-5-6 ") == codec.sequence_action(3, 3)
    assert [row[0] for row in codec.table()] == list(range(codec.size))
    assert all(name == codec.name(i) and kind == codec.move(i).kind for i, kind, name in codec.table())


def test_R5_4_set_sizes_capped_by_largest_deal_minus_one():
    # 12 copies of value 1, largest deal 9: a set may hold at most 8 cards (one card stays in hand)
    cfg = RulesConfig(deck={1: 12, 2: 12, 3: 12}, board=(4, 9, 4))
    codec = ActionCodec(cfg)
    sets = {codec.name(i) for i, m in enumerate(codec.moves) if m.kind == "set" and m.cards[0] == 0}
    assert sets == {f"attack: set {n}x1" for n in range(2, 9)}
    with pytest.raises(KeyError, match="not an action"):
        codec.action(Move("set", (0,) * 9))


def test_R5_3_sequences_need_consecutive_values_not_consecutive_indices():
    # values 1 2 3 5 6 7 9: 3 -> 5 is a gap
    cfg = RulesConfig(deck={1: 3, 2: 3, 3: 3, 5: 3, 6: 3, 7: 3, 9: 3}, board=(4, 5, 4))
    codec = ActionCodec(cfg)
    seqs = {codec.name(i) for i, m in enumerate(codec.moves) if m.kind == "sequence"}
    # largest deal 5 -> sequences of length 3 or 4 only; only 1-2-3 and 5-6-7 are runs
    assert seqs == {"attack: sequence 1-2-3", "attack: sequence 5-6-7"}


def test_parse_unknown_name_is_a_clear_error():
    codec = ActionCodec(RulesConfig())
    with pytest.raises(ValueError, match="unknown move 'attack: set 5x7'"):
        codec.parse("attack: set 5x7")  # only 4 sevens exist
    with pytest.raises(KeyError, match="not an action of this ruleset"):
        codec.action(Move("sequence", (2, 1)))  # a sequence needs three values
