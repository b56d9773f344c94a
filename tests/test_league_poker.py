"""The league on Kuhn and Leduc poker (issue 39): pgx's games behind the batch interface
(tacocat/analysis/poker_batch.py), OpenSpiel's trees mapped onto them and a policy's exact
NashConv (tacocat/analysis/poker.py), a league run on them, and what is refused there.

The mapping is checked on every history of OpenSpiel's trees: the legal actions and the player
to act are OpenSpiel's, every terminal history pays OpenSpiel's returns, the observation is a
function of the information state and tells any two apart (Leduc: up to the suits, which pgx
does not deal; exactly on OpenSpiel's suit-isomorphic Leduc). pgx's own observation does not
(pgx issue 1302): checked here, and why the league observes the betting sequence as well."""

from __future__ import annotations

import itertools
import re
import shutil
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from tacocat.analysis.poker import (
    PokerPolicy,
    average_policy,
    load_policy,
    poker_report,
    poker_tree,
    save_policy,
    tabulate,
    values,
)
from tacocat.analysis.poker_batch import PokerBatch
from tacocat.cli.app import app
from tacocat.train.config import load_experiment, parse_experiment
from tacocat.train.config_files import read_experiment
from tacocat.train.evaluation import EXACT_FIELDS, policy_tables

ROOT = Path(__file__).resolve().parents[1]
KUHN = ROOT / "tacocat" / "train" / "configs" / "league_kuhn.yaml"


def _distinct(keys: list[str], rows: np.ndarray) -> tuple[dict[str, bytes], set[bytes]]:
    """Each information state's one observation (asserting there is one) and the set of them."""
    seen: dict[str, bytes] = {}
    for key, row in zip(keys, rows, strict=True):
        assert seen.setdefault(key, row.tobytes()) == row.tobytes(), f"{key}: two observations"
    return seen, set(seen.values())


def _check_mapping(tree) -> None:
    """Every information state of OpenSpiel's game reached, with OpenSpiel's legal actions,
    player to act and payoffs."""
    from open_spiel.python.policy import TabularPolicy

    assert set(tree.first_history) == set(TabularPolicy(tree.openspiel).state_lookup)
    for legal, mask in zip(tree.legal, tree.masks, strict=True):
        assert sorted(tree.game.pgx_action[a] for a in legal) == np.flatnonzero(mask).tolist()
    np.testing.assert_array_equal(tree.players, tree.pgx_players)
    np.testing.assert_array_equal(tree.terminal_rewards, tree.terminal_returns)  # the same payoffs


def test_kuhn_maps_onto_pgx_and_its_observation_tells_every_information_state_apart() -> None:
    tree = poker_tree("kuhn_poker")
    assert len(tree.info_states) == 24 and len(tree.first_history) == 12 and len(tree.terminal_returns) == 30
    _check_mapping(tree)
    by_state, observations = _distinct(tree.info_states, tree.observations)
    assert len(observations) == len(by_state) == 12
    # pgx's own observation (card, own chips, opponent's chips) tells only 6 of the 12 apart
    # (pgx issue 1302): the first player at the start and the second after a pass both see
    # "0 chips each"; the second facing a bet and the first facing one after passing both "0, 1"
    raw, raw_observations = _distinct(tree.info_states, tree.raw_observations)
    assert len(raw_observations) == 6
    assert raw["0"] == raw["0p"] and raw["0b"] == raw["0pb"] and raw["0"] != raw["1"]  # OpenSpiel: card, bets


