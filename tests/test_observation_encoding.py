"""The observation vector against a slow, readable reference built slice by slice from the
documented layout (`tacocat.game.observation` module docstring), at every step of many random
games under several rulesets, for both players; and the env's observations against `encode`.

`encode` is the fast path (byte tables, cached board block); this reference is the spec it
must match bit for bit (R7.3: only the observer's own cards and public facts enter it)."""

from __future__ import annotations

import numpy as np
import pytest

import tacocat
from conftest import DEFAULT, walk
from tacocat import GameState, Phase, RulesConfig, encode, new_game
from tacocat.game.engine import moves_to_goal
from tacocat.game.observation import ObservationLayout
from tacocat.game.presets import preset_config

VARIANTS = {
    "default": DEFAULT,
    "small_leading_ties": RulesConfig(
        deck=dict.fromkeys(range(1, 9), 3),
        board=(4, 6, 4),
        tie_policy="arrow_player_wins",
        arrow_policy="leading",
        max_rounds=10,
    ),
    "explicit_arrows_shaped": RulesConfig(
        board=(5, 7, 9, 7, 5),
        arrow_policy="explicit",
        arrows=("player_1", "both", "player_0", "both", "player_1"),
        round_reward=0.25,
        max_rounds=12,
    ),
    "race": preset_config("race"),
    "tiny": preset_config("tiny"),
    # 1,000 cards: the draw pile holds more than 255 (the one entry that can exceed a byte)
    "big_deck": RulesConfig(deck=dict.fromkeys(range(1, 11), 100), max_rounds=8),
}


def reference_encode(state: GameState, player: int) -> np.ndarray:
    """The observation of `player`, written slice by slice by name (the spec; slow)."""
    rules, opp = state.rules, 1 - player
    layout = ObservationLayout(rules)
    out = np.zeros(layout.size, dtype=np.float32)
    n_values, n_spaces = rules.n_values, rules.n_spaces

    def put(name: str, values) -> None:
        out[layout.slices[name]] = values

    def one_hot(name: str, index: int | None) -> None:
        if index is not None:
            out[layout.slices[name].start + index] = 1

    over = state.phase is Phase.OVER
    put("own_hand", state.hands[player])
    aside = list(state.set_aside[player])
    if state.duel[player] is not None:  # my hidden duel card (R5.1)
        aside[state.duel[player]] += 1
    put("own_set_aside", aside)
    put("discard", state.discard)
    put("attack", np.bincount(np.asarray(state.attack, dtype=int), minlength=n_values))
    put("answers", np.bincount(np.asarray(state.answers, dtype=int), minlength=n_values))
    if state.phase is Phase.ANSWER:
        one_hot("current_attack_card", state.attack[len(state.answers)])
    if state.last_duel is not None:
        one_hot("last_duel_own", state.last_duel[player])
        one_hot("last_duel_opp", state.last_duel[opp])
    put("trick_failing", any(a < t for a, t in zip(state.answers, state.attack, strict=False)))
    put("hand_sizes", [state.hand_size(player), state.hand_size(opp)])
    put("draw_pile_size", len(state.draw_pile))
    one_hot("phase", int(state.phase))
    put("my_turn", state.current_player == player)
    replacing = state.phase is Phase.REPLACE and state.to_act == player
    put("replace_allowance", state.replace_cap[player] - sum(state.set_aside[player]) if replacing else 0)
    put("replaced", [state.replaced[player] or 0, state.replaced[opp] or 0])
    arrow = state.arrow
    one_hot("replace_role", 0 if arrow is None else (1 if arrow == player else 2))
    from_my_goal = list(range(n_spaces)) if player == 0 else list(range(n_spaces - 1, -1, -1))
    if not over:
        one_hot("tacocat", from_my_goal.index(state.space))
    put("covered", [state.covered[s] for s in from_my_goal])
    put("moves_to_goal", [moves_to_goal(state.covered, state.space, state.winner, p) for p in (player, opp)])
    put("deal_size", rules.board[state.space])
    one_hot("arrow", 2 if arrow is None else (0 if arrow == player else 1))
    one_hot("attacker", 2 if state.attacker is None else (0 if state.attacker == player else 1))
    put("round", state.rounds_played / rules.config.max_rounds)
    return out


def _random_states(config: RulesConfig, seed: int):
    """Every state of one random game, the final one included."""
    rng = np.random.default_rng(seed)
    state = new_game(config, rng)
    yield from walk(state, rng)
    yield state


@pytest.mark.parametrize("name", list(VARIANTS))
def test_encode_matches_the_reference_at_every_step(name):
    config = VARIANTS[name]
    phases, checked = set(), 0
    for seed in range(12):
        for state in _random_states(config, seed):
            phases.add(state.phase)
            for player in (0, 1):
                fast, spec = encode(state, player), reference_encode(state, player)
                assert fast.dtype == np.float32 and fast.shape == spec.shape
                assert fast.tobytes() == spec.tobytes(), (name, seed, player, np.flatnonzero(fast != spec))
                checked += 1
    assert Phase.OVER in phases and Phase.REPLACE in phases and checked > 100
    if name == "big_deck":
        assert len(new_game(config, 0).draw_pile) > 255


def test_reference_can_tell_a_wrong_vector():
    # the comparison above can fail: one changed card in hand changes the reference
    state = new_game(DEFAULT, 3)
    before = reference_encode(state, 0).tobytes()
    held = state.hands[0].index(next(n for n in state.hands[0] if n))
    state.hands[0][held] -= 1
    assert reference_encode(state, 0).tobytes() != before


@pytest.mark.parametrize("name", ["default", "small_leading_ties", "big_deck"])
def test_env_observations_equal_encode_for_both_agents_at_every_step(name):
    e = tacocat.env(config=VARIANTS[name])
    rng = np.random.default_rng(5)
    for seed in range(3):
        e.reset(seed=seed)
        for agent in e.agent_iter():
            observation, _, terminated, truncated, _ = e.last()
            game = e.unwrapped.game
            assert observation["observation"].tobytes() == encode(game, int(agent[-1])).tobytes()
            for other in e.possible_agents:  # observing any agent, any number of times, agrees
                assert e.observe(other)["observation"].tobytes() == encode(game, int(other[-1])).tobytes()
            if terminated or truncated:
                e.step(None)
            else:
                legal = np.flatnonzero(observation["action_mask"])
                e.step(int(legal[rng.integers(len(legal))]))
