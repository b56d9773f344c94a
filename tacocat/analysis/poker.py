"""Exact values of a league policy on Kuhn and Leduc poker, through OpenSpiel.

The league trains on pgx's games (`tacocat.analysis.poker_batch`); OpenSpiel's `kuhn_poker` and
`leduc_poker` are the same games, and its `nash_conv` the field's yardstick (Rudolph et al.,
ICLR 2026). `poker_tree` walks OpenSpiel's tree once and maps every decision history onto pgx:
the deal (OpenSpiel's cards are pgx's ranks: Kuhn's card, Leduc's card // 2), OpenSpiel's
player p as pgx's player p with player 0 first to act, and each action through
`PokerGame.pgx_action`; the mapped bets are replayed in pgx (`PokerBatch.replay`) for the
observation and the legal actions at every history. A policy is then tabulated at every
information state (`tabulate`: its network on the observation of the state's first history;
tests/test_league_poker.py checks on every history that the observation depends on the
information state only, tells any two apart, and that the legal actions and the payoffs are
OpenSpiel's) into an OpenSpiel `TabularPolicy`, greedy (the most probable legal action, the
lowest pgx action id on a tie) or sampling (the softmax), and valued by `pyspiel.nash_conv`.

A poker policy file (`save_policy` / `load_policy`, format `tacocat-poker-mlp-v1`) is an npz of
the actor's layers, (out, in) weights reading the raw observation, and a JSON record naming the
game: no pickle written or read, and a policy of one game refused for another.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np

from tacocat.analysis.poker_batch import PokerBatch, PokerGame, poker_game

POLICY_FORMAT = "tacocat-poker-mlp-v1"
ACTIVATIONS = ("tanh", "relu")
#: a poker policy file is read only up to this size
MAX_POLICY_BYTES = 64 << 20


# ---------------------------------------------------------------------------------------
# OpenSpiel's tree, mapped onto pgx
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PokerTree:
    """Every decision history of OpenSpiel's game with its pgx image (row i of each array)."""

    game: PokerGame
    openspiel: Any  # pyspiel.Game
    info_states: list[str]  # OpenSpiel's information state string of each history
    players: np.ndarray  # (histories,) the player to act
    legal: list[list[int]]  # OpenSpiel's legal actions of each history
    observations: np.ndarray  # (histories, obs) pgx's information-state observation (`PokerBatch.observe`)
    raw_observations: np.ndarray  # (histories, pgx obs) pgx's own observation
    masks: np.ndarray  # (histories, pgx actions) pgx's legal actions
    pgx_players: np.ndarray  # (histories,) pgx's player to act
    terminal_returns: np.ndarray  # (terminal histories, 2) OpenSpiel's returns
    terminal_rewards: np.ndarray  # (terminal histories, 2) pgx's rewards of the same histories

    @functools.cached_property
    def first_history(self) -> dict[str, int]:
        """Each information state's first history (the one a policy is tabulated on)."""
        first: dict[str, int] = {}
        for i, key in enumerate(self.info_states):
            first.setdefault(key, i)
        return first


