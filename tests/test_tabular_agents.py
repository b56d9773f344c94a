"""Agents as policies on a game tree (`tacocat.analysis.agent_tables`), and their exact report
(`tacocat.analysis.exploit`).

The table plays each information state at one representative history; the perturbation tests
visit every other history of it (all of tiny's information states, and a seeded tenth of
skirmish's, which has attacks, defences and sacrifices, R5.3-R5.5) and check that the agent's
move and the network's observation are the same there (R7: what a player knows is its
information state). The differential tests compare the tables with an independent walk of the
OpenSpiel tree (today's `tabular_policy` before it used `tacocat.analysis.agent_tables`) and with the agents'
own `act` on the same states. The tabulation does not depend on the rules beyond the tree, so
`small` (tiny's round with four card values) adds no path to tiny and skirmish and is not run
here. The trees are enumerated once per process (tests/preset_trees.py).
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path

import numpy as np
import pyspiel
import pytest
from preset_trees import preset_tree

from tacocat.agents.base import AgentInput
from tacocat.agents.mlp_agent import LEAGUE_ALGORITHM, RLLIB_ALGORITHM
from tacocat.agents.policy_file import PolicyFileError, save_policy
from tacocat.agents.registry import AgentSpecError, make_agent
from tacocat.agents.trained import ModelFileError
from tacocat.analysis.agent_tables import agent_policy, draw_generator, observations, states_at, tabular_policy
from tacocat.analysis.best_response import combine
from tacocat.analysis.tabular import to_policy_table
from tacocat.analysis.tree import GameTree
from tacocat.game.observation import ObservationLayout, encode
from tacocat.game.openspiel import load_game
from tacocat.game.presets import preset_config
from tacocat.game.ruleset import compile_rules
from tacocat.game.state import Phase

LADDER = ("highcard", "planner", "counter")


@pytest.fixture(autouse=True)
def tree_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Trees that `load_tree` enumerates are cached in the test's own folder."""
    monkeypatch.setenv("TACOCAT_CACHE", str(tmp_path / "trees"))
    return tmp_path / "trees"


def sizes(preset: str) -> tuple[int, int]:
    """(observation size, number of action ids) of a preset."""
    rules = compile_rules(preset_config(preset))
    return ObservationLayout(rules).size, rules.codec.size


def mlp_file(folder: Path, preset: str, algorithm: str = LEAGUE_ALGORITHM, seed: int = 0) -> Path:
    """A tacocat-mlp-v1 file of random weights made for `preset` (its ruleset, its observation size)."""
    obs, n_actions = sizes(preset)
    rng = np.random.default_rng(seed)
    layers = [
        (rng.normal(size=(16, obs)), rng.normal(size=16)),
        (rng.normal(size=(n_actions, 16)), rng.normal(size=n_actions)),
    ]
    return save_policy(
        folder / f"{preset}_{seed}.npz",
        layers,
        activation="tanh",
        rules_config=preset_config(preset),
        algorithm=algorithm,
        experiment="test",
        seed=seed,
        timesteps=0,
    )


def sb3_file(folder: Path, preset: str, observation_size: int | None = None) -> Path:
    """A MaskablePPO model zip of random weights for `preset`, as the safe loader reads it
    (`tacocat.json` with the architecture, `policy.pth`); `observation_size` overrides the size."""
    import io

    import torch

    from tacocat.agents.trained import PolicyArchitecture, build_policy

    obs, n_actions = sizes(preset)
    obs = observation_size or obs
    architecture = PolicyArchitecture(net_arch=[16], activation="tanh")
    policy = build_policy(obs, n_actions, architecture)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # SB3 initialises the action head near zero: make the logits differ
        for parameter in policy.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
    weights = io.BytesIO()
    torch.save(policy.state_dict(), weights)
    meta = {
        "ruleset_hash": preset_config(preset).ruleset_hash(),
        "observation_size": obs,
        "n_actions": n_actions,
        "algorithm": "MaskablePPO",
        "policy": architecture.model_dump(),
    }
    path = folder / f"{preset}_{obs}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("policy.pth", weights.getvalue())
        archive.writestr("tacocat.json", json.dumps(meta))
    return path


