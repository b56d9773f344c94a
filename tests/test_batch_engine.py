"""The batch engine (tacocat.game.batch, JAX + pgx) against the reference engine.

Differential: both engines play the same random legal moves from the same deal, in lockstep,
and every decision is compared (mask, both observations bit for bit, rewards, flags, player to
act); new rounds are re-synced from the reference's deal (the shufflers differ). The loop and
its comparisons live in `support.lockstep` (tests/support/lockstep.py, also run at scale from the command line).
Rule numbers cite RULES_REFERENCE.md.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pgx = pytest.importorskip("pgx")
import jax.numpy as jnp  # noqa: E402 (after importorskip)

from conftest import DEFAULT, resample_hidden, sample_states  # noqa: E402 (after importorskip)
from support.lockstep import FAST_COMPILE, compiled_functions, lockstep, lockstep_from  # noqa: E402 (after importorskip)
from tacocat import Phase, RulesConfig, apply_action, encode, legal_actions, new_game, setup_position  # noqa: E402 (after importorskip)
from tacocat.game.batch import ConfigNotCompilableError, TacocatBatch, core  # noqa: E402 (after importorskip)
from tacocat.game.batch.convert import draw_pile, game_fields  # noqa: E402 (after importorskip)
from tacocat.game.batch.rollout import make_rollout, random_legal_actions  # noqa: E402 (after importorskip)
from tacocat.game.observation import ObservationLayout  # noqa: E402 (after importorskip)
from tacocat.game.ruleset import compile_rules  # noqa: E402 (after importorskip)

VARIANTS = {
    "leading_arrows_arrow_player_wins": {"arrow_policy": "leading", "tie_policy": "arrow_player_wins"},
    "explicit_arrows_small_board_shaping": {
        "arrow_policy": "explicit",
        "arrows": ("player_0", "both", "player_1", "both", "player_0"),
        "board": (3, 5, 7, 5, 3),
        "round_reward": 0.25,
    },
    "truncation_max_rounds_3": {"max_rounds": 3, "tie_policy": "arrow_player_wins"},
    "other_deck_gapped_values_shaping": {
        "deck": {1: 4, 2: 4, 3: 4, 5: 4, 6: 4, 7: 4, 9: 4, 10: 4},
        "board": (2, 5, 8, 5, 2),
        "round_reward": 0.1,
    },
}


@pytest.fixture(scope="module")
def env() -> TacocatBatch:
    return TacocatBatch()


# Compilation dominates these tests' time, so they share a few compiled functions: the
# vmapped step and both-players observation of the lockstep check, and a vmapped init.
def batched(env: TacocatBatch):
    return compiled_functions(env, True)


@functools.lru_cache(maxsize=4)
def init_batch(env: TacocatBatch):
    return jax.jit(jax.vmap(env.init), compiler_options=FAST_COMPILE)


def keys(seed: int, n: int) -> jax.Array:
    return jax.random.split(jax.random.key(seed), n)


# ---------------------------------------------------------------------------------------
# differential tests (issue: >= 2,000 default games, >= 300 on each of >= 4 variants)
# ---------------------------------------------------------------------------------------
@pytest.mark.slow  # over 15 s on the 2-core machine; `-m 'not slow'` skips it
def test_lockstep_default_rules_2000_games(env):
    report = lockstep(env, 2000, seed=8, batch=1000, fast_compile=True)
    assert report.mismatches == []
    assert report.games == 2000 and report.decisions > 150_000 and report.resyncs > 5_000


@pytest.mark.slow  # each variant compiles its own step: 11-15 s of CPU each on the 2-core machine
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_lockstep_variants_300_games(name):
    report = lockstep(TacocatBatch(RulesConfig(**VARIANTS[name])), 300, seed=9, batch=300, fast_compile=True)
    assert report.mismatches == []
    assert report.games == 300 and report.decisions > 10_000


def test_lockstep_catches_a_wrong_engine(env):
    # the comparison is not vacuous: one extra card in one batch hand is reported
    def tamper(state):
        return state.replace(hands=state.hands.at[3, 0, 0].add(1))

    report = lockstep(env, 8, seed=1, batch=8, fast_compile=True, tamper=tamper)
    assert any("game 3" in m and "observation of player_0" in m for m in report.mismatches)


def test_lockstep_from_set_up_positions(env):
    # any setup_position position converts and plays on identically (draws from its pile order)
    positions = [
        setup_position(([1, 5, 9, 12], [2, 6, 7, 10]), space=0, phase="replace", seed=1),
        setup_position(([4, 5, 8], [2, 2, 9, 11]), phase="replace", to_act=1, set_aside=[3], seed=2),
        setup_position(([7, 8], [1, 1, 4]), phase="duel", to_act=1, duel_card=12, seed=3),
        setup_position(([5, 6], [2, 3, 9, 10, 11]), phase="answer", attacker=0, attack=[7, 8, 9], seed=4),
        setup_position(([4, 4, 10], [6, 11, 12]), space=5, covered=[4, 6], phase="attack", attacker=1, seed=5),
    ]
    report = lockstep_from(env, positions, seed=3, fast_compile=True)
    assert report.mismatches == [] and report.decisions > 0


@pytest.mark.slow  # about 11 s on its own (the batch init compiled, 16 games played on in lockstep)
def test_batch_dealt_positions_convert_to_valid_reference_states(env):
    # positions the batch engine dealt itself become reference states (same pile order),
    # which then play on identically in both engines
    step, observe_both = batched(env)
    state = init_batch(env)(keys(5, 16))
    rng = np.random.default_rng(0)
    for k in range(25):
        mask = np.asarray(state.legal_action_mask)
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask], np.int32)
        state = step(state, jnp.asarray(actions), keys(100 + k, 16))
    live = [i for i in range(16) if not bool(state.terminated[i] | state.truncated[i])]
    games = [env.to_game(state, i, seed=i) for i in live]
    observations = np.asarray(observe_both(state))
    for i, g in zip(live, games, strict=True):  # same position, same public and private facts
        for p in (0, 1):
            assert observations[i, p].tobytes() == encode(g, p).tobytes()
    assert len(games) >= 8
    assert lockstep_from(env, games, seed=4, fast_compile=True).mismatches == []


# ---------------------------------------------------------------------------------------
# R7.3 hidden information, by perturbation
# ---------------------------------------------------------------------------------------
def test_R7_3_batch_observation_and_mask_ignore_hidden_cards(env):
    rng = np.random.default_rng(7)
    pairs = []
    for seed in range(6):
        for state in sample_states(seed, DEFAULT, every=4):
            for observer in (0, 1):
                pairs.append((observer, state, resample_hidden(state, observer, rng)))
    batch = env.from_games([g for _, a, b in pairs for g in (a, b)])
    obs = np.asarray(batched(env)[1](batch))
    mask = np.asarray(batch.legal_action_mask)
    changed = 0
    for k, (observer, state, _twin) in enumerate(pairs):
        assert obs[2 * k, observer].tobytes() == obs[2 * k + 1, observer].tobytes()
        if state.current_player == observer:
            assert np.array_equal(mask[2 * k], mask[2 * k + 1])
        changed += obs[2 * k, 1 - observer].tobytes() != obs[2 * k + 1, 1 - observer].tobytes()
    assert len(pairs) > 100 and changed >= len(pairs) // 3  # the perturbation was real


# ---------------------------------------------------------------------------------------
# pgx interface, conversion, bad input
# ---------------------------------------------------------------------------------------
def test_pgx_interface(env):
    rules = compile_rules(DEFAULT)
    assert isinstance(env, pgx.core.Env)
    assert (env.id, env.version, env.num_players) == ("tacocat_v0", "v0", 2)
    assert env.num_actions == rules.codec.size
    assert env.observation_shape == (ObservationLayout(rules).size,)
    state = jax.tree.map(lambda x: x[0], init_batch(env)(keys(0, 1)))
    assert state.observation.dtype == jnp.float32 and state.legal_action_mask.dtype == jnp.bool_
    assert state.rewards.shape == (2,) and not bool(state.terminated) and not bool(state.truncated)
    both = np.asarray(batched(env)[1](jax.tree.map(lambda x: x[None], state)))[0]
    assert np.array_equal(np.asarray(state.observation), both[int(state.current_player)])


def test_conversion_round_trip_single_and_stacked(env):
    games = [new_game(DEFAULT, s) for s in range(3)]
    for g in games[:2]:
        for _ in range(7):
            apply_action(g, legal_actions(g)[0])
    one = game_fields(env.to_game(env.from_game(games[0])), env.tables)
    for name, value in game_fields(games[0], env.tables).items():
        if name != "_step_count":  # the history does not cross (docs/BATCH.md)
            assert np.array_equal(one[name], value), name
    stacked = env.from_games(games)
    for i, g in enumerate(games):
        back = env.to_game(stacked, i)
        assert back.hands == g.hands and back.draw_pile == g.draw_pile and back.phase == g.phase
        assert back.to_act == g.to_act and back.replace_queue == g.replace_queue


def test_bad_input_clear_errors(env):
    state = env.from_game(new_game(DEFAULT, 0))
    key = jax.random.key(1)
    with pytest.raises(TypeError, match="integer action id"):
        env.step(state, jnp.float32(3.0), key)
    with pytest.raises(ValueError, match=r"jax.vmap"):
        env.step(state, jnp.array([1, 2]), key)
    with pytest.raises(TypeError, match="PRNG key"):
        env.step(state, jnp.int32(1))
    with pytest.raises(TypeError, match="PRNG key"):
        env.step(state, jnp.int32(1), jnp.zeros(3, jnp.float32))
    # the rules config caps max_rounds below the engine's own limit today (docs/RULES.md); the
    # engine still checks its limit, should the config's ever be raised
    import tacocat.game.batch.tables as batch_tables

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch_tables, "MAX_ROUNDS_LIMIT", 10)
        with pytest.raises(ConfigNotCompilableError, match="max_rounds"):
            TacocatBatch(max_rounds=11)
    with pytest.raises(ValueError, match="odd number"):
        TacocatBatch(board=(4, 6))
    with pytest.raises(ValueError, match="another rules config"):
        env.from_game(new_game(RulesConfig(max_rounds=5), 0))
    with pytest.raises(ValueError, match="index"):
        env.to_game(env.from_games([new_game(DEFAULT, 0)]))


def test_illegal_action_policy_is_pgx(env):
    # an illegal id, one past the last id, and a negative id: the game ends at once, -1 to the
    # player who took it and +1 to the other; the move is not applied (pgx's policy)
    step = batched(env)[0]
    state = env.from_games([new_game(DEFAULT, s) for s in range(3)])
    mask = np.asarray(state.legal_action_mask)
    actions = jnp.asarray([int(np.flatnonzero(~mask[0])[0]), env.num_actions, -1], jnp.int32)
    after = step(state, actions, keys(1, 3))
    players = np.asarray(state.current_player)
    assert np.asarray(after.terminated).all()
    expected = np.ones((3, 2), np.float32)
    expected[np.arange(3), players] = -1.0
    assert np.array_equal(np.asarray(after.rewards), expected)
    assert np.asarray(after.legal_action_mask).all()
    for name in ("hands", "rank", "pile_size", "phase", "discard", "set_aside", "rounds_played", "current_player"):
        assert np.array_equal(np.asarray(getattr(after, name)), np.asarray(getattr(state, name))), name
    again = step(after, jnp.zeros(3, jnp.int32), keys(2, 3))  # a finished game: zero rewards
    assert np.array_equal(np.asarray(again.rewards), np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="illegal action"):
        env.to_game(after, 0)


# ---------------------------------------------------------------------------------------
# auto-reset and batched random play
# ---------------------------------------------------------------------------------------
def test_random_rollout_with_auto_reset_conserves_cards(env):
    rollout = make_rollout(env, batch_size=32, num_steps=400, compiler_options=FAST_COMPILE)
    state, stats = rollout(jax.random.key(0))
    finished = int(stats["finished"])
    assert finished == int(stats["terminated"]) + int(stats["truncated"]) and finished >= 32
    assert float(jnp.sum(stats["reward_sum"])) == 0.0  # zero-sum, shaping included
    # every card is somewhere, exactly once (hands, set aside, pile, discard, duel, table)
    copies = np.asarray(compile_rules(DEFAULT).copies)
    v = len(copies)

    def count(cards):
        cards = np.asarray(cards)
        return (cards[..., None] == np.arange(v)).sum(axis=-2)

    total = (
        np.asarray(state.hands).sum(1)
        + np.asarray(state.set_aside).sum(1)
        + np.asarray(jax.vmap(lambda s: core.pile_counts(env.tables, s))(state))
        + np.asarray(state.discard)
        + count(state.duel)
        + count(np.where(np.arange(state.attack.shape[1]) < np.asarray(state.attack_len)[:, None], state.attack, -1))
        + count(np.where(np.arange(state.answers.shape[1]) < np.asarray(state.answers_len)[:, None], state.answers, -1))
    )
    assert (total == copies).all()


@functools.lru_cache(maxsize=8)
def autoreset_functions(variant: str):
    """The engine of a variant ("default" or a key of VARIANTS), its vmapped `init` and
    `step_autoreset`, compiled once for the tests that share them."""
    env = TacocatBatch(RulesConfig(**VARIANTS.get(variant, {})))
    return (
        env,
        jax.jit(jax.vmap(env.init), compiler_options=FAST_COMPILE),
        jax.jit(jax.vmap(env.step_autoreset), compiler_options=FAST_COMPILE),
    )


def _finished_duel(env: TacocatBatch, step) -> core.State:
    """A game ended by step_autoreset: a duel with two cards each, 12 against 9, leaves one card
    each, straight to the showdown (R5.2), where 1 < 5 wins for player_0 on space 0 (the Tacocat
    enters player_0's goal, R6.3). Returns the new game step_autoreset shows in its place."""
    state = env.from_games([setup_position(([1, 12], [5, 9]), space=0, phase="duel", seed=0)])
    duel_base = compile_rules(DEFAULT).codec.duel_base
    state = step(state, jnp.asarray([duel_base + 11]), keys(0, 1))  # player_0 plays the 12
    return step(state, jnp.asarray([duel_base + 8]), keys(1, 1))  # player_1 plays the 9


def test_auto_reset_starts_a_new_game_and_keeps_final_rewards(env):
    step = jax.jit(jax.vmap(env.step_autoreset), compiler_options=FAST_COMPILE)
    state = _finished_duel(env, step)
    assert bool(state.terminated[0]) and np.array_equal(np.asarray(state.rewards[0]), [1.0, -1.0])
    assert int(state.rounds_played[0]) == 0 and int(state.space[0]) == DEFAULT.centre  # a fresh game
    assert int(state.phase[0]) == 0 and int(np.asarray(state.hands[0]).sum()) == 2 * DEFAULT.board[DEFAULT.centre]
    assert int(state._step_count[0]) == 0


@pytest.mark.slow  # each variant compiles its init and step_autoreset: 13-16 s on its own
@pytest.mark.parametrize("variant", ["default", *VARIANTS])
def test_auto_reset_plays_the_next_action_on_the_game_it_showed(variant):
    # pgx's auto_reset: the new game shown with the final flags is the one the next action
    # plays, whoever acts first in it (R4.1 both arrows: player_0; R4.2 one arrow: its player)
    env, init, step = autoreset_functions(variant)
    state = step(init(keys(5, 64)), jnp.full(64, -1), keys(6, 64))  # an illegal move ends each game
    assert bool(state.terminated.all()) and int(state._step_count.max()) == 0
    rng = np.random.default_rng(0)
    actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in np.asarray(state.legal_action_mask)])
    nxt = step(state, jnp.asarray(actions), keys(7, 64))
    assert not bool(nxt.terminated.any() | nxt.truncated.any())
    assert (np.asarray(nxt._step_count) == 1).all()
    for i in range(64):
        game = env.to_game(state, i)  # the new game shown, with the ended game's flags
        assert game.to_act == int(state.current_player[i])
        apply_action(game, int(actions[i]))
        expected = env.from_game(game)
        for name in (
            "hands",
            "set_aside",
            "current_player",
            "phase",
            "replace_left",
            "replace_cap",
            "replaced",
            "pile_size",
            "observation",
            "legal_action_mask",
        ):
            assert np.array_equal(np.asarray(getattr(nxt, name)[i]), np.asarray(getattr(expected, name))), (i, name)
    assert np.array_equal(np.asarray(nxt.rewards), np.zeros((64, 2)))