def _deal(game: PokerGame, dealt: list[int], suits: bool) -> list[int]:
    """pgx's ranks of OpenSpiel's dealt cards (Leduc's card // 2, its rank, where OpenSpiel
    deals suits); before Leduc's public card is dealt, a card still in the deck stands for it
    (pgx deals it at the start; its observation shows it only in the second round)."""
    if game.name == "kuhn_poker":
        return dealt
    ranks = [card // 2 for card in dealt] if suits else dealt
    if len(ranks) < game.cards:
        left = [rank for rank in range(3) if ranks.count(rank) < 2]
        ranks.append(left[0])
    return ranks


@functools.cache
def poker_tree(name: str, suit_isomorphism: bool = False) -> PokerTree:
    """OpenSpiel's tree of poker game `name` mapped onto pgx (kept for the process). Leduc's
    cards have suits in OpenSpiel, none in pgx: information states that differ only in suits
    share an observation (a policy of pgx's game plays them alike, as a suit-blind policy of
    OpenSpiel's game). `suit_isomorphism`: OpenSpiel's `leduc_poker(suit_isomorphism=true)`,
    dealt by rank, whose information states are pgx's."""
    import pyspiel

    game = poker_game(name)
    openspiel = pyspiel.load_game(game.openspiel + ("(suit_isomorphism=true)" if suit_isomorphism else ""))
    decisions: list[tuple[Any, list[int], list[int]]] = []
    terminals: list[tuple[Any, list[int], list[int]]] = []

    def walk(state: Any, dealt: list[int], bets: list[int]) -> None:
        if state.is_terminal():
            terminals.append((state, dealt, bets))
            return
        if state.is_chance_node():
            for card, _ in state.chance_outcomes():
                walk(state.child(card), [*dealt, card], bets)
            return
        decisions.append((state, dealt, bets))
        for action in state.legal_actions():
            walk(state.child(action), dealt, [*bets, game.pgx_action[action]])

    walk(openspiel.new_initial_state(), [], [])
    env = PokerBatch(name)

    rows = decisions + terminals  # replayed in one call (one compilation)
    cards = np.array([_deal(game, dealt, not suit_isomorphism) for _, dealt, _ in rows], np.int32)
    history = np.full((len(rows), game.history_slots), -1, np.int32)
    for i, (_, _, bets) in enumerate(rows):
        history[i, : len(bets)] = bets
    fast = {"xla_backend_optimization_level": 0}  # compiles several times faster; runs once
    replayed = jax.jit(jax.vmap(lambda c, h: _replayed(env, c, h)), compiler_options=fast)(cards, history)
    replayed = jax.tree.map(np.asarray, replayed)
    n = len(decisions)
    states, raw, rewards = replayed
    return PokerTree(
        game=game,
        openspiel=openspiel,
        info_states=[state.information_state_string() for state, _, _ in decisions],
        players=np.array([state.current_player() for state, _, _ in decisions]),
        legal=[state.legal_actions() for state, _, _ in decisions],
        observations=states.observation[:n],
        raw_observations=raw[:n].astype(np.float32),
        masks=states.legal_action_mask[:n],
        pgx_players=states.current_player[:n],
        terminal_returns=np.array([state.returns() for state, _, _ in terminals]),
        terminal_rewards=rewards[n:].astype(np.float64),
    )


def _replayed(env: PokerBatch, cards: jax.Array, history: jax.Array) -> tuple[Any, jax.Array, jax.Array]:
    """One mapped history replayed (OpenSpiel's player 0 first to act): the state, pgx's own
    observation of the player to act and the rewards of the last bet (a terminal history's
    payoffs)."""
    state = env.replay(cards, jax.numpy.int32(0), history)
    small = state._replace(inner=None)
    return small, env.env._observe(state.inner, state.current_player), state.rewards


# ---------------------------------------------------------------------------------------
# a poker policy file
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PokerPolicy:
    """An actor: (weight (out, in), bias) layers reading the raw observation of `game`."""

    game: str
    layers: list[tuple[np.ndarray, np.ndarray]]
    activation: str
    meta: dict[str, Any]

    def logits(self, observations: np.ndarray) -> np.ndarray:
        x = np.asarray(observations, np.float64)
        for i, (weight, bias) in enumerate(self.layers):
            x = x @ weight.T.astype(np.float64) + bias.astype(np.float64)
            if i < len(self.layers) - 1:
                x = np.tanh(x) if self.activation == "tanh" else np.maximum(x, 0.0)
        return x


def save_policy(
    path: Path, layers: list[tuple[np.ndarray, np.ndarray]], game: str, activation: str, **meta: Any
) -> Path:
    """`layers` as a poker policy file of `game` (`meta`: the experiment, seed, timesteps)."""
    record = {"format": POLICY_FORMAT, "game": game, "activation": activation, **meta}
    arrays = {f"weight_{i}": np.asarray(w, np.float32) for i, (w, _) in enumerate(layers)}
    arrays |= {f"bias_{i}": np.asarray(b, np.float32) for i, (_, b) in enumerate(layers)}
    with Path(path).open("wb") as f:
        np.savez(f, allow_pickle=False, meta=np.array(json.dumps(record)), **arrays)
    return Path(path)


def load_policy(path: Path | str, game: str) -> PokerPolicy:
    """The poker policy file `path`, checked to be one of `game`: a one-line ValueError naming
    the file otherwise (not a poker policy file, another game, layers that do not fit)."""
    poker_game(game)
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such policy file")
    if path.stat().st_size > MAX_POLICY_BYTES:
        raise ValueError(f"{path}: over {MAX_POLICY_BYTES >> 20} MiB, not a poker policy file")
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            count = sum(1 for key in data.files if key.startswith("weight_"))
            layers = [(np.asarray(data[f"weight_{i}"]), np.asarray(data[f"bias_{i}"])) for i in range(count)]
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f"{path}: not a poker policy file ({type(err).__name__})") from None
    if not isinstance(meta, dict) or meta.get("format") != POLICY_FORMAT:
        raise ValueError(f"{path}: not a {POLICY_FORMAT} file")
    if meta.get("game") != game:
        raise ValueError(f"{path}: a policy trained on {meta.get('game')!r}, not on {game!r}")
    env = PokerBatch(game)
    sizes = [env.observation_shape[0]] + [int(w.shape[0]) for w, _ in layers]
    fits = bool(layers) and all(
        w.ndim == 2 and b.shape == (w.shape[0],) and w.shape[1] == n_in
        for (w, b), n_in in zip(layers, sizes, strict=False)
    )
    if not fits or sizes[-1] != env.num_actions or meta.get("activation") not in ACTIVATIONS:
        raise ValueError(
            f"{path}: its layers or activation do not fit {game}'s observation of {env.observation_shape[0]} "
            f"and {env.num_actions} actions"
        )
    if not all(np.isfinite(w).all() and np.isfinite(b).all() for w, b in layers):
        raise ValueError(f"{path}: its weights are not all finite")
    return PokerPolicy(game, layers, meta["activation"], meta)