@pytest.mark.slow  # Leduc's trees (3,780 and 774 decision histories) replayed in pgx: about 20 s here
def test_leduc_maps_onto_pgx_by_information_state_up_to_suits() -> None:
    tree = poker_tree("leduc_holdem")
    assert len(tree.first_history) == 936
    _check_mapping(tree)
    by_state, observations = _distinct(tree.info_states, tree.observations)

    def suitless(key: str) -> str:  # OpenSpiel's card ids 0-5 as ranks 0-2
        return re.sub(r"\[(Private|Public): (\d)\]", lambda m: f"[{m[1]}: {int(m[2]) // 2}]", key)

    # two information states share an observation if and only if they differ only in suits
    ranks = {suitless(key): obs for key, obs in by_state.items()}
    assert len(ranks) == len(observations) == 288
    assert all(ranks[suitless(key)] == obs for key, obs in by_state.items())
    isomorphic = poker_tree("leduc_holdem", suit_isomorphism=True)
    _check_mapping(isomorphic)
    assert len(_distinct(isomorphic.info_states, isomorphic.observations)[1]) == len(isomorphic.first_history) == 288
    assert len(_distinct(isomorphic.info_states, isomorphic.raw_observations)[1]) == 81  # pgx's own: 81 of 288
    # a policy of pgx's game has one NashConv on both of OpenSpiel's forms of the game
    policy = _random_policy("leduc_holdem", seed=3)
    for sampling in (False, True):
        a, b = (values(t, tabulate(policy, t, sampling)).nash_conv for t in (tree, isomorphic))
        assert a == pytest.approx(b, abs=1e-9)


def _random_policy(game: str, seed: int, hidden: int = 16) -> PokerPolicy:
    env = PokerBatch(game)
    rng = np.random.default_rng(seed)
    sizes = [env.observation_shape[0], hidden, env.num_actions]
    layers = [(rng.normal(size=(n_out, n_in)), rng.normal(size=n_out)) for n_in, n_out in itertools.pairwise(sizes)]
    return PokerPolicy(game, layers, "tanh", {})


@pytest.mark.parametrize(
    "game",
    ["kuhn_poker", pytest.param("leduc_holdem", marks=pytest.mark.slow)],  # Leduc: its tree and 4 NashConvs, ~15 s
)
def test_nash_conv_is_openspiels_python_nash_conv(game: str) -> None:
    """`values` (pyspiel.nash_conv of the tabulated policy) against OpenSpiel's Python
    `exploitability.nash_conv`, greedy and sampling, and greedy is a pure policy."""
    from open_spiel.python.algorithms import exploitability

    tree = poker_tree(game)
    policy = _random_policy(game, seed=1)
    found = {}
    for sampling in (False, True):
        table = tabulate(policy, tree, sampling)
        found[sampling] = values(tree, table).nash_conv
        assert found[sampling] == pytest.approx(exploitability.nash_conv(tree.openspiel, table), abs=1e-9)
        assert np.isin(table.action_probability_array, (0.0, 1.0)).all() != sampling
    assert found[False] != pytest.approx(found[True])


@pytest.mark.parametrize(
    "game",
    ["kuhn_poker", pytest.param("leduc_holdem", marks=pytest.mark.slow)],  # Leduc: its tree and the walks, ~20 s
)
def test_the_average_policy_is_worth_the_mean_of_the_policies_against_any_opponent(game: str) -> None:
    """`average_policy` is the sequence-form average: player p's average policy against a
    fixed opponent is worth the mean of the policies' values (for both seats), which a
    per-state average of the action probabilities is not where a player acts after its own
    actions; one policy averages to itself."""
    from open_spiel.python.algorithms.expected_game_score import policy_value

    from tacocat.analysis.poker import action_probabilities, average_policy, table_of

    tree = poker_tree(game)
    tables = [action_probabilities(_random_policy(game, seed), tree, sampling=True) for seed in (4, 5, 6)]
    opponent = table_of(tree, action_probabilities(_random_policy(game, 7), tree, sampling=True))
    start = tree.openspiel.new_initial_state()
    mixed, naive = average_policy(tree, tables), table_of(tree, np.mean(tables, axis=0))
    for seat in (0, 1):

        def worth(table, seat: int = seat) -> float:
            return policy_value(start, [table, opponent] if seat == 0 else [opponent, table])[seat]

        mean = np.mean([worth(table_of(tree, t)) for t in tables])
        assert worth(mixed) == pytest.approx(mean, abs=1e-9)
        if seat == 0:  # Kuhn's player_1 acts once a game, so there the two averages agree
            assert worth(naive) != pytest.approx(mean, abs=1e-6)
    one = average_policy(tree, tables[:1]).action_probability_array
    np.testing.assert_allclose(one, table_of(tree, tables[0]).action_probability_array, atol=1e-12)