def test_auto_reset_after_a_real_ending_plays_the_next_action(env):
    # the reproduction of the issue: after the duel that ends the game, the next action is
    # applied to the new game shown (one step counted, player_0's hand as dealt minus the card)
    step = jax.jit(jax.vmap(env.step_autoreset), compiler_options=FAST_COMPILE)
    state = _finished_duel(env, step)
    action = int(np.flatnonzero(np.asarray(state.legal_action_mask[0]))[0])
    nxt = step(state, jnp.asarray([action]), keys(2, 1))
    assert int(nxt._step_count[0]) == 1 and not bool(nxt.terminated[0])
    game = env.to_game(state, 0)
    apply_action(game, action)
    expected = env.from_game(game)
    assert np.array_equal(np.asarray(nxt.hands[0]), np.asarray(expected.hands))
    assert np.array_equal(np.asarray(nxt.observation[0]), np.asarray(expected.observation))
    assert np.array_equal(np.asarray(nxt.rewards[0]), [0.0, 0.0])


@pytest.mark.slow  # shares autoreset_functions with the test above: 14-16 s on its own
@pytest.mark.parametrize("variant", ["default", *VARIANTS])
def test_to_game_converts_every_new_game_step_autoreset_shows(variant):
    # issue 36: a game shown by step_autoreset carries the ended game's flags (pgx's
    # convention); it converts to the new game's initial position, field for field, whether
    # the game before it was won, truncated (R1.5) or ended by an illegal action
    env, init, step = autoreset_functions(variant)
    state = init(keys(10, 64))
    key = jax.random.key(11)
    shown = {"terminated": 0, "truncated": 0}
    for _ in range(150):
        key, k_act, k_illegal, k_step = jax.random.split(key, 4)
        actions = random_legal_actions(k_act, state.legal_action_mask)
        actions = jnp.where(jax.random.uniform(k_illegal, (64,)) < 0.002, -1, actions)
        state = step(state, actions, jax.random.split(k_step, 64))
        for flag in shown:
            shown[flag] += int(getattr(state, flag).sum())
        for i in np.flatnonzero(np.asarray(state.terminated | state.truncated)):
            game = env.to_game(state, int(i), seed=0)
            assert (game.phase, game.rounds_played, game.winner, game.truncated) == (Phase.REPLACE, 0, None, False)
            for name, value in game_fields(game, env.tables).items():
                if name != "rank":  # the order of the cards out of the pile is no fact of the game
                    assert np.array_equal(value, np.asarray(getattr(state, name)[i])), (i, name)
            assert game.draw_pile == draw_pile(np.asarray(state.rank[i]), int(state.pile_size[i]), env.tables)
    assert shown["terminated"] > 0
    assert shown["truncated"] > 0 or VARIANTS.get(variant, {}).get("max_rounds") is None


