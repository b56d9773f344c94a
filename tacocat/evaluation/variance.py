"""Variance-reduced returns of played games: AIVAT-style control variates (Burch, Schmid,
Moravcik, Morrill and Bowling, "AIVAT: A New Variance Reduction Technique for Agent Evaluation
in Imperfect Information Games", AAAI 2018).

A game's return for player_0 is replaced by

    outcome - sum over chance events of [U(after the chance outcome) - E_outcome U]
            - sum over decisions of agents with known probabilities of
              [U(after the action) - sum_a pi(a) U(after a)]

where U is a value of the *full* state (both hands and the draw pile's composition: privileged,
which is allowed since the estimator runs after the game, outside the agents), seen from
player_0. Every bracket has expectation zero given the past whatever U is, as long as the
expectations are exact, so the estimate is unbiased for any U; a good U only removes variance.

Chance events (R2.2, R4.3, R6.4):

* the deal of every round (the whole deck reshuffled, player_0 dealt first): its expectation is
  exact, by enumerating every pair of hands with its multivariate hypergeometric probability,
  when there are at most `max_outcomes` of them, else a Monte Carlo mean over `samples` deals
  drawn from a generator of the estimator's own, independent of the game (an unbiased estimate
  of the expectation, so the estimate stays unbiased);
* the cards drawn when a replacement is revealed (R4.3): the draw pile's order is uniform given
  everything on the table, so the drawn cards are multivariate hypergeometric from the pile's
  composition; exact by enumeration (one player's draw always fits; the simultaneous draws of
  a two-arrow space, R4.1, are enumerated jointly when they fit, else sampled).

Decisions: an agent whose action probabilities are known (`policy_of`): `random` (uniform
over the legal actions), a policy file sampling from its masked softmax. A deterministic agent
(`highcard`, `planner` without sacrifices, a greedy policy file, `search:seeded=true`) needs no term: its
probabilities are one-hot on the action it took, so the bracket is 0. The decisions of an agent
whose probabilities are unknown (`counter`, `search`, `ismcts`: they sample internally) get a
*sampled* term when `draws` > 0 (off by default): the expectation over the agent's policy is replaced by the
mean over `draws` actions drawn from a copy of the same agent at the same decision, each with a
fresh generator seeded from the estimator's own stream, given only the acting player's input
(`AgentInput`: its own cards and the public information, R7.3). Given the state, those draws
are independent of the action taken and have its distribution, so the term still has
expectation zero and the estimate stays unbiased; the copy is a new agent from the same spec
(or a deep copy), so the agents that played, and their generators, are untouched. With
`draws=0` such decisions are left uncorrected (a zero-mean term left out: unbiased, only that
term's reduction forgone), and `require_policies=True` refuses such an agent with one line.

U(s) is the return paid so far plus `value(features(s))` (the value of the rest of the game),
and the game's return at a terminal state. With `rollouts` > 0 (off by default), a state past the
round's last chance event (the duel and the play, R5: no card is drawn there) is valued instead
by *playing the round out*: copies of the two agents that are playing (a new agent from the same
spec, or a deep copy) finish the round from that state, each with a fresh generator from the
estimator's own stream, and U is the `RoundPayoffs` payoff of the outcome they reach. For two
agents that choose deterministically given their input, that is the exact value of the round,
so their moves in the duel and the play no longer move U; the expectation over the cards drawn
by the replacement that ends the replace phase is then a mean over rollouts, exact over every
draw when there are at most `rollouts` of them, else over `rollouts` sampled draws. A rollout
is random only through the estimator's own generators, independent of the game, so the terms
keep expectation zero and the estimate stays unbiased. Where an agent samples its moves, a
playout is one draw of the round: `playouts` > 1 averages that many per value (a pair of
deterministic agents gets one, since every playout would be the same). The agents act on their input alone
(`AgentInput`: a copy that jumps into a state plays as the original would).

With `replay` (off by default), an agent whose probabilities are unknown and that has no stand-in
plays its rollouts with *its own generator as the game left it*: `estimate` is given the agents'
generators as the game began (`generators`), a copy of the agent replays its moves of the game
from that generator (and is refused, one line, where a move differs), and each rollout starts
from a deep copy of it. The rollout of the outcome that came then plays what the game played,
so the round's own moves no longer add noise; the other outcomes share those draws (common
random numbers). The generator as it stands after a move is fixed before the chance outcome
that follows and before the other agent's sampled move (their generators are apart), so every
term keeps expectation zero. It would not before the agent's own sampled terms (its generator
after a move is tied to the move), so `replay` and `draws` exclude each other.

A rollout need not be played by the agents themselves: U may be any function of the state and
the estimator's own randomness, so `stand_ins` names, per agent spec, another agent that plays
its part in the rollouts (the greedy form of a sampling policy file, a cheap player in place of
a slow searcher). The estimate stays unbiased whoever plays them; a stand-in that chooses
deterministically makes U noise-free (one playout), and the closer its play to the agent's, the
more of the round's variance U removes. The decision terms keep the agent's own probabilities.

The value is a `ValueFunction`: a callable from a matrix of `ValueFeatures` rows to player_0's
expected remaining return; `ValueNet` is the MLP value file that `tacocat.train.value_net` trains.
"""

from __future__ import annotations