def reference_tables(preset: str, specs: tuple[str, ...]) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Each agent's table as `tacocat.analysis.agent_tables.tabular_policy` made it before
    `tacocat.analysis.agent_tables`: one walk of every OpenSpiel history, each agent seeded with the CRC-32 of
    the information state."""
    import zlib

    agents = {spec: make_agent(spec) for spec in specs}
    tables: dict[str, dict[str, list[tuple[int, float]]]] = {spec: {} for spec in specs}
    stack = [load_game(preset).new_initial_state()]
    while stack:
        state = stack.pop()
        if state.is_terminal():
            continue
        if state.is_chance_node():
            stack.extend(state.child(a) for a, _ in state.chance_outcomes())
            continue
        player, legal, key = state.current_player(), state.legal_actions(), state.information_state_string()
        for spec, agent in agents.items():
            if spec == "random":
                row = [(a, 1.0 / len(legal)) for a in legal]
            else:
                agent.reset(player, np.random.default_rng(zlib.crc32(key.encode())))
                move = agent.act(AgentInput.from_state(state.engine, player))
                row = [(a, float(a == move)) for a in legal]
            assert tables[spec].setdefault(key, row) == row
        stack.extend(state.child(a) for a in legal)
    return tables


def representative_inputs(t: GameTree) -> list[AgentInput]:
    """The input of the player to act at each information state's representative history."""
    inputs: list[AgentInput | None] = [None] * t.n_infosets
    for node, state in states_at(t, t.infoset_node):
        i = int(t.infoset[node])
        inputs[i] = AgentInput.from_state(state.engine, int(t.infoset_player[i]))
    return inputs  # type: ignore[return-value]  # every entry is filled


# ---------------------------------------------------------------------------------------
# the walk and the differential tests against the OpenSpiel walk
# ---------------------------------------------------------------------------------------
def test_the_walk_reaches_each_node_with_its_own_history_and_information_state() -> None:
    t = preset_tree("tiny")
    decisions = np.flatnonzero(t.infoset >= 0)
    seen = []
    for node, state in states_at(t, decisions):
        assert state.history() == t.history(node)
        assert state.information_state_string() == t.infoset_keys[t.infoset[node]]
        seen.append(node)
    assert sorted(seen) == decisions.tolist()


def test_the_ladder_tables_on_tiny_are_the_openspiel_walks() -> None:
    t = preset_tree("tiny")
    specs = ("random", *LADDER)
    for spec, reference in reference_tables("tiny", specs).items():
        assert to_policy_table(t, agent_policy(t, spec)) == reference
        policy, histories = tabular_policy(load_game("tiny"), spec)
        assert histories == t.n_nodes == 1643
        assert policy.policy_table() == pyspiel.TabularPolicy(reference).policy_table()


# ---------------------------------------------------------------------------------------
# perturbation: every history of an information state gives the same move and observation
# ---------------------------------------------------------------------------------------
def check_every_history(
    preset: str, specs: tuple[str, ...], network: Path, infosets: np.ndarray | None = None
) -> set[Phase]:
    """At every decision history of `preset` (of the information states `infosets` only, when
    given): each agent's move (seeded as at the representative, `draw_generator(key, 0)`) is the
    one its table plays, and the observation is the representative's, which is what the network
    read. Returns the phases of the histories visited."""
    t = preset_tree(preset)
    chosen = np.arange(t.n_infosets) if infosets is None else np.asarray(infosets)
    tables = {spec: agent_policy(t, spec) for spec in specs}
    agents = {spec: make_agent(spec) for spec in specs}
    reference_obs = dict(zip(chosen.tolist(), observations(t, chosen), strict=True))
    league = agent_policy(t, f"league:path={network}", sampling=True)
    off_representative, phases = 0, set()
    for node, state in states_at(t, np.flatnonzero(np.isin(t.infoset, chosen))):
        i = int(t.infoset[node])
        player, key = int(t.infoset_player[i]), t.infoset_keys[i]
        off_representative += node != t.infoset_node[i]
        phases.add(state.engine.phase)
        np.testing.assert_array_equal(encode(state.engine, player), reference_obs[i])
        for spec, agent in agents.items():
            agent.reset(player, draw_generator(key, 0))
            move = agent.act(AgentInput.from_state(state.engine, player))
            assert tables[spec][i, list(t.legal[i]).index(move)] == 1.0, (spec, key)
    assert off_representative > chosen.size  # most information states have several histories
    assert np.all((league > 0) == (t.legal >= 0))  # the network's rows are over the legal columns
    return phases