def test_auto_reset_replaces_a_game_finished_by_step(env):
    # a game that ended under `step` (flags set, play over) and is given to step_autoreset is
    # replaced by a new game without playing the action, its flags cleared
    plain = jax.jit(jax.vmap(env.step), compiler_options=FAST_COMPILE)
    over = _finished_duel(env, plain)
    assert bool(over.terminated[0]) and int(over.phase[0]) == core.P_OVER
    new = jax.jit(jax.vmap(env.step_autoreset), compiler_options=FAST_COMPILE)(over, jnp.asarray([0]), keys(3, 1))
    assert not bool(new.terminated[0] | new.truncated[0]) and int(new._step_count[0]) == 0
    assert int(new.phase[0]) == core.P_REPLACE and np.array_equal(np.asarray(new.rewards[0]), [0.0, 0.0])


@pytest.mark.slow  # over 15 s on the 2-core machine; `-m 'not slow'` skips it
@pytest.mark.parametrize("variant", ["default", "truncation_max_rounds_3"])
def test_auto_reset_matches_pgx_auto_reset_from_the_same_keys(variant):
    # the same trajectory as pgx.experimental.auto_reset(env.step, env.init), every field of
    # every game at every step, from the same keys and actions (mostly legal, some illegal)
    from pgx.experimental import auto_reset

    env = TacocatBatch(RulesConfig(**VARIANTS.get(variant, {})))
    ours = jax.jit(jax.vmap(env.step_autoreset), compiler_options=FAST_COMPILE)
    theirs = jax.jit(jax.vmap(auto_reset(env.step, env.init)), compiler_options=FAST_COMPILE)
    a = b = jax.jit(jax.vmap(env.init), compiler_options=FAST_COMPILE)(keys(8, 96))
    key = jax.random.key(9)
    finished = 0
    for _ in range(150):
        key, k_act, k_illegal, k_step = jax.random.split(key, 4)
        actions = random_legal_actions(k_act, a.legal_action_mask)
        actions = jnp.where(jax.random.uniform(k_illegal, (96,)) < 0.01, -1, actions)
        step_keys = jax.random.split(k_step, 96)
        a, b = ours(a, actions, step_keys), theirs(b, actions, step_keys)
        for name, leaf in a.__dict__.items():
            assert np.array_equal(np.asarray(leaf), np.asarray(getattr(b, name))), name
        finished += int((a.terminated | a.truncated).sum())
    assert finished >= 96  # games ended and were replaced


