"""The one picture of the table (tacocat.game.render): a `Scene` drawn as SVG for the web page
and as an RGB image for `rgb_array` and GIFs. A player's picture is a function of their view
only (R7.3, by perturbation); a spectator's shows no hidden card unless asked to reveal."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import DEFAULT, random_game, resample_hidden, sample_states
from tacocat import RulesConfig
from tacocat.game.engine import apply_action, legal_actions, new_game
from tacocat.game.presets import preset_config
from tacocat.game.render.raster import render_image, scene_image
from tacocat.game.render.scene import Rect, Scene, state_facts, table_scene, view_facts
from tacocat.game.render.svg import render_svg, scene_svg
from tacocat.game.state import Phase
from tacocat.game.view import player_view

SVG = "{http://www.w3.org/2000/svg}"


def _tree(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # well-formed XML, or this raises


def _with(root: ET.Element, *classes: str) -> list[ET.Element]:
    """The elements whose class attribute holds every one of `classes`."""
    return [e for e in root.iter() if set(classes) <= set(e.get("class", "").split())]


def _values(root: ET.Element, *classes: str) -> list[int]:
    return [int(e.text) for e in _with(root, "value", *classes)]


def _printed(state, counts) -> list[int]:
    return [state.rules.values[v] for v, n in enumerate(counts) for _ in range(n)]


def _states(seed: int, every: int = 3):
    return list(sample_states(seed, DEFAULT, every=every))


def test_a_players_picture_shows_their_hand_face_up_and_the_opponents_as_backs():
    for state in _states(1, every=5):
        for me in (0, 1):
            view = player_view(state, me)
            root = _tree(render_svg(view))
            opp = 1 - me
            assert sorted(_values(root, "hand", f"seat-{me}")) == _printed(state, state.hands[me])
            assert sorted(_values(root, "set-aside", f"seat-{me}")) == _printed(state, state.set_aside[me])
            assert _values(root, f"seat-{opp}", "hand") == [] and _values(root, f"seat-{opp}", "set-aside") == []
            pending = 1 if state.duel[opp] is not None else 0
            backs = _with(root, "card", "back", "hand", f"seat-{opp}")
            assert len(backs) == view.hand_sizes[opp] - pending


@pytest.mark.parametrize("seed", [2, 3])
def test_a_players_picture_does_not_depend_on_the_opponents_hidden_cards(seed):
    """R7.3 by perturbation: redeal everything the player cannot see; the SVG is byte-identical."""
    rng = np.random.default_rng(seed)
    phases = set()
    for state in _states(seed, every=2):
        for me in (0, 1):
            svg = render_svg(player_view(state, me))
            for _ in range(2):
                twin = resample_hidden(state, me, rng)
                assert render_svg(player_view(twin, me)) == svg
            phases.add(state.phase)
    assert {Phase.REPLACE, Phase.DUEL, Phase.ATTACK, Phase.ANSWER} <= phases


def test_a_spectators_picture_shows_no_hidden_card_and_reveal_shows_both_hands():
    rng = np.random.default_rng(4)
    for state in _states(4, every=7):
        public = render_svg(state)
        root = _tree(public)
        assert not _with(root, "value", "hand") and not _with(root, "value", "duel")
        twin = resample_hidden(resample_hidden(state, 0, rng), 1, rng)  # both players' hidden cards redealt
        assert render_svg(twin) == public
        shown = _tree(render_svg(state, reveal=True))
        for seat in (0, 1):
            assert sorted(_values(shown, "hand", f"seat-{seat}")) == _printed(state, state.hands[seat])
            if state.duel[seat] is not None:
                assert _values(shown, "duel", f"seat-{seat}") == [state.rules.values[state.duel[seat]]]


def test_the_duel_card_chosen_first_is_face_down_for_the_other_player():
    state = new_game(DEFAULT, 7)
    while state.phase is not Phase.DUEL or state.to_act != 1:
        apply_action(state, legal_actions(state)[-1])  # stop replacing, then player_0's duel card
    card = state.duel[0]
    other = _tree(render_svg(player_view(state, 1)))
    assert len(_with(other, "card", "back", "duel", "seat-0")) == 1 and not _with(other, "value", "duel")
    own = _tree(render_svg(player_view(state, 0)))
    assert _values(own, "duel", "seat-0") == [state.rules.values[card]]


def test_the_trick_shows_the_attack_and_each_answer_on_the_players_sides():
    seen = 0
    for state in _states(5, every=1):
        if state.phase is not Phase.ANSWER or not state.answers:
            continue
        root = _tree(render_svg(state))
        attacker = state.attacker
        values = state.rules.values
        assert _values(root, "attack", f"seat-{attacker}") == [values[v] for v in state.attack]
        assert _values(root, "answer", f"seat-{1 - attacker}") == [values[v] for v in state.answers]
        assert sorted(_values(root, "face-up")) == _printed(state, state.discard)
        seen += 1
    assert seen > 0


def test_the_board_shows_covered_spaces_arrows_the_tacocat_and_the_winner():
    state = random_game(6)
    assert state.is_over and state.winner is not None
    root = _tree(render_svg(state))
    assert len(_with(root, "space", "covered")) == sum(state.covered) > 0
    arrows = state.rules.arrows
    assert len(_with(root, "arrow")) == sum(2 if a is None else 1 for a in arrows)
    assert _with(root, "goal", f"goal-{state.winner}", "won") and not _with(
        root, "goal", f"goal-{1 - state.winner}", "won"
    )
    assert not _with(root, "tacocat")  # the game is over: the Tacocat is in a goal
    start = _tree(render_svg(new_game(DEFAULT, 0)))
    assert len(_with(start, "tacocat", "token")) == 1 and not _with(start, "covered")
    spaces = _with(start, "space")
    assert ["tacocat" in e.get("class") for e in spaces].index(True) == DEFAULT.centre


def test_arrows_point_at_the_players_side_of_the_picture():
    state = new_game(DEFAULT, 0)
    root = _tree(render_svg(player_view(state, 1)))  # player_1 at the bottom
    arrows = state.rules.arrows
    for seat in (0, 1):
        assert len(_with(root, "arrow", f"arrow-{seat}")) == sum(a is None or a == seat for a in arrows)
    (left, right, tip) = [
        tuple(map(float, p.split(","))) for p in _with(root, "arrow", "arrow-1")[0].get("points").split()
    ]
    assert tip[1] > left[1] == right[1]  # pointing down, at the bottom seat


def test_text_in_the_picture_is_escaped():
    state = new_game(DEFAULT, 0)
    svg = render_svg(state, names=('<script>alert("x")</script>', "a & b"))
    labels = [e.text for e in _with(_tree(svg), "seat-label")]
    assert any('<script>alert("x")</script>' in text for text in labels) and any("a & b" in t for t in labels)
    assert "<script>" not in svg


def test_a_view_cannot_be_drawn_with_both_hands():
    with pytest.raises(ValueError, match="cannot reveal"):
        render_svg(player_view(new_game(DEFAULT, 0), 0), reveal=True)


def test_the_image_and_the_svg_are_drawn_from_the_same_scene():
    """Every card of the scene is where the image has its colour: the frame shows the cards."""
    state = next(s for s in _states(8, every=1) if s.phase is Phase.ANSWER)
    scene = table_scene(state_facts(state, reveal=True))
    image = render_image(state, None, None, reveal=True)
    assert image.shape == (int(scene.height), int(scene.width), 3) and image.dtype == np.uint8
    cards = [s for s in scene.shapes if isinstance(s, Rect) and s.tag.startswith("card")]
    assert len(cards) > 10
    for card in cards:
        pixel = image[int(card.y + card.h * 0.06) + 1, int(card.x + card.w / 2)]
        expected = np.array([int(card.fill[i : i + 2], 16) for i in (1, 3, 5)])
        assert np.abs(pixel.astype(int) - expected).max() <= 40, (card, pixel)
    svg = _tree(scene_svg(scene))
    assert len(_with(svg, "card")) == len(cards)
    assert np.array_equal(scene_image(scene), image)


def test_the_image_changes_with_the_trick_and_scales():
    state = next(s for s in _states(9, every=1) if s.phase is Phase.ATTACK)
    before = render_image(state)
    apply_action(state, legal_actions(state)[0])
    assert not np.array_equal(render_image(state), before)
    assert before.shape == (280, 800, 3)  # the frame size of rgb_array and GIFs
    assert render_image(state, 480, None).shape == (168, 480, 3)  # the picture's aspect
    wide = render_image(state, 800, 140)  # scaled to fit and centred: felt on both sides
    assert wide.shape == (140, 800, 3) and (wide[:, :150] == wide[0, 0]).all() and (wide[:, -150:] == wide[0, 0]).all()


def test_presets_and_a_long_board_fit_the_picture():
    for config in (preset_config("tiny"), preset_config("jumbo"), RulesConfig(board=(4,) * 25)):
        state = new_game(config, 0)
        for facts in (state_facts(state, reveal=True), view_facts(player_view(state, 1))):
            scene = table_scene(facts)
            assert isinstance(scene, Scene)
            for shape in scene.shapes:
                if isinstance(shape, Rect):
                    assert shape.x >= 0 and shape.x + shape.w <= scene.width, shape
                    assert shape.y >= 0 and shape.y + shape.h <= scene.height, shape