import copy
import functools
import json
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.heuristic import HighCardAgent, PlannerAgent
from tacocat.agents.mlp_agent import CHAMPION, MLPPolicyAgent
from tacocat.agents.random_agent import RandomAgent
from tacocat.agents.registry import make_agent
from tacocat.agents.search import SearchAgent
from tacocat.game.config import RulesConfig
from tacocat.game.engine import apply_action, moves_to_goal, new_game, next_space, returns, round_shaping
from tacocat.game.ruleset import Ruleset, compile_rules
from tacocat.game.state import GameState, Phase

#: the value file format
VALUE_FORMAT = "tacocat-value-v1"
#: the feature layout version (bumped when `ValueFeatures` changes)
FEATURES_VERSION = 1
#: where the shipped value files live (package data beside the shipped policies)
MODELS = CHAMPION.parent


# ---------------------------------------------------------------------------------------
# features of the full state
# ---------------------------------------------------------------------------------------
class ValueFeatures:
    """The full state as a flat float vector (privileged: both hands), with named slices.

    Per card value: player_0's and player_1's hands, cards set aside, the discard pile, the
    attack on the table, its answers, each player's chosen duel card; per board space: the
    Tacocat's space (one-hot) and the covered spaces; then the phase, the player to act, the
    attacker, the arrow, the replace caps and revealed counts, each player's decisive rounds
    still to win (R6.3) and the rounds played. Card counts are divided by the largest number of
    copies of a value, so a feature is in [0, 1] or close."""

    def __init__(self, rules: Ruleset) -> None:
        self.rules = rules
        n, s = rules.n_values, rules.n_spaces
        widths = [
            ("hand0", n), ("hand1", n), ("aside0", n), ("aside1", n), ("discard", n), ("attack", n),
            ("answers", n), ("duel0", n), ("duel1", n), ("space", s), ("covered", s), ("phase", 4),
            ("to_act", 2), ("attacker", 2), ("arrow", 3), ("cap", 2), ("replaced", 2), ("goal", 2),
            ("rounds", 1),
        ]  # fmt: skip
        self.slices: dict[str, slice] = {}
        start = 0
        for name, width in widths:
            self.slices[name] = slice(start, start + width)
            start += width
        self.size = start
        self.scale = 1.0 / max(rules.copies)
        self.max_hand = max(rules.board)

    def hand_slice(self, player: int) -> slice:
        return self.slices[f"hand{player}"]

    def __call__(self, state: GameState) -> np.ndarray:
        """The feature vector of `state` (float64, `size` entries)."""
        x = np.zeros(self.size)
        sl, k = self.slices, self.scale
        for p in (0, 1):
            x[sl[f"hand{p}"]] = np.asarray(state.hands[p]) * k
            x[sl[f"aside{p}"]] = np.asarray(state.set_aside[p]) * k
            card = state.duel[p]
            if card is not None:
                x[sl[f"duel{p}"].start + card] = 1.0
        x[sl["discard"]] = np.asarray(state.discard) * k
        for v in state.attack:
            x[sl["attack"].start + v] += k
        for v in state.answers:
            x[sl["answers"].start + v] += k
        x[sl["space"].start + state.space] = 1.0
        x[sl["covered"]] = np.asarray(state.covered, dtype=float)
        if state.phase is not Phase.OVER:
            x[sl["phase"].start + int(state.phase)] = 1.0
            x[sl["to_act"].start + state.to_act] = 1.0
        if state.attacker is not None:
            x[sl["attacker"].start + state.attacker] = 1.0
        arrow = state.arrow
        x[sl["arrow"].start + (0 if arrow is None else 1 + arrow)] = 1.0
        x[sl["cap"]] = np.asarray(state.replace_cap, dtype=float) / self.max_hand
        x[sl["replaced"]] = [-1.0 if r is None else r / self.max_hand for r in state.replaced]
        n_spaces = self.rules.n_spaces
        winner = state.winner
        x[sl["goal"]] = [moves_to_goal(state.covered, state.space, winner, p) / (n_spaces + 1) for p in (0, 1)]
        x[sl["rounds"]] = state.rounds_played / state.config.max_rounds
        return x


class ValueFunction(Protocol):
    """Player_0's expected remaining return from each row of a `ValueFeatures` matrix."""

    def __call__(self, features: np.ndarray) -> np.ndarray: ...


# ---------------------------------------------------------------------------------------
# the value file
# ---------------------------------------------------------------------------------------
class ValueFileError(ValueError):
    """A value file that cannot be used here (one line naming the file and the problem)."""


#: the round outcomes a value network predicts: player_0 wins, player_1 wins, void (R6.2)
ROUND_OUTCOMES = 3