def test_deal_is_uniform_on_average(env):
    # the shuffle deals uniformly: mean hand = deal x copies / deck
    state = init_batch(env)(keys(3, 4000))
    rules = compile_rules(DEFAULT)
    expected = DEFAULT.board[DEFAULT.centre] * np.asarray(rules.copies) / DEFAULT.deck_size
    mean = np.asarray(state.hands).mean(axis=0)
    assert np.abs(mean - expected).max() < 0.05  # standard error about 0.01
    assert (np.asarray(state.hands).sum(axis=2) == DEFAULT.board[DEFAULT.centre]).all()


def test_shuffle_is_a_permutation_with_uniform_positions():
    # R2.2: every shuffle is a permutation of the card slots, and each slot lands in each
    # position about equally often (chi-square over slots x positions, 6,000 shuffles)
    n, draws = 38, 6000
    words = jax.random.key_data(keys(11, draws))
    ranks = np.asarray(jax.jit(jax.vmap(lambda w: core._ranks(w, n)))(words))
    assert (np.sort(ranks, axis=1) == np.arange(n)).all()
    table = np.zeros((n, n))
    np.add.at(table, (np.repeat(np.arange(n)[None, :], draws, 0), ranks), 1)
    expected = draws / n
    chi2 = ((table - expected) ** 2 / expected).sum()
    dof = (n - 1) ** 2
    assert abs(chi2 - dof) < 5 * np.sqrt(2 * dof), chi2  # about 5 standard deviations
    # consecutive keys give unrelated shuffles: the position of slot 0 does not predict the next
    first = ranks[:, 0]
    assert abs(np.corrcoef(first[:-1], first[1:])[0, 1]) < 0.05


