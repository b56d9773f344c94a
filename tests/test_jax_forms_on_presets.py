"""The JAX ports of the heuristics (tacocat/agents/heuristic_jax.py) against their Python forms
(tacocat/agents/heuristic.py) on every rules preset and on rule variants, decision by decision.

tests/test_league_heuristics.py compares them on the default rules and one variant; the
exploiters of `tacocat exploit --preset` and the validation train against the ports on the
presets, and their exact values are computed against the Python forms, so the two must agree
there too. Its machinery is reused (`compare`: the same observation, mask and public floor, the
same action, bit-exact wherever the agent draws no random numbers); the positions come from
each preset (`tacocat.game.presets.PRESETS`, the decisive ones included) and from variants of
the rules a preset can be played under: leading arrows (R1.3), ties to the arrow player (R1.4),
an explicit one-arrow centre, several rounds (R1.5).

Where `counter` samples opponent hands (an attack among two or more widest, R5.3), its action
is random in both forms: its distribution over many draws is compared at such positions of
jumbo_decided. On trio_decided it never samples (a single attack with one keeper-safe card).
"""

from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import test_league_heuristics as reference
from play_positions import mixed_play_positions

from support.lockstep import FAST_COMPILE
from tacocat.agents.base import AgentInput
from tacocat.agents.heuristic_jax import make_heuristic
from tacocat.agents.registry import make_agent
from tacocat.game.config import RulesConfig
from tacocat.game.presets import PRESETS, preset_config
from tacocat.game.state import Phase
from tacocat.game.view import opponent_bounds

SPECS = ("highcard", "planner", "counter", "counter:duel_from=0,replace_keeper_from=12,keep_from=6")
#: positions per ruleset (the default rules: tests/test_league_heuristics.py, 11,000)
POSITIONS = 1_500
VARIANTS = {
    "trio_decided, leading arrows, ties to the arrow player": preset_config(
        "trio_decided", arrow_policy="leading", tie_policy="arrow_player_wins"
    ),
    "jumbo_decided, a one-arrow centre, ties to the arrow player": preset_config(
        "jumbo_decided",
        arrow_policy="explicit",
        arrows=("player_1", "player_1", "player_0"),
        tie_policy="arrow_player_wins",
    ),
    "race, three rounds, ties to the arrow player": preset_config("race", max_rounds=3, tie_policy="arrow_player_wins"),
    "trio's deck on a 5-space board, 6 rounds": RulesConfig(
        deck={1: 4, 2: 6, 3: 6, 4: 4}, board=(2, 3, 3, 3, 2), max_rounds=6, round_reward=0.5
    ),
}
RULESETS = {f"preset {name}": preset_config(name) for name in PRESETS if name != "default"} | VARIANTS
DECISIVE = ("trio_decided", "jumbo_decided")


@cache
def positions(name: str) -> list[AgentInput]:
    return mixed_play_positions(RULESETS[name], POSITIONS, seed=38)


@pytest.mark.parametrize("spec", ["planner", "counter"])
@pytest.mark.parametrize("name", DECISIVE)
def test_port_equals_python_form_on_the_decisive_presets(name: str, spec: str) -> None:
    n, phases = reference.compare(spec, preset_config(name), positions(f"preset {name}"))
    assert n >= POSITIONS // 2 and {Phase.REPLACE, Phase.DUEL, Phase.ATTACK, Phase.ANSWER} <= phases


@pytest.mark.slow
def test_ports_equal_python_forms_on_every_preset_and_variant() -> None:
    """Every spec on every preset and variant (a compilation each: minutes on the loaded machine)."""
    failures = []
    for name, config in RULESETS.items():
        for spec in SPECS:
            try:
                reference.compare(spec, config, positions(name))
            except AssertionError as error:
                failures.append(f"{name}: {str(error).splitlines()[0]}")
    assert not failures, failures


def test_counter_never_samples_on_trio_decided() -> None:
    """On trio's board a deal of 3 leaves two cards after the duel and one attack with a single
    card (R5.3); the keeper rule leaves one candidate, so `counter` draws no random numbers and
    its sampled table is its deterministic one (checked bit-exact above)."""
    config = preset_config("trio_decided")
    assert not any(reference.sampled(config, inp) for inp in positions("preset trio_decided"))


@cache
def batched_port(spec: str, preset: str):
    return jax.jit(jax.vmap(make_heuristic(spec, preset_config(preset))), compiler_options=FAST_COMPILE)


def port_counts(spec: str, preset: str, inputs: list[AgentInput], draws: int, seed: int) -> np.ndarray:
    """(positions, actions) counts of the port's actions over `draws` keys at each position, in
    one batched call."""
    rows = [inp for inp in inputs for _ in range(draws)]
    obs = jnp.asarray(np.stack([inp.observation for inp in rows]))
    mask = jnp.asarray(np.stack([inp.action_mask.astype(bool) for inp in rows]))
    floor = jnp.asarray([opponent_bounds(inp.view)[0] for inp in rows], jnp.int32)
    keys = jax.random.split(jax.random.key(seed), len(rows))
    actions = np.asarray(batched_port(spec, preset)(obs, mask, keys, floor)).reshape(len(inputs), draws)
    return np.stack([np.bincount(a, minlength=inputs[0].action_mask.size) for a in actions])


def python_counts(spec: str, inputs: list[AgentInput], draws: int, seed: int) -> np.ndarray:
    """The same for the Python form, one generator per draw."""
    agent = make_agent(spec)
    out = np.zeros((len(inputs), inputs[0].action_mask.size), dtype=np.int64)
    for k, inp in enumerate(inputs):
        for i in range(draws):
            agent.reset(inp.view.player, np.random.default_rng([seed, k, i]))
            out[k, agent.act(inp)] += 1
    return out


@pytest.fixture(scope="module")
def sampled_positions() -> list[AgentInput]:
    """Positions of jumbo_decided where `counter` samples hands (attacks among equally wide ones)."""
    config = preset_config("jumbo_decided")
    chosen = [inp for inp in positions("preset jumbo_decided") if reference.sampled(config, inp)]
    assert len(chosen) >= 10
    return chosen[:10]


def test_counter_port_samples_its_attacks_like_python(sampled_positions: list[AgentInput]) -> None:
    """Where `counter` samples on jumbo_decided, both forms play the same action distribution
    over 100 draws a side: one action, the same in both (the few 1s and 3s of its deck make
    every sampled hand rank the widest attacks alike), so the sampled table is pure here too."""
    python = python_counts("counter", sampled_positions, 100, seed=1)
    port = port_counts("counter", "jumbo_decided", sampled_positions, 100, seed=1)
    assert np.array_equal(python, port)
    assert ((python > 0).sum(axis=1) == 1).all()