class RoundPayoffs:
    """Player_0's remaining return after each outcome of the running round, by board: the
    round's shaping (R1), the game's return if the Tacocat reaches a goal (R6.4), 0 if it was
    the last round (R1.5), else the *race value* of the new board: player_0's expected return
    if every later decisive round were won by player_0 with probability `p0_wins` (1/2 by
    default; R6.3; void rounds do not change it). A value function of the board alone, exact for
    no agent but the right shape: the leverage a round has on the game."""

    def __init__(self, rules: Ruleset, p0_wins: float = 0.5) -> None:
        if not 0.0 <= p0_wins <= 1.0:
            raise ValueError(f"p0_wins must be a probability, got {p0_wins}")
        self.rules = rules
        self.p0_wins = p0_wins
        self.features = ValueFeatures(rules)
        n = rules.n_spaces
        bonus = rules.config.round_reward
        self.table = np.zeros((n, 2**n, 2, ROUND_OUTCOMES))
        for space in range(n):
            for mask in range(2**n):
                covered = [bool(mask >> i & 1) for i in range(n)]
                if covered[space]:
                    continue
                for last in (0, 1):
                    for winner in (0, 1):
                        target = next_space(covered, space, winner)
                        after = covered.copy()
                        after[space] = True
                        sign = 1.0 if winner == 0 else -1.0
                        future = sign if target in (-1, n) else 0.0 if last else self._race(target, tuple(after))
                        self.table[space, mask, last, winner] = sign * bonus + future
                    self.table[space, mask, last, 2] = 0.0 if last else self._race(space, tuple(covered))

    @functools.cache  # noqa: B019  (one instance per ruleset and a bounded board: 7 x 2^7 keys)
    def _race(self, space: int, covered: tuple[bool, ...]) -> float:
        after = list(covered)
        after[space] = True
        total = 0.0
        for winner, share in ((0, self.p0_wins), (1, 1.0 - self.p0_wins)):
            target = next_space(list(covered), space, winner)
            if target in (-1, self.rules.n_spaces):
                total += share * (1.0 if winner == 0 else -1.0)
            else:
                total += share * self._race(target, tuple(after))
        return total

    def __call__(self, features: np.ndarray) -> np.ndarray:
        """(rows, 3) payoffs of the round outcomes for each row of features."""
        sl = self.features.slices
        space = features[:, sl["space"]].argmax(axis=1)
        mask = (np.rint(features[:, sl["covered"]]).astype(np.int64) << np.arange(self.rules.n_spaces)).sum(axis=1)
        max_rounds = self.rules.config.max_rounds
        last = (np.rint(features[:, sl["rounds"].start] * max_rounds) + 1 >= max_rounds).astype(np.int64)
        return self.table[space, mask, last]