@pytest.mark.parametrize("dealing", [0.1, 0.9])  # the compacted path, and the all-rows fallback
@pytest.mark.parametrize("typed", [True, False])
def test_split_shuffle_is_the_shuffle_of_the_split_key(dealing, typed):
    # step_autoreset's shuffle: that of jax.random.split(key)[half], as pgx's auto_reset deals
    # (first half: a new round; second: a new game), for typed and raw keys, on both paths
    n, size = 38, 256
    rng = np.random.default_rng(1)
    key_batch = keys(13, size) if typed else jax.random.key_data(keys(13, size))
    deal, half = rng.random(size) < dealing, rng.integers(0, 2, size).astype(np.int32)
    t = TacocatBatch().tables
    batched = np.asarray(
        jax.jit(jax.vmap(lambda k, d, h: core._shuffle(t, k, d, h)))(key_batch, jnp.asarray(deal), jnp.asarray(half))
    )
    split = jax.vmap(jax.random.split)(key_batch if typed else jax.vmap(jax.random.wrap_key_data)(key_batch))
    chosen = jax.random.key_data(split)[np.arange(size), half]
    alone = np.asarray(jax.jit(jax.vmap(lambda w: core._ranks(w, n)))(chosen))
    assert np.array_equal(batched[deal], alone[deal]) and deal.sum() > 0


