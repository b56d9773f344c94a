"""Typed public events and move kinds: named fields, enum kinds that stay interchangeable with
their string values (for files and for code that compares with strings)."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tacocat.game import events as ev
from tacocat.game.actions import Move, MoveKind
from tacocat.game.engine import apply_action, legal_actions, new_game
from tacocat.game.render.text import describe_event

CLASS_OF_KIND = {
    ev.EventKind.ROUND: ev.RoundDealt,
    ev.EventKind.REPLACE: ev.ReplaceRevealed,
    ev.EventKind.DUEL: ev.DuelRevealed,
    ev.EventKind.ATTACK: ev.AttackPlayed,
    ev.EventKind.ANSWER: ev.AnswerPlayed,
    ev.EventKind.TRICK: ev.TrickEnded,
    ev.EventKind.SHOWDOWN: ev.ShowdownRevealed,
    ev.EventKind.MOVE: ev.TacocatMoved,
    ev.EventKind.GAME_OVER: ev.GameOver,
}


def random_game(seed: int):
    state = new_game(seed=seed)
    rng = np.random.default_rng(seed)
    while not state.is_over:
        legal = legal_actions(state)
        apply_action(state, legal[rng.integers(len(legal))])
    return state


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31))
def test_every_event_is_typed_and_survives_a_json_round_trip(seed):
    state = random_game(seed)
    for event in state.events:
        assert isinstance(event, CLASS_OF_KIND[event.kind]) and event[0] == event.kind.value
        back = json.loads(json.dumps(event))  # what a file holds: a plain list, the kind as its name
        assert back[0] == event.kind.value and len(back) == len(event)
        assert describe_event(back, state.rules) == describe_event(event, state.rules)
    assert state.events[0].kind == "round" and state.events[-1] == ("game_over", state.winner)


def test_answers_name_their_fields():
    state = random_game(5)
    answers = [e for e in state.events if e.kind is ev.EventKind.ANSWER]
    assert answers and all(isinstance(a.defended, bool) and a.player in (0, 1) for a in answers)


def test_move_kinds_are_an_enum_interchangeable_with_their_names():
    assert Move("set", (0, 0)) == Move(MoveKind.SET, (0, 0))
    assert hash(Move("set", (0, 0))) == hash(Move(MoveKind.SET, (0, 0)))
    assert f"{MoveKind.SEQUENCE}" == "sequence" and MoveKind.SINGLE.is_attack and not MoveKind.DEFEND.is_attack
    try:
        Move("steal")
    except ValueError as err:
        assert "steal" in str(err)
    else:
        raise AssertionError("an unknown move kind was accepted")