@dataclass(frozen=True)
class ValueNet:
    """A value of the full state built on the running round: an MLP (standardised features,
    tanh hidden layers, `ROUND_OUTCOMES` logits) predicts how the round ends, and the value is
    the expected `RoundPayoffs` under those probabilities. `weights[i]`, `biases[i]` are layer
    i's (in, out) matrix and bias. A round's outcome is a far less noisy target than the game's,
    and each game gives several rounds.

    A *seated* file (`meta["pairing"]`: the two agent specs it was trained on) knows who sits
    where: its network takes one more input, 1 when the pairing's first agent is player_0 and 0
    when it is player_1, and its race values use the share of decisive rounds player_0 won in
    its training games in that seating (`meta["p0_wins"]`, one per seating). It values the
    games of that pairing only: `for_seating` binds it to a game's seating (`seat`)."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    mean: np.ndarray
    std: np.ndarray
    meta: dict[str, Any]
    payoffs: RoundPayoffs
    seat: float | None = None

    @property
    def pairing(self) -> tuple[str, str] | None:
        """The two agent specs a seated file was trained on (None for a file of any pairing)."""
        pairing = self.meta.get("pairing")
        return None if pairing is None else (str(pairing[0]), str(pairing[1]))

    def for_seating(self, specs: Sequence[str | None] | None) -> ValueNet:
        """This value for games with `specs[0]` as player_0 and `specs[1]` as player_1: itself
        for a file of any pairing; a seated file bound to that seating, or ValueFileError (one
        line) when the game is not of its pairing (or `specs` is None: any pairing)."""
        pairing = self.pairing
        if pairing is None:
            return self
        if specs is not None and tuple(specs) in (pairing, pairing[::-1]):
            first_is_p0 = tuple(specs) == pairing
            p0_wins = float(self.meta["p0_wins"][0 if first_is_p0 else 1])
            return replace(self, seat=1.0 if first_is_p0 else 0.0, payoffs=RoundPayoffs(self.payoffs.rules, p0_wins))
        wanted = "games of any pairing" if specs is None else f"{specs[0]} vs {specs[1]}"
        raise ValueFileError(
            f"the value file was trained for {pairing[0]} vs {pairing[1]} only (seated), not for {wanted}"
        )

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(rows, 3) the predicted probabilities of the round's outcomes."""
        h = np.atleast_2d(features)
        if self.pairing is not None:
            if self.seat is None:
                raise ValueError("a seated value file values a game only once bound to its seating (for_seating)")
            h = np.concatenate([h, np.full((len(h), 1), self.seat)], axis=1)
        h = (h - self.mean) / self.std
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = h @ w + b
            if i + 1 < len(self.weights):
                h = np.tanh(h)
        h = np.exp(h - h.max(axis=1, keepdims=True))
        return h / h.sum(axis=1, keepdims=True)

    def __call__(self, features: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(features)
        return np.sum(self.probabilities(x) * self.payoffs(x), axis=1)

    def save(self, path: str | Path) -> None:
        """Write the value file: the arrays plus a JSON `metadata` entry (read without pickle)."""
        arrays: dict[str, Any] = {f"w{i}": w for i, w in enumerate(self.weights)}
        arrays |= {f"b{i}": b for i, b in enumerate(self.biases)}
        arrays |= {"mean": self.mean, "std": self.std}
        arrays["metadata"] = np.frombuffer(json.dumps(self.meta, sort_keys=True).encode(), dtype=np.uint8)
        np.savez(path, **arrays)


def value_meta(rules: RulesConfig, **extra: Any) -> dict[str, Any]:
    """The metadata a value file for `rules` carries: what `load_value_net` checks."""
    ruleset = compile_rules(rules)
    return {
        "format": VALUE_FORMAT,
        "features_version": FEATURES_VERSION,
        "feature_size": ValueFeatures(ruleset).size,
        "ruleset_hash": ruleset.hash,
        "round_reward": float(rules.round_reward),
        **extra,
    }


def load_value_net(path: str | Path, rules: RulesConfig) -> ValueNet:
    """The value file at `path`, checked against `rules`: ValueFileError (one line) for a file
    that is missing or malformed, was trained for other rules (ruleset hash or round_reward)
    or takes another feature size."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: np.asarray(data[name], dtype=float) for name in data.files if name != "metadata"}
            meta = json.loads(bytes(np.asarray(data["metadata"], dtype=np.uint8)).decode())
    except FileNotFoundError:
        raise ValueFileError(f"value file {path} does not exist") from None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as err:
        raise ValueFileError(f"{path} is not a value file ({type(err).__name__}: {err})") from None
    if not isinstance(meta, dict) or meta.get("format") != VALUE_FORMAT:
        raise ValueFileError(f"{path} is not a {VALUE_FORMAT} value file")
    want = value_meta(rules)
    if meta.get("ruleset_hash") != want["ruleset_hash"] or meta.get("round_reward") != want["round_reward"]:
        raise ValueFileError(
            f"{path} was trained for ruleset {meta.get('ruleset_hash')} (round_reward {meta.get('round_reward')}), "
            f"this game uses {want['ruleset_hash']} (round_reward {want['round_reward']})"
        )
    if meta.get("feature_size") != want["feature_size"] or meta.get("features_version") != FEATURES_VERSION:
        raise ValueFileError(
            f"{path} takes features of size {meta.get('feature_size')} (version {meta.get('features_version')}), "
            f"these rules give {want['feature_size']} (version {FEATURES_VERSION})"
        )
    layers = sum(1 for name in arrays if name.startswith("w"))
    try:
        weights = tuple(arrays[f"w{i}"] for i in range(layers))
        biases = tuple(arrays[f"b{i}"] for i in range(layers))
        net = ValueNet(weights, biases, arrays["mean"], arrays["std"], meta, RoundPayoffs(compile_rules(rules)))
        if "pairing" in meta:
            _check_seated(meta)
        bound = replace(net, seat=1.0) if "pairing" in meta else net  # a seated file reads one more input
        shapes_ok = layers > 0 and bound.probabilities(np.zeros((1, want["feature_size"]))).shape == (1, ROUND_OUTCOMES)
    except (KeyError, ValueError, TypeError) as err:
        raise ValueFileError(f"{path} has malformed layers ({err})") from None
    if not shapes_ok:
        raise ValueFileError(f"{path} has malformed layers (not {ROUND_OUTCOMES} round outcomes)")
    return net


def _check_seated(meta: dict[str, Any]) -> None:
    """ValueError unless a seated file's metadata names two agent specs and two probabilities."""
    pairing, shares = meta.get("pairing"), meta.get("p0_wins")
    if not (isinstance(pairing, list) and len(pairing) == 2 and all(isinstance(spec, str) for spec in pairing)):
        raise ValueError(f"pairing {pairing!r} is not two agent specs")
    if not (
        isinstance(shares, list)
        and len(shares) == 2
        and all(isinstance(x, int | float) and 0 <= x <= 1 for x in shares)
    ):
        raise ValueError(f"p0_wins {shares!r} is not two probabilities")


def shipped_value_file(rules: RulesConfig, pairing: Sequence[str] | None = None) -> Path | None:
    """The value file shipped with the package for `rules` (tacocat/agents/models/value_*.npz
    whose ruleset hash, round_reward and feature size match): the one seated for `pairing` (in
    either order) if there is one, else the one for any pairing; None if there is none."""
    any_pairing = None
    for path in sorted(MODELS.glob("value_*.npz")):
        try:
            net = load_value_net(path, rules)
        except ValueFileError:
            continue
        if net.pairing is None:
            any_pairing = any_pairing or path
        elif pairing is not None and tuple(pairing) in (net.pairing, net.pairing[::-1]):
            return path
    return any_pairing


def resolve_value_file(path: str | Path | None, rules: RulesConfig, pairing: Sequence[str] | None = None) -> Path:
    """The value file to reduce with: `path` checked against `rules` and against `pairing` (a
    seated file serves its own pairing only; None: games of several pairings), else the shipped
    one (`shipped_value_file`). ValueFileError, one line, where there is none or it does not fit."""
    if path is None:
        shipped = shipped_value_file(rules, pairing)
        if shipped is None:
            raise ValueFileError(
                f"no shipped value file for ruleset {compile_rules(rules).hash}; train one with "
                "python -m tacocat.train.value_net"
            )
        return shipped
    load_value_net(path, rules).for_seating(pairing)
    return Path(path)


# ---------------------------------------------------------------------------------------
# chance outcomes
# ---------------------------------------------------------------------------------------
def _multisets(counts: Sequence[int], size: int, cap: int) -> list[tuple[int, ...]] | None:
    """Every way to take `size` cards from a pile with `counts` copies per value (as counts per
    value); None when there are more than `cap`."""
    out: list[tuple[int, ...]] = []
    n = len(counts)
    suffix = [0] * (n + 1)
    for v in range(n - 1, -1, -1):
        suffix[v] = suffix[v + 1] + counts[v]
    taken = [0] * n

    def walk(v: int, left: int) -> bool:
        if left == 0:
            out.append(tuple(taken))
            return len(out) <= cap
        if v == n or suffix[v] < left:
            return True
        for k in range(min(counts[v], left), -1, -1):
            taken[v] = k
            if not walk(v + 1, left - k):
                return False
        taken[v] = 0
        return True

    return out if walk(0, size) else None


def _hypergeometric(counts: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """P(drawing exactly `draws[i]` (counts per value) in sum(draws[i]) cards from `counts`)."""
    from scipy.special import comb

    total, size = int(counts.sum()), int(draws[0].sum())
    return np.prod(comb(counts[None, :], draws), axis=1) / comb(total, size)


def draw_outcomes(counts: Sequence[int], sizes: tuple[int, ...], cap: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact distribution of drawing `sizes[0]` cards, then `sizes[1]` (...), from a pile
    with `counts` copies per value in uniformly random order: (outcomes (m, len(sizes), n_values)
    counts per player, probabilities (m,)). None when there are more than `cap` outcomes."""
    outcomes: list[list[tuple[int, ...]]] = [[]]
    probs = [1.0]
    pile = np.asarray(counts)
    for size in sizes:
        nxt: list[list[tuple[int, ...]]] = []
        nxt_p: list[float] = []
        for prefix, p in zip(outcomes, probs, strict=True):
            left = pile - np.sum(prefix, axis=0) if prefix else pile
            options = _multisets(left.tolist(), size, cap)
            if options is None or len(nxt) + len(options) > cap:
                return None
            weights = _hypergeometric(left, np.asarray(options))
            nxt.extend([*prefix, o] for o in options)
            nxt_p.extend(p * weights)
        outcomes, probs = nxt, nxt_p
    return np.asarray(outcomes, dtype=float), np.asarray(probs)


def sample_outcomes(
    counts: Sequence[int], sizes: tuple[int, ...], samples: int, rng: np.random.Generator
) -> np.ndarray:
    """`samples` draws as in `draw_outcomes` from `rng` (samples, len(sizes), n_values)."""
    cards = np.repeat(np.arange(len(counts)), counts)
    order = rng.permuted(np.tile(cards, (samples, 1)), axis=1)
    out = np.zeros((samples, len(sizes), len(counts)))
    start = 0
    rows = np.arange(samples)[:, None]
    for i, size in enumerate(sizes):
        np.add.at(out[:, i], (np.broadcast_to(rows, (samples, size)), order[:, start : start + size]), 1.0)
        start += size
    return out


# ---------------------------------------------------------------------------------------
# agents' action probabilities
# ---------------------------------------------------------------------------------------
class UnknownPolicyError(ValueError):
    """Variance reduction needs an agent's action probabilities and they are not known."""


#: a function from an agent's input to its probabilities over action ids; None: the agent is
#: deterministic (no term needed); `UNKNOWN`: its probabilities are not known
Probabilities = Callable[[AgentInput], np.ndarray]
UNKNOWN = "unknown"
#: actions drawn per decision of an agent whose probabilities are unknown (`AIVAT.draws`): off
#: by default, since on the full game they did not narrow the interval (docs/EVALUATION.md)
DRAWS = 0
#: rollouts per chance expectation past the replace phase (`AIVAT.rollouts`): off by default,
#: since a rollout of an agent that samples its moves is a one-game draw of the round, noisier than
#: the value file, and a rollout of `search` searches again; docs/EVALUATION.md measures both sides
ROLLOUTS = 0


def check_options(draws: int, rollouts: int, playouts: int, stand_ins: bool, replay: bool) -> None:
    """ValueError (one line) where the estimator's options do not fit together (`AIVAT`)."""
    if draws < 0 or rollouts < 0 or playouts < 1:
        raise ValueError(f"draws and rollouts must be >= 0 and playouts >= 1, got {draws}, {rollouts}, {playouts}")
    if rollouts == 0 and (playouts > 1 or stand_ins or replay):
        what = "stand-ins" if stand_ins else "replayed generators" if replay else "playouts"
        raise ValueError(f"{what} shape the rollouts, which are off: give rollouts > 0")
    if replay and draws > 0:
        raise ValueError("replay and draws exclude each other: a replayed generator ties sampled terms to the move")


def _uniform(inp: AgentInput) -> np.ndarray:
    mask = inp.action_mask.astype(float)
    return mask / mask.sum()


def _softmax_of(agent: MLPPolicyAgent) -> Probabilities:
    def probabilities(inp: AgentInput) -> np.ndarray:
        logits = agent.logits(inp.observation)
        legal = inp.action_mask.astype(bool)
        z = np.where(legal, logits - logits[legal].max(), -np.inf)
        p = np.exp(z)
        return p / p.sum()

    return probabilities


def agent_copy(agent: Agent) -> Agent:
    """A new agent from `agent`'s spec, else a deep copy: the original and its generator are
    untouched by what the copy does."""
    return make_agent(agent.spec) if agent.spec is not None else copy.deepcopy(agent)


def policy_of(agent: Agent) -> Probabilities | str | None:
    """How an agent chooses, for the decision terms: its probability function (random, a
    sampling policy file), None for a deterministic agent, `UNKNOWN` otherwise."""
    if isinstance(agent, RandomAgent):
        return _uniform
    if isinstance(agent, MLPPolicyAgent):
        return None if agent.deterministic else _softmax_of(agent)
    if type(agent) is HighCardAgent or (type(agent) is PlannerAgent and agent.sacrifice_rate == 0.0):
        return None
    if isinstance(agent, SearchAgent) and agent.seeded:  # its worlds seeded by its view: a pure strategy
        return None
    return UNKNOWN


# ---------------------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------------------
def _round_reward(before: GameState, after: GameState) -> float:
    """Player_0's reward paid by the move from `before` to `after`: round shaping (R1) and,
    at the end, the game's return."""
    reward = round_shaping(after, before.rounds_played)[0] if after.rounds_played > before.rounds_played else 0.0
    return reward + (returns(after)[0] if after.is_over else 0.0)


class AIVAT:
    """The reduced return of a game (module docstring): `estimate(seed, actions, agents)`.

    `value`: the value function; `samples`: Monte Carlo deals or draws where an exact
    expectation has more than `max_outcomes` outcomes; `draws`: actions drawn from a copy of an
    agent whose probabilities are unknown at each of its decisions (module docstring), 0 to
    leave those decisions uncorrected; `require_policies`: with `draws=0`, refuse such agents
    instead; `rollouts`: the round played out by copies of the agents past the replace phase,
    with at most that many rollouts per chance expectation (module docstring), 0 for the value
    alone; `playouts`: the playouts averaged per rollout value where an agent samples;
    `stand_ins`: agent spec -> the spec of an agent that plays its part in the rollouts instead
    of a copy of it (module docstring)."""

    def __init__(
        self,
        rules: RulesConfig,
        value: ValueFunction,
        samples: int = 256,
        max_outcomes: int = 2048,
        draws: int = DRAWS,
        require_policies: bool = False,
        rollouts: int = ROLLOUTS,
        playouts: int = 1,
        stand_ins: Mapping[str, str] | None = None,
        replay: bool = False,
    ) -> None:
        if samples < 1 or max_outcomes < 1:
            raise ValueError(f"samples and max_outcomes must be >= 1, got {samples} and {max_outcomes}")
        check_options(draws, rollouts, playouts, bool(stand_ins), replay)
        self.rules = rules
        self.ruleset = compile_rules(rules)
        self.features = ValueFeatures(self.ruleset)
        self.value = value
        self.samples = samples
        self.max_outcomes = max_outcomes
        self.draws = draws
        self.require_policies = require_policies
        self.rollouts = rollouts
        self.playouts = playouts
        #: keyed by the canonical spec (`Agent.spec`), each stand-in built once here to check it
        self.stand_ins = {
            make_agent(agent).spec or agent: make_agent(spec).spec or spec for agent, spec in (stand_ins or {}).items()
        }
        self.replay = replay
        self.payoffs = RoundPayoffs(self.ruleset)
        self._seated: dict[tuple[str | None, str | None], ValueNet] = {}
        self._deals: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}

    # -- chance ----------------------------------------------------------------------------
    def chance_distribution(
        self, counts: Sequence[int], sizes: tuple[int, ...], rng: np.random.Generator, cap: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(outcomes, weights) of drawing `sizes` cards in turn from `counts`: exact when it
        fits in `cap` outcomes, else `cap` equally weighted draws from `rng` (by default
        `max_outcomes` and `samples`)."""
        exact = draw_outcomes(counts, sizes, self.max_outcomes if cap is None else cap)
        if exact is not None:
            return exact
        samples = self.samples if cap is None else cap
        return sample_outcomes(counts, sizes, samples, rng), np.full(samples, 1.0 / samples)

    def _deal_distribution(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        if size not in self._deals:  # exact deals do not depend on the generator: cache them
            self._deals[size] = draw_outcomes(self.ruleset.copies, (size, size), self.max_outcomes)
        exact = self._deals[size]
        if exact is not None:
            return exact
        drawn = sample_outcomes(self.ruleset.copies, (size, size), self.samples, rng)
        return drawn, np.full(self.samples, 1.0 / self.samples)

    def _expected_future(
        self,
        before: GameState | None,
        after: GameState,
        rng: np.random.Generator,
        value: ValueFunction,
        rollout: RoundRollout | None = None,
    ) -> float:
        """E[value(after)] over the chance outcome inside the move from `before` to `after`
        (a new round's deal, the cards drawn by revealed replacements); value(after) if none.
        With `rollout`, past the replace phase the value is the round played out (`_future`)."""
        if after.is_over:
            return 0.0
        dealt = before is None or after.rounds_played > before.rounds_played
        if dealt:
            players: tuple[int, ...] = (0, 1)
        else:
            assert before is not None
            players = tuple(p for p in (0, 1) if before.replaced[p] is None and (after.replaced[p] or 0) > 0)
        if not players:
            return self._future(after, value, rollout)
        if dealt:
            drawn = [np.asarray(after.hands[p]) for p in players]
            kept = [np.zeros(self.ruleset.n_values, dtype=np.int64) for _ in players]
            pile = np.asarray(self.ruleset.copies)
        else:
            assert before is not None
            drawn = [np.asarray(after.hands[p]) - np.asarray(before.hands[p]) for p in players]
            kept = [np.asarray(before.hands[p]) for p in players]
            pile = np.bincount(after.draw_pile, minlength=self.ruleset.n_values) + np.sum(drawn, axis=0)
        sizes = tuple(int(d.sum()) for d in drawn)
        if rollout is not None and after.phase is not Phase.REPLACE:  # played out, at most `rollouts` times
            outcomes, weights = self.chance_distribution(pile.tolist(), sizes, rng, cap=self.rollouts)
            total = 0.0
            for outcome, weight in zip(outcomes, weights, strict=True):
                twin = after.clone(rng=np.random.default_rng(0))
                for i, p in enumerate(players):
                    twin.hands[p] = [int(c) for c in kept[i] + outcome[i]]
                total += float(weight) * rollout(twin)
            return total
        x = self.features(after)
        if dealt:
            outcomes, weights = self._deal_distribution(after.deal_size, rng)
        else:
            outcomes, weights = self.chance_distribution(pile.tolist(), sizes, rng)
        batch = np.repeat(x[None, :], len(weights), axis=0)
        k = self.features.scale
        for i, p in enumerate(players):
            batch[:, self.features.hand_slice(p)] = (kept[i][None, :] + outcomes[:, i]) * k
        return float(weights @ value(batch))

    # -- decisions ------------------------------------------------------------------------
    def policy(self, agent: Agent) -> Probabilities | str | None:
        """How `agent` chooses, for the decision terms (`policy_of`)."""
        return policy_of(agent)

    def sampled_policy(self, agent: Agent, player: int, rng: np.random.Generator) -> Probabilities:
        """The empirical distribution of `draws` actions of a copy of `agent` (a new agent from
        its spec, else a deep copy: the original and its generator are untouched), each drawn
        with a fresh generator seeded from `rng`, given only `player`'s input."""
        twin = agent_copy(agent)

        def probabilities(inp: AgentInput) -> np.ndarray:
            counts = np.zeros(inp.action_mask.size)
            if len(inp.legal_actions) == 1:
                counts[inp.legal_actions[0]] = 1.0
                return counts
            for seed in rng.integers(2**63, size=self.draws):
                twin.reset(player, np.random.default_rng(int(seed)))
                counts[twin.act(inp)] += 1.0
            return counts / self.draws

        return probabilities

    def rollout_agent(self, agent: Agent) -> Agent:
        """Who plays `agent`'s part in the rollouts: its stand-in where one is named for its
        spec, else a copy of it (`agent_copy`)."""
        stand_in = self.stand_ins.get(agent.spec or "")
        return make_agent(stand_in) if stand_in is not None else agent_copy(agent)

    # -- one game --------------------------------------------------------------------------
    def estimate(
        self,
        seed: int,
        actions: Sequence[tuple[int, int]],
        agents: Sequence[Agent],
        generators: Sequence[np.random.Generator] | None = None,
    ) -> tuple[float, float]:
        """(player_0's return, player_0's reduced return) of the game dealt from `seed` with
        `actions` ((player, action id) in order), played by `agents` (player_0's first).
        `generators`: the agents' generators as the game began (fresh copies), which the
        rollouts replay with `replay` (module docstring)."""
        policies = [self.policy(agent) for agent in agents]
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x41, 0x1FA7]))
        if self.draws > 0:
            policies = [
                self.sampled_policy(agent, player, rng) if policy == UNKNOWN else policy
                for player, (agent, policy) in enumerate(zip(agents, policies, strict=True))
            ]
        elif self.require_policies:
            for agent, policy in zip(agents, policies, strict=True):
                if policy == UNKNOWN:
                    raise UnknownPolicyError(
                        f"variance reduction needs the action probabilities of {agent.spec or type(agent).__name__}, "
                        "which are not known (it samples internally)"
                    )
        value: ValueFunction = self.value
        payoffs = self.payoffs
        if isinstance(value, ValueNet):  # a seated file: bound to this game's seating (once per seating)
            seating = (agents[0].spec, agents[1].spec)
            if seating not in self._seated:
                self._seated[seating] = value.for_seating(seating)
            value = self._seated[seating]
            payoffs = self._seated[seating].payoffs
        rollout = None
        if self.rollouts > 0:
            stream = np.random.default_rng(np.random.SeedSequence([int(seed), 0x52, 0x0111]))
            players = [self.rollout_agent(agent) for agent in agents]
            replayed = [
                self.replay and policy == UNKNOWN and (agent.spec or "") not in self.stand_ins
                for agent, policy in zip(agents, policies, strict=True)
            ]
            if any(replayed) and generators is None:
                raise ValueError("replayed rollouts need the agents' generators as the game began")
            for player, agent in enumerate(players):
                if replayed[player]:
                    assert generators is not None
                    agent.reset(player, generators[player])
            deterministic = all(replayed[p] or policy_of(agent) is None for p, agent in enumerate(players))
            playouts = 1 if deterministic else self.playouts
            rollout = RoundRollout(players, payoffs, stream, playouts, replayed)
        history = rollout is not None  # a copy that plays on needs the round's public events
        state = new_game(self.rules, seed)
        outcome = 0.0
        correction = self._future(state, value, rollout) - self._expected_future(None, state, rng, value, rollout)
        for player, action in actions:
            before = state.clone(history=history, rng=state.rng)
            if rollout is not None and rollout.replayed[player]:  # the copy makes the game's move, drawing as it did
                replayed_action = rollout.agents[player].act(AgentInput.from_state(before, player))
                if replayed_action != action:
                    raise ValueError(
                        f"{agents[player].spec or type(agents[player]).__name__} does not replay its game from "
                        f"its generator (move {replayed_action}, the game's {action}): no replayed rollouts for it"
                    )
            policy = policies[player]
            baseline: float | None = None
            if callable(policy):
                probs = policy(AgentInput.from_state(before, player))
                baseline = 0.0
                for a in np.flatnonzero(probs > 0.0):
                    twin = before.clone(history=history, rng=np.random.default_rng(0))
                    apply_action(twin, int(a), player)
                    baseline += float(probs[a]) * (
                        _round_reward(before, twin) + self._expected_future(before, twin, rng, value, rollout)
                    )
            apply_action(state, action, player)
            reward = _round_reward(before, state)
            outcome += reward
            chance = before.phase is Phase.REPLACE or state.rounds_played > before.rounds_played
            if baseline is None and not chance:
                continue  # no chance inside the move and no decision term: the bracket is 0
            if baseline is None:
                baseline = reward + self._expected_future(before, state, rng, value, rollout)
            correction += reward + self._future(state, value, rollout) - baseline
        return outcome, outcome - correction

    def _future(self, state: GameState, value: ValueFunction, rollout: RoundRollout | None = None) -> float:
        """The value of the rest of the game from `state`: the round played out past the replace
        phase with `rollout`, else the value function."""
        if state.is_over:
            return 0.0
        if rollout is not None and state.phase is not Phase.REPLACE:
            return rollout(state)
        return float(value(self.features(state)[None, :])[0])


@dataclass(frozen=True)
class Reduction:
    """How a match's returns are variance-reduced: the value file and the estimator's options
    (module docstring). Plain strings and numbers, so it travels to worker processes and into
    a result's JSON (`to_dict`).

    `value_file`: the value file (checked against the game's rules by `estimator`); `draws`: the
    sampled decision terms (`AIVAT.draws`); `rollouts`, `playouts`: the round played out past
    the replace phase (`AIVAT.rollouts`, `AIVAT.playouts`); `stand_ins`: (agent spec, stand-in
    spec) pairs, the stand-in playing that agent's part in the rollouts (`AIVAT.stand_ins`)."""

    value_file: str
    draws: int = DRAWS
    rollouts: int = ROLLOUTS
    playouts: int = 1
    stand_ins: tuple[tuple[str, str], ...] = ()
    replay: bool = False

    def __post_init__(self) -> None:
        check_options(self.draws, self.rollouts, self.playouts, bool(self.stand_ins), self.replay)
        agents = [agent for agent, _ in self.stand_ins]
        if len(set(agents)) < len(agents):
            twice = sorted({agent for agent in agents if agents.count(agent) > 1})
            raise ValueError(f"one stand-in per agent: {', '.join(twice)} named twice")

    def estimator(self, rules: RulesConfig) -> AIVAT:
        """The estimator for a game under `rules`: ValueFileError (one line) if the value file
        does not fit them."""
        return AIVAT(
            rules,
            load_value_net(self.value_file, rules),
            draws=self.draws,
            rollouts=self.rollouts,
            playouts=self.playouts,
            stand_ins=dict(self.stand_ins),
            replay=self.replay,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record of the reduction."""
        return {
            "value_file": self.value_file,
            "draws": self.draws,
            "rollouts": self.rollouts,
            "playouts": self.playouts,
            "stand_ins": dict(self.stand_ins),
            "replay": self.replay,
        }


def describe_reduction(record: dict[str, Any]) -> str:
    """A reduction in words from its JSON record (`Reduction.to_dict`): the value file's name
    and the options that are on."""
    parts = [f"value file {Path(record['value_file']).name}"]
    if record.get("draws"):
        parts.append(f"{record['draws']} draws per decision")
    if record.get("rollouts"):
        playouts = record.get("playouts", 1)
        parts.append(f"{record['rollouts']} rollouts" + (f" x {playouts} playouts" if playouts > 1 else ""))
    if record.get("replay"):
        parts.append("rollouts replay the generators")
    parts += [f"{stand_in} plays {agent}'s rollouts" for agent, stand_in in (record.get("stand_ins") or {}).items()]
    return ", ".join(parts)


def parse_stand_in(text: str) -> tuple[str, str]:
    """`AGENT@STAND_IN` (agent specs, split at the last `@`) as (agent, stand-in); ValueError,
    one line, for anything else."""
    agent, at, stand_in = text.rpartition("@")
    if not at or not agent.strip() or not stand_in.strip():
        raise ValueError(f"a stand-in is AGENT@STAND_IN (two agent specs), got {text!r}")
    return agent.strip(), stand_in.strip()


class RoundRollout:
    """The round played out from a state past its last chance event by copies of the two agents
    (`agents[p]` plays player p), valued by `payoffs` at the outcome reached and averaged over
    `playouts` playouts (module docstring); each playout resets the copies with fresh
    generators from `rng`."""

    def __init__(
        self,
        agents: Sequence[Agent],
        payoffs: RoundPayoffs,
        rng: np.random.Generator,
        playouts: int = 1,
        replayed: Sequence[bool] = (False, False),
    ) -> None:
        self.agents = list(agents)
        self.payoffs = payoffs
        self.rng = rng
        self.playouts = playouts
        self.replayed = tuple(replayed)

    def __call__(self, state: GameState) -> float:
        """Player_0's value of the rest of the game from `state`: the mean payoff of the
        outcomes of the running round when the agents finish it."""
        payoff = self.payoffs(self.payoffs.features(state)[None, :])[0]
        return sum(self._playout(state, payoff) for _ in range(self.playouts)) / self.playouts

    def _playout(self, state: GameState, payoff: np.ndarray) -> float:
        play = state.clone(rng=np.random.default_rng(0))  # no card is drawn before the round ends
        agents = []
        for player, agent in enumerate(self.agents):
            if self.replayed[player]:  # its generator as the game left it: a copy draws what it drew
                agents.append(copy.deepcopy(agent))
            else:
                agent.reset(player, np.random.default_rng(int(self.rng.integers(2**63))))
                agents.append(agent)
        rounds = play.rounds_played
        while play.rounds_played == rounds and not play.is_over:
            player = play.to_act
            apply_action(play, agents[player].act(AgentInput.from_state(play, player)), player)
        winner = play.last_round_winner
        return float(payoff[2 if winner is None else int(winner)])