@pytest.mark.parametrize("dealing", [0.1, 0.9])  # the compacted path, and the all-rows fallback
def test_batched_shuffle_matches_the_shuffle_of_each_game(dealing):
    # under vmap only the dealing rows are shuffled; each row's shuffle is the one it gets alone
    n, size = 38, 256
    key_batch = keys(12, size)
    deal = np.random.default_rng(0).random(size) < dealing
    batched = np.asarray(
        jax.jit(jax.vmap(lambda k, d: core._shuffle(TacocatBatch().tables, k, d)))(key_batch, jnp.asarray(deal))
    )
    alone = np.asarray(jax.jit(jax.vmap(lambda w: core._ranks(w, n)))(jax.random.key_data(key_batch)))
    assert np.array_equal(batched[deal], alone[deal]) and deal.sum() > 0


def test_random_legal_actions_are_legal_and_uniform():
    # every row: a legal action, each legal action about equally often (chi-square per row
    # pattern), across the block boundaries of the two-level search
    rng = np.random.default_rng(1)
    patterns = [rng.random(121) < p for p in (0.05, 0.3, 0.9)] + [np.arange(121) >= 120]
    for pattern in patterns:
        pattern[rng.integers(121)] = True
        mask = np.repeat(pattern[None, :], 8000, axis=0)
        actions = np.asarray(jax.jit(random_legal_actions)(jax.random.key(int(pattern.sum())), jnp.asarray(mask)))
        assert pattern[actions].all()
        legal = np.flatnonzero(pattern)
        counts = np.bincount(actions, minlength=121)[legal]
        expected = len(actions) / len(legal)
        dof = max(len(legal) - 1, 1)
        chi2 = ((counts - expected) ** 2 / expected).sum()
        assert chi2 < dof + 5 * np.sqrt(2 * dof), (len(legal), chi2)


def test_import_tacocat_env_does_not_import_jax():
    code = "import sys, tacocat; assert 'jax' not in sys.modules and 'pgx' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