def test_a_runs_average_policy_is_that_of_its_evaluations_in_the_second_half(tmp_path: Path) -> None:
    """`average_nash_conv` keeps each evaluation's table and values the average of those at
    half the steps or later; a resumed run drops the tables after its checkpoint."""
    from tacocat.analysis.poker import action_probabilities, average_policy
    from tacocat.train.evaluation import average_nash_conv, drop_policy_tables, policy_tables

    tree = poker_tree("kuhn_poker")
    policies = {step: _random_policy("kuhn_poker", seed=step) for step in (100, 200, 300, 400)}
    for step, policy in policies.items():
        path = save_policy(tmp_path / f"policy_{step}.npz", policy.layers, "kuhn_poker", "tanh")
        found = average_nash_conv(tmp_path, str(path), "kuhn_poker", step)
    saved = {step: load_policy(tmp_path / f"policy_{step}.npz", "kuhn_poker") for step in policies}  # float32
    kept = [action_probabilities(saved[step], tree, sampling=True) for step in (200, 300, 400)]
    assert found == pytest.approx(values(tree, average_policy(tree, kept)).nash_conv, abs=1e-12)
    assert found != pytest.approx(values(tree, average_policy(tree, [*kept, kept[0]])).nash_conv, abs=1e-6)
    (tmp_path / "policy_tables" / "notes.txt").write_text("not a table")
    drop_policy_tables(tmp_path, 200)
    assert [step for step, _ in policy_tables(tmp_path)] == [100, 200]


def test_auto_reset_keeps_the_last_steps_payoff_and_deals_a_new_game() -> None:
    """`step_autoreset` against pgx's `experimental.auto_reset` on the same keys and actions:
    the same inner games, rewards and flags at every step."""
    from pgx.experimental import auto_reset

    env = PokerBatch("kuhn_poker")
    theirs = jax.jit(auto_reset(env.env.step, env.env.init))
    ours = jax.jit(env.step_autoreset)
    key = jax.random.key(7)
    state = env.init(key)
    inner = env.env.init(key)
    ends = 0
    for t in range(12):
        action = jnp.int32(t * 5 % 3 % 2)
        step_key = jax.random.fold_in(key, t)
        state, inner = ours(state, action, step_key), theirs(inner, action, step_key)
        for field in ("_cards", "current_player", "_pot", "legal_action_mask"):
            np.testing.assert_array_equal(getattr(state.inner, field), getattr(inner, field))
        np.testing.assert_array_equal(state.rewards, inner.rewards)
        assert bool(state.terminated) == bool(inner.terminated)
        ends += int(state.terminated)
        assert (state.history >= 0).sum() == int(state.inner._step_count)  # a new game starts an empty sequence
    assert ends >= 2


def _poker_config(tmp_path: Path, **changes: object) -> Path:
    data: dict = {
        "base_config": str(KUHN),
        "name": "kuhn_smoke",
        "total_timesteps": 2048,
        "run_root": str(tmp_path / "runs"),
        "checkpoint_every": 1024,
        "n_envs": 16,
        "league": {"fast_compile": True, "snapshot_every": 1},
        "algo": {"n_steps": 32, "batch_size": 128, "n_epochs": 1, "net_arch": [16]},
        "eval": {"every": 1024},
    }
    data.update(changes)
    path = tmp_path / "poker.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.slow  # a league run on Kuhn (compiled once) and its exact values: about 20 s here