def test_tiny_every_history_of_an_information_state_gives_the_same_move(tmp_path: Path) -> None:
    check_every_history("tiny", LADDER, mlp_file(tmp_path, "tiny"))


@pytest.mark.slow  # 2,610 histories, each agent's move at each: about 15 s on its own
def test_skirmish_every_history_of_an_information_state_gives_the_same_move(tmp_path: Path) -> None:
    """A seeded tenth of skirmish's 5,952 information states (595: 2,610 of its 25,710 decision
    histories), every phase among them; tiny's test covers all of its own."""
    t = preset_tree("skirmish")
    sample = np.sort(np.random.default_rng(0).choice(t.n_infosets, size=t.n_infosets // 10, replace=False))
    phases = check_every_history("skirmish", LADDER, mlp_file(tmp_path, "skirmish"), sample)
    assert phases == {Phase.REPLACE, Phase.DUEL, Phase.ATTACK, Phase.ANSWER}


# ---------------------------------------------------------------------------------------
# networks: one batched pass equals the agent's own decisions
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("preset", "spec", "algorithm"),
    [
        ("tiny", "league", LEAGUE_ALGORITHM),
        ("tiny", "rllib", RLLIB_ALGORITHM),
        ("skirmish", "league", LEAGUE_ALGORITHM),
    ],
)
def test_a_policy_files_rows_are_its_agents_moves_and_softmax(
    tmp_path: Path, preset: str, spec: str, algorithm: str
) -> None:
    t = preset_tree(preset)
    path = mlp_file(tmp_path, preset, algorithm)
    greedy = agent_policy(t, f"{spec}:path={path}")
    soft = agent_policy(t, f"{spec}:path={path}", sampling=True)
    if preset == "tiny":  # a spec that samples is tabulated by its softmax in either mode
        np.testing.assert_array_equal(agent_policy(t, f"{spec}:path={path},deterministic=false"), soft)
    agent = make_agent(f"{spec}:path={path}")
    for i, inp in enumerate(representative_inputs(t)):
        legal = list(t.legal[i, : t.n_legal[i]])
        assert greedy[i, legal.index(agent.act(inp))] == 1.0 and greedy[i].sum() == 1.0
        logits = agent.logits(inp.observation)[legal]
        expected = np.exp(logits - logits.max())
        np.testing.assert_allclose(soft[i, : len(legal)], expected / expected.sum(), rtol=1e-12, atol=1e-15)
    assert 0 < np.count_nonzero(greedy.argmax(axis=1)) < t.n_infosets  # the network's choices vary


def test_an_sb3_models_rows_are_its_agents_moves_and_distribution(tmp_path: Path) -> None:
    import torch

    t = preset_tree("tiny")
    path = sb3_file(tmp_path, "tiny")
    greedy = agent_policy(t, f"ppo:path={path}")
    soft = agent_policy(t, f"ppo:path={path}", sampling=True)
    agent = make_agent(f"ppo:path={path}")
    for i, inp in enumerate(representative_inputs(t)):
        legal = list(t.legal[i, : t.n_legal[i]])
        assert greedy[i, legal.index(agent.act(inp))] == 1.0
        with torch.no_grad():
            obs, _ = agent.policy.obs_to_tensor(inp.observation)
            probs = agent.policy.get_distribution(obs, action_masks=inp.action_mask.astype(bool))
            probs = probs.distribution.probs[0].numpy().astype(np.float64)
        np.testing.assert_allclose(soft[i, : len(legal)], probs[legal] / probs.sum(), rtol=1e-5, atol=1e-7)
    assert 0 < np.count_nonzero(greedy.argmax(axis=1)) < t.n_infosets


# ---------------------------------------------------------------------------------------
# Python agents: sampling, seeds, one player's rows
# ---------------------------------------------------------------------------------------
def test_sampling_mode_is_the_empirical_distribution_of_seeded_draws() -> None:
    """planner sacrificing by choice half the time (R5.5): its sampling rows mix two answers.
    player_0's rows only, to keep the test short."""
    t, spec, samples, seat = preset_tree("skirmish"), "planner:sacrifice_rate=0.5", 4, (0,)
    greedy = agent_policy(t, spec, players=seat)
    soft = agent_policy(t, spec, sampling=True, samples=samples, players=seat)
    filled = t.infoset_player == 0
    np.testing.assert_allclose(soft.sum(axis=1), 1.0)
    np.testing.assert_array_equal(soft[~filled], t.uniform_policy()[~filled])
    np.testing.assert_array_equal(soft[filled] * samples, np.round(soft[filled] * samples))
    assert np.all(soft[filled][greedy[filled] == 1.0] > 0)  # draw 0, the deterministic move, is one of the samples
    mixed = np.flatnonzero(filled & ((soft > 0).sum(axis=1) > 1))
    assert mixed.size > 0  # the perturbation happened
    agent = make_agent(spec)
    for i in mixed[:20]:  # the same draws, by hand, at the history `GameTree.infoset_state` replays
        counts = np.zeros(t.max_actions)
        for draw in range(samples):
            agent.reset(0, draw_generator(t.infoset_keys[i], draw))
            counts[list(t.legal[i]).index(agent.act(AgentInput.from_state(t.infoset_state(i).engine, 0)))] += 1
        np.testing.assert_array_equal(soft[i], counts / samples)
    other_seed = agent_policy(t, spec, sampling=True, samples=samples, seed=1, players=seat)
    assert not np.array_equal(other_seed, soft)  # seed 1 draws 4..7


def test_random_is_uniform_in_both_modes_and_one_players_rows_can_be_played() -> None:
    t = preset_tree("tiny")
    np.testing.assert_array_equal(agent_policy(t, "random"), t.uniform_policy())
    np.testing.assert_array_equal(agent_policy(t, "random", sampling=True), t.uniform_policy())
    both = agent_policy(t, "counter")
    second = agent_policy(t, "counter", players=(1,))
    seat = t.infoset_player == 1
    np.testing.assert_array_equal(second[seat], both[seat])
    np.testing.assert_array_equal(second[~seat], t.uniform_policy()[~seat])  # still a policy on the tree
    first = agent_policy(t, "highcard", players=(0,))
    np.testing.assert_array_equal(combine(t, first, second), np.where(seat[:, None], both, agent_policy(t, "highcard")))


# ---------------------------------------------------------------------------------------
# refusals: one line each
# ---------------------------------------------------------------------------------------
def one_line(excinfo: pytest.ExceptionInfo) -> str:
    text = str(excinfo.value)
    assert "\n" not in text
    return text


def test_a_policy_for_other_rules_is_refused_naming_both_rulesets(tmp_path: Path) -> None:
    tiny, skirmish = (preset_config(p).ruleset_hash() for p in ("tiny", "skirmish"))
    with pytest.raises(PolicyFileError) as excinfo:
        agent_policy(preset_tree("tiny"), f"league:path={mlp_file(tmp_path, 'skirmish')}")
    assert f"trained for ruleset {skirmish}, this game uses {tiny}" in one_line(excinfo)
    with pytest.raises(PolicyFileError) as excinfo:
        agent_policy(preset_tree("tiny"), "champion")
    assert f"this game uses {tiny}" in one_line(excinfo)
    with pytest.raises(ModelFileError) as excinfo:
        agent_policy(preset_tree("tiny"), f"ppo:path={sb3_file(tmp_path, 'skirmish')}")
    assert f"trained for ruleset {skirmish}, this game uses {tiny}" in one_line(excinfo)
    obs, _ = sizes("tiny")
    with pytest.raises(ModelFileError) as excinfo:
        agent_policy(preset_tree("tiny"), f"ppo:path={sb3_file(tmp_path, 'tiny', observation_size=obs + 1)}")
    assert f"takes observations of size {obs + 1}, ruleset {tiny} gives {obs}" in one_line(excinfo)


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("nosuch", {}, "unknown agent 'nosuch'"),
        ("planner:depth=3", {}, "agent 'planner' has no parameter 'depth'"),
        ("counter", {"samples": 0}, "samples must be >= 1, got 0"),
        ("counter", {"seed": -1}, "seed must be >= 0, got -1"),
    ],
)
def test_bad_specs_and_options_are_one_line_value_errors(spec: str, options: dict, message: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        agent_policy(preset_tree("tiny"), spec, **options)
    assert message in one_line(excinfo)
    if spec == "nosuch":
        assert isinstance(excinfo.value, AgentSpecError)


# ---------------------------------------------------------------------------------------
# the exact report (tacocat.analysis.exploit)
# ---------------------------------------------------------------------------------------
def test_the_exact_report_is_openspiels_nash_conv_and_the_same_when_rerun() -> None:
    from tacocat.analysis.exploit import exact_report, format_report

    report = exact_report("planner", "tiny")
    cached = pyspiel.load_game("cached_tree(game=python_tacocat(preset=tiny))")
    assert report.nash_conv == pytest.approx(
        pyspiel.nash_conv(cached, tabular_policy(load_game("tiny"), "planner")[0]), abs=1e-9
    )
    assert (report.preset, report.ruleset_hash) == ("tiny", preset_config("tiny").ruleset_hash())
    assert (report.histories, report.information_states) == (1643, 270)
    assert sum(report.policy_values) == pytest.approx(0.0, abs=1e-12)  # zero-sum
    assert report.nash_conv == pytest.approx(sum(report.best_response_values) - sum(report.policy_values), abs=1e-12)
    assert report.exploitability == report.nash_conv / 2
    again = exact_report("planner", "tiny")
    assert again.model_dump(exclude={"seconds"}) == report.model_dump(exclude={"seconds"})
    text = format_report(report)
    assert f"NashConv {report.nash_conv:.6f}, exploitability {report.exploitability:.6f}" in text
    assert (
        "best response as player_1: +0.200000 per game; the agent as player_0 gets -0.200000 against it "
        "(+0.000000 against itself)" in text
    )  # docs/OPENSPIEL.md: planner's NashConv on tiny is 0.4000
    uniform = exact_report("random", "tiny")
    assert uniform.nash_conv == pytest.approx(0.9714285714, abs=1e-9)  # pinned in tests/test_openspiel.py


def test_the_exact_report_of_a_sampling_network(tmp_path: Path) -> None:
    from tacocat.analysis.best_response import nash_conv
    from tacocat.analysis.exploit import exact_report, format_report

    t, spec = preset_tree("tiny"), f"league:path={mlp_file(tmp_path, 'tiny')}"
    report = exact_report(spec, "tiny", sampling=True)
    assert report.nash_conv == pytest.approx(nash_conv(t, agent_policy(t, spec, sampling=True)), abs=1e-12)
    assert report.sampling and "sampling" in format_report(report)
    assert report.nash_conv != pytest.approx(exact_report(spec, "tiny").nash_conv)


@pytest.mark.parametrize(
    ("spec", "preset", "options", "message"),
    [
        ("planner", "nosuch", {}, "unknown rules preset 'nosuch'"),
        ("planner", "default", {}, "is too large to enumerate: about"),
        ("nosuch", "tiny", {}, "unknown agent 'nosuch'"),
        ("champion", "tiny", {}, f"this game uses {preset_config('tiny').ruleset_hash()}"),
        ("counter", "tiny", {"samples": 0}, "samples must be >= 1, got 0"),
    ],
)
def test_the_exact_report_refuses_bad_input_before_enumerating(
    monkeypatch: pytest.MonkeyPatch, tree_cache: Path, spec: str, preset: str, options: dict, message: str
) -> None:
    from tacocat.analysis import store
    from tacocat.analysis.exploit import exact_report

    def no_tree(*args: object, **kwargs: object) -> None:
        raise AssertionError("the tree was enumerated")

    monkeypatch.setattr(store, "enumerate_tree", no_tree)
    with pytest.raises(ValueError) as excinfo:
        exact_report(spec, preset, **options)
    assert message in one_line(excinfo)
    assert not tree_cache.exists()  # nothing written


def test_a_trees_observations_are_computed_once_and_cannot_be_changed() -> None:
    """A run evaluating `eval.nash_conv` tabulates its network on the same tree every time: the
    observations of the same rows come back as the same read-only array, those of other rows
    are computed for them, and both equal the encoding of each row's representative history."""
    t = preset_tree("tiny")
    rows = np.flatnonzero(t.infoset_player == 0)
    first = observations(t, rows)
    assert observations(t, rows.copy()) is first
    with pytest.raises(ValueError, match="read-only"):
        first[0, 0] = 1.0
    others = observations(t, rows[:5])
    assert others is not first and others.shape == (5, first.shape[1])
    np.testing.assert_array_equal(others, first[:5])
    fresh = GameTree(**{f.name: getattr(t, f.name) for f in dataclasses.fields(t)})
    np.testing.assert_array_equal(observations(fresh, rows), first)  # another tree: computed anew, the same