# ---------------------------------------------------------------------------------------
# tabulated, valued
# ---------------------------------------------------------------------------------------
def action_probabilities(policy: PokerPolicy, tree: PokerTree, sampling: bool) -> np.ndarray:
    """(information states, pgx actions): the policy at each information state's first
    history, its softmax over the legal actions (`sampling`) or its most probable legal action."""
    rows = np.fromiter(tree.first_history.values(), int)
    masks = tree.masks[rows]
    logits = np.where(masks, policy.logits(tree.observations[rows]), -np.inf)
    if not sampling:
        return np.eye(masks.shape[1])[np.argmax(logits, axis=1)]
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


def tabulate(policy: PokerPolicy, tree: PokerTree, sampling: bool) -> Any:
    """The policy as OpenSpiel's `TabularPolicy` of the tree's game."""
    return table_of(tree, action_probabilities(policy, tree, sampling))


def table_of(tree: PokerTree, probabilities: np.ndarray) -> Any:
    """(information states, pgx actions) action probabilities, as `action_probabilities` gives
    them, as OpenSpiel's `TabularPolicy` of the tree's game."""
    from open_spiel.python.policy import TabularPolicy

    table = TabularPolicy(tree.openspiel)
    to_pgx = list(tree.game.pgx_action)
    for key, probs in zip(tree.first_history, probabilities, strict=True):
        table.policy_for_key(key)[:] = probs[to_pgx]
    return table


def average_policy(tree: PokerTree, tables: list[np.ndarray]) -> Any:
    """The average of the behaviour policies `tables` (each as `action_probabilities` gives
    it) as one behaviour policy, OpenSpiel's `TabularPolicy`: at each information state the
    policies' actions weighted by the acting player's own reach under each (the sequence-form
    average: CFR's and fictitious play's average strategy; OpenSpiel's `PolicyAggregator`).
    Against any opponent it is worth the mean of the policies' values."""
    from open_spiel.python.algorithms.policy_aggregator import PolicyAggregator
    from open_spiel.python.policy import tabular_policy_from_callable

    if not tables:
        raise ValueError("an average of no policies")
    pool = [table_of(tree, t) for t in tables]
    weights = [1.0 / len(pool)] * len(pool)
    mixed = PolicyAggregator(tree.openspiel).aggregate([0, 1], [pool, pool], [weights, weights])
    return tabular_policy_from_callable(tree.openspiel, mixed)


@dataclass(frozen=True)
class PokerValues:
    nash_conv: float
    policy_value_0: float  # player_0's return when the policy plays both seats


def values(tree: PokerTree, table: Any) -> PokerValues:
    """Exact NashConv (`pyspiel.nash_conv`) and player_0's value of an OpenSpiel policy."""
    import pyspiel
    from open_spiel.python.policy import python_policy_to_pyspiel_policy

    native = python_policy_to_pyspiel_policy(table)
    value = pyspiel.expected_returns(tree.openspiel.new_initial_state(), native, -1, True)[0]
    return PokerValues(float(pyspiel.nash_conv(tree.openspiel, native)), float(value))


@dataclass(frozen=True)
class PokerReport:
    """A poker policy's exact values, greedy and sampling."""

    path: str
    game: str
    information_states: int
    greedy: PokerValues
    sampling: PokerValues
    seconds: float


def poker_report(path: Path | str, game: str) -> PokerReport:
    """The exact values of the poker policy file `path` on `game`, greedy and sampling."""
    start = time.perf_counter()
    policy = load_policy(path, game)
    tree = poker_tree(game)
    greedy, sampling = (values(tree, tabulate(policy, tree, mode)) for mode in (False, True))
    return PokerReport(str(path), game, len(tree.first_history), greedy, sampling, time.perf_counter() - start)