def test_a_league_run_on_kuhn_logs_greedy_and_sampling_nash_conv(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "--config", str(_poker_config(tmp_path)), "--no-progress"])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    lines = (run_dir / "exploitability.csv").read_text().splitlines()
    assert lines[0].split(",") == EXACT_FIELDS and len(lines) == 3
    last = dict(zip(EXACT_FIELDS, lines[-1].split(","), strict=True))
    report = poker_report(run_dir / "policy.npz", "kuhn_poker")  # the exported policy, valued again
    assert float(last["nash_conv_greedy"]) == pytest.approx(report.greedy.nash_conv, abs=1e-9)
    assert float(last["nash_conv_sampling"]) == pytest.approx(report.sampling.nash_conv, abs=1e-9)
    assert 0 < report.sampling.nash_conv < 1.5 and last["best_response_0_greedy"] == ""
    # the average policy: of the evaluations at 1,024 and 2,048 steps, the first alone at 1,024
    first = dict(zip(EXACT_FIELDS, lines[1].split(","), strict=True))
    assert float(first["nash_conv_average"]) == pytest.approx(float(first["nash_conv_sampling"]), abs=1e-9)
    assert [step for step, _ in policy_tables(run_dir)] == [1024, 2048]
    both = average_policy(tree := poker_tree("kuhn_poker"), [np.load(f) for _, f in policy_tables(run_dir)])
    assert float(last["nash_conv_average"]) == pytest.approx(values(tree, both).nash_conv, abs=1e-9)
    policy = load_policy(run_dir / "policy.npz", "kuhn_poker")
    assert policy.meta["timesteps"] == 2048 and [w.shape for w, _ in policy.layers] == [(16, 15), (2, 16)]
    # the exported network is the learner's actor: numpy's logits are JAX's on the tree's observations
    from tacocat.train.league.network import masked_logits
    from tacocat.train.league.trainer import LeagueTrainer, export_policy

    config = load_experiment(_poker_config(tmp_path))
    trainer = LeagueTrainer(config)
    fresh = load_policy(export_policy(trainer.params(), tmp_path / "fresh.npz", config, 0), "kuhn_poker")
    tree = poker_tree("kuhn_poker")
    jax_logits = masked_logits(trainer.params()["actor"], tree.observations, tree.masks, "tanh")
    np.testing.assert_allclose(
        np.where(tree.masks, fresh.logits(tree.observations), 0), np.where(tree.masks, jax_logits, 0), atol=1e-5
    )


# ---------------------------------------------------------------------------------------
# bad input: one line at validation, nothing written
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rules": {"max_rounds": 1}}, "rules: a Tacocat option; league.game kuhn_poker has none"),
        ({"opponents": [{"agent": "counter"}]}, "opponents: a Tacocat option"),
        ({"eval": {"every": 1024, "opponents": ["random"]}}, "eval.opponents: a Tacocat option"),
        ({"eval": {"every": 1024, "final": [{"agent": "random"}]}}, "eval.final: a Tacocat option"),
        ({"eval": {"every": 1024, "nash_conv": False}}, "eval.nash_conv: a league on kuhn_poker is evaluated"),
        ({"league": {"game": "chess"}}, "league.game"),
        ({"league": {"game": "kuhn_poker", "init_actor": "champion"}}, "league.init_actor: a Tacocat option"),
    ],
)
def test_tacocat_options_and_unknown_games_are_refused_in_one_line(tmp_path: Path, changes: dict, message: str) -> None:
    path = _poker_config(tmp_path, **changes)
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_experiment(read_experiment(path))
    result = CliRunner().invoke(app, ["train", "--config", str(path), "--no-progress"])
    assert result.exit_code != 0 and message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()


def test_a_policy_of_one_game_is_refused_for_another(tmp_path: Path) -> None:
    kuhn = _random_policy("kuhn_poker", seed=0)
    path = save_policy(tmp_path / "kuhn.npz", kuhn.layers, "kuhn_poker", "tanh")
    assert load_policy(path, "kuhn_poker").layers[0][0].shape == (16, 15)
    with pytest.raises(ValueError, match=r"kuhn\.npz: a policy trained on 'kuhn_poker', not on 'leduc_holdem'"):
        load_policy(path, "leduc_holdem")
    wrong = save_policy(tmp_path / "wrong.npz", kuhn.layers, "leduc_holdem", "tanh")  # Kuhn's layers, Leduc's name
    with pytest.raises(ValueError, match="do not fit leduc_holdem's observation of 60 and 3 actions"):
        load_policy(wrong, "leduc_holdem")
    shutil.copy(path, tmp_path / "copy.npz")
    (tmp_path / "text.npz").write_text("not an npz")
    with pytest.raises(ValueError, match="not a poker policy file"):
        load_policy(tmp_path / "text.npz", "kuhn_poker")
    with pytest.raises(ValueError, match="unknown poker game 'chess'"):
        load_policy(tmp_path / "copy.npz", "chess")


def test_exploit_exact_values_a_poker_policy_as_openspiel_does(tmp_path: Path) -> None:
    """`tacocat exploit poker:path=F --game kuhn_poker --exact` prints the NashConv that
    OpenSpiel's Python `exploitability.nash_conv` gives the tabulated policy, greedy and
    sampling; what does not apply to a poker game is one line, and nothing is written."""
    from open_spiel.python.algorithms import exploitability

    policy = _random_policy("kuhn_poker", seed=3)
    path = save_policy(tmp_path / "kuhn.npz", policy.layers, "kuhn_poker", "tanh")
    result = CliRunner().invoke(app, ["exploit", f"poker:path={path}", "--game", "kuhn_poker", "--exact"])
    assert result.exit_code == 0, result.output
    tree = poker_tree("kuhn_poker")
    for mode, sampling in (("greedy", False), ("sampling", True)):
        expected = exploitability.nash_conv(tree.openspiel, tabulate(policy, tree, sampling))
        row = next(line for line in result.output.splitlines() if line.startswith(f"| {mode} |"))
        assert float(row.split("|")[2]) == pytest.approx(expected, abs=1e-6)
    before = sorted(tmp_path.iterdir())
    for args, message in [
        ([f"poker:path={path}", "--game", "kuhn_poker"], "--game kuhn_poker needs --exact"),
        ([f"poker:path={path}", "--game", "leduc_holdem", "--exact"], "a policy trained on 'kuhn_poker'"),
        (["counter", "--game", "kuhn_poker", "--exact"], "AGENT must be poker:path=FILE"),
        ([f"poker:path={path}", "--game", "kuhn_poker", "--exact", "--preset", "tiny"], "--preset is Tacocat's"),
        ([f"poker:path={path}", "--game", "chess", "--exact"], "unknown --game 'chess': give tacocat"),
    ]:
        result = CliRunner().invoke(app, ["exploit", *args])
        assert result.exit_code != 0 and message in result.output and "Traceback" not in result.output, args
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.slow  # Leduc's init, step and replay compiled: about 15 s here
def test_a_resumed_runs_poker_environments_are_checked_against_their_deals_and_bets(tmp_path: Path) -> None:
    """A checkpoint's environments are replayed from their deals, first players and bets
    (`PokerBatch.replay`): states reached by play pass, a changed bet or card is refused."""
    from tacocat.train.league.checkpoint import _check_rows
    from tacocat.train.run_dir import RunDirError

    class Rows(NamedTuple):  # the runner's per-row fields that the check reads
        seat: np.ndarray
        floor: np.ndarray
        env_state: object

    config = load_experiment(_poker_config(tmp_path, league={"game": "leduc_holdem"}))
    env = PokerBatch("leduc_holdem")
    state = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(0), 16))
    step = jax.jit(jax.vmap(env.step_autoreset))
    for t in range(5):  # legal actions drawn at random: some games end and start again
        logits = jnp.where(state.legal_action_mask, jax.random.normal(jax.random.key(t), (16, 3)), -1e9)
        state = step(state, jnp.argmax(logits, axis=1), jax.random.split(jax.random.key(100 + t), 16))
    assert int((state.history >= 0).sum()) > 0
    runner = Rows(np.zeros(16, np.int32), np.zeros((16, 2), np.int32), state)
    _check_rows(runner, env, config, tmp_path / "arrays.npz", "learner")  # as played: accepted
    played = int(np.flatnonzero((np.asarray(state.history) >= 0).any(axis=1))[0])
    bets = np.asarray(state.history).copy()
    bets[played, 0] = (bets[played, 0] + 1) % 3
    with pytest.raises(
        RunDirError, match=r"arrays\.npz: the environments' \w+ is not the one their deals and bets give"
    ):
        _check_rows(
            runner._replace(env_state=state._replace(history=jnp.asarray(bets))),
            env,
            config,
            tmp_path / "arrays.npz",
            "learner",
        )
    cards = np.asarray(state.inner._cards).copy()
    cards[0, 0] = 7
    bad = state._replace(inner=state.inner.replace(_cards=jnp.asarray(cards)))
    with pytest.raises(RunDirError, match="deals, first players or bets are out of range"):
        _check_rows(runner._replace(env_state=bad), env, config, tmp_path / "arrays.npz", "learner")
