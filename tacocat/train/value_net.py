"""Train the value network of variance-reduced evaluation (`tacocat.evaluation.variance`).

A classifier of how the running round ends (player_0 wins, player_1 wins, void: R6) on the
full state's features (`ValueFeatures`: both hands, privileged), from games played by fixed
agents, seats alternating; the value is the expected `RoundPayoffs` under its probabilities
(`tacocat.evaluation.variance.ValueNet`). Every state before a move is a sample, so the
states right after a deal (what the deal corrections value) and the states after a
replacement's draws (what the draw corrections value) are in the data. The network: standardised
features, two tanh hidden layers, three logits, trained by Adam on the cross-entropy (JAX,
optax), epochs of shuffled minibatches; a tenth of the games (not of the states) is held out
and the epoch with the best held-out cross-entropy is kept.
`--seated` (one `--pairing` only) trains a *seated* file for that pairing: the network also
takes which seat the pairing's first agent has, and the race values use the share of decisive
rounds player_0 won in each seating (`ValueNet`); it values that pairing's games only.
Any value function keeps the estimate unbiased; a better fit only narrows the interval, so the
quality to judge is the measured variance ratio (benchmarks/variance.py), not the loss.

    python -m tacocat.train.value_net --out value.npz --games 3000 --seed 0 [--rules rules.yaml]
    python -m tacocat.train.value_net --out cc.npz --games 3000 --pairing champion,counter --seated

Same arguments, same seed: the same file.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.registry import make_agent
from tacocat.evaluation.arena import agent_rngs
from tacocat.evaluation.variance import ROUND_OUTCOMES, RoundPayoffs, ValueFeatures, ValueNet, value_meta
from tacocat.game.config import RulesConfig, make_config
from tacocat.game.engine import apply_action, new_game
from tacocat.game.ruleset import compile_rules

#: the pairings whose games the default value file learns from (both seatings of each)
DEFAULT_PAIRINGS = (
    ("champion", "counter"),
    ("champion", "champion:deterministic=false"),
    ("counter", "planner"),
    ("champion", "random"),
)


@dataclass(frozen=True)
class ValueTraining:
    """What a value file is trained from: `games` games per pairing, alternating seats."""

    rules: RulesConfig
    pairings: tuple[tuple[str, str], ...] = DEFAULT_PAIRINGS
    games: int = 500
    seed: int = 0
    hidden: tuple[int, ...] = (128, 128)
    epochs: int = 20
    batch: int = 512
    learning_rate: float = 1e-3
    seated: bool = False
    notes: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.seated and len(self.pairings) != 1:
            raise ValueError(f"a seated value file is trained on exactly one pairing (A,B), got {len(self.pairings)}")


def play_samples(
    agents: Sequence[Agent], seed: int, rules: RulesConfig, features: ValueFeatures
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(features of every state before a move, how that state's round ended: 0 player_0 won,
    1 player_1 won, 2 void, and every round's outcome in order) of one game dealt from `seed`."""
    state = new_game(rules, seed)
    gens = agent_rngs(seed, 0)
    for player, agent in enumerate(agents):
        agent.reset(player, gens[player])
    rows: list[np.ndarray] = []
    labels: list[int] = []
    rounds: list[int] = []
    pending = 0
    while not state.is_over:
        rows.append(features(state))
        pending += 1
        played = state.rounds_played
        player = state.to_act
        apply_action(state, agents[player].act(AgentInput.from_state(state, player)), player)
        if state.rounds_played > played:
            winner = state.last_round_winner
            rounds.append(2 if winner is None else int(winner))
            labels += [rounds[-1]] * pending
            pending = 0
    return np.asarray(rows), np.asarray(labels), rounds


@dataclass(frozen=True)
class Samples:
    """A training set: features (with the seat column of a seated training), round outcomes,
    the game of each row, and per seating (the pairing's first agent as player_0, as player_1)
    the decisive rounds player_0 won and played."""

    x: np.ndarray
    y: np.ndarray
    games: np.ndarray
    p0_won: tuple[int, int]
    decisive: tuple[int, int]

    def p0_wins(self) -> list[float]:
        """The share of decisive rounds player_0 won, per seating (1/2 where there were none)."""
        return [won / total if total else 0.5 for won, total in zip(self.p0_won, self.decisive, strict=True)]


def collect(training: ValueTraining, progress: bool = True) -> Samples:
    """The training set of `training`."""
    features = ValueFeatures(compile_rules(training.rules))
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    gs: list[np.ndarray] = []
    won, decisive = [0, 0], [0, 0]
    for index, (spec_a, spec_b) in enumerate(training.pairings):
        pair = (make_agent(spec_a), make_agent(spec_b))
        start = time.perf_counter()
        for game in range(training.games):
            seed = int(np.random.SeedSequence([training.seed, index, game]).generate_state(1)[0])
            seating = game % 2  # 0: the pairing's first agent is player_0
            x, y, rounds = play_samples(pair if seating == 0 else pair[::-1], seed, training.rules, features)
            if training.seated:
                x = np.concatenate([x, np.full((len(x), 1), 1.0 - seating)], axis=1)
            won[seating] += rounds.count(0)
            decisive[seating] += sum(1 for r in rounds if r != 2)
            xs.append(x)
            ys.append(y)
            gs.append(np.full(len(y), len(gs)))
        if progress:
            print(
                f"  {spec_a} vs {spec_b}: {training.games} games, {time.perf_counter() - start:.0f} s", file=sys.stderr
            )
    return Samples(
        np.concatenate(xs), np.concatenate(ys), np.concatenate(gs), (won[0], won[1]), (decisive[0], decisive[1])
    )


def fit(samples: Samples, training: ValueTraining, progress: bool = True) -> ValueNet:
    """Fit the round classifier of `training`'s shape to `samples`, holding out a tenth of the
    games; the report (training and held-out cross-entropy, and the held-out cross-entropy of
    the outcome frequencies alone, for scale) goes into the file's metadata, and a seated
    training's pairing and shares of decisive rounds won by player_0."""
    import jax
    import jax.numpy as jnp
    import optax

    x, y, games = samples.x, samples.y, samples.games
    rng = np.random.default_rng(training.seed)
    held_games = rng.permutation(int(games.max()) + 1)[: max(1, (int(games.max()) + 1) // 10)]
    is_held = np.isin(games, held_games)
    held, train = np.flatnonzero(is_held), np.flatnonzero(~is_held)
    mean = x[train].mean(axis=0)
    std = x[train].std(axis=0) + 1e-3
    sizes = [x.shape[1], *training.hidden, ROUND_OUTCOMES]
    key = jax.random.PRNGKey(training.seed)
    params = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (fan_in, fan_out)) / np.sqrt(fan_in), jnp.zeros(fan_out)))

    def predict(ps, xb):
        h = (xb - mean) / std
        for i, (w, b) in enumerate(ps):
            h = h @ w + b
            if i + 1 < len(ps):
                h = jnp.tanh(h)
        return h

    def loss(ps, xb, yb):
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(predict(ps, xb), yb))

    optimizer = optax.adam(training.learning_rate)
    opt_state = optimizer.init(params)

    @jax.jit
    def step(ps, state, xb, yb):
        value, grads = jax.value_and_grad(loss)(ps, xb, yb)
        updates, state = optimizer.update(grads, state, ps)
        return optax.apply_updates(ps, updates), state, value

    xj, yj = jnp.asarray(x, dtype=jnp.float32), jnp.asarray(y, dtype=jnp.int32)
    batches = max(1, len(train) // training.batch)
    best, best_epoch, best_params = float("inf"), 0, params
    for epoch in range(training.epochs):
        shuffled = rng.permutation(train)
        for b in range(batches):
            idx = shuffled[b * training.batch : (b + 1) * training.batch]
            params, opt_state, _ = step(params, opt_state, xj[idx], yj[idx])
        held_loss = float(loss(params, xj[held], yj[held]))
        if held_loss < best:  # early stopping: keep the epoch with the best held-out games
            best, best_epoch, best_params = held_loss, epoch + 1, params
        if progress:
            print(f"  epoch {epoch + 1}: held-out cross-entropy {held_loss:.4f}", file=sys.stderr)
    params = best_params
    shares = np.bincount(y[train], minlength=ROUND_OUTCOMES) / len(train)
    report = {
        "train_cross_entropy": float(loss(params, xj[train], yj[train])),
        "held_out_cross_entropy": float(loss(params, xj[held], yj[held])),
        "held_out_cross_entropy_of_frequencies": float(-np.mean(np.log(np.maximum(shares[y[held]], 1e-12)))),
        "samples": len(y),
        "best_epoch": best_epoch,
    }
    weights = tuple(np.asarray(w, dtype=float) for w, _ in params)
    biases = tuple(np.asarray(b, dtype=float) for _, b in params)
    meta = value_meta(
        training.rules,
        pairings=[list(p) for p in training.pairings],
        games_per_pairing=training.games,
        seed=training.seed,
        hidden=list(training.hidden),
        epochs=training.epochs,
        **report,
        **({"pairing": list(training.pairings[0]), "p0_wins": samples.p0_wins()} if training.seated else {}),
        **training.notes,
    )
    return ValueNet(weights, biases, mean, std, meta, RoundPayoffs(compile_rules(training.rules)))


def train_value_net(training: ValueTraining, progress: bool = True) -> ValueNet:
    """Play the games of `training` and fit its value network."""
    return fit(collect(training, progress), training, progress)


def main(argv: Sequence[str] | None = None) -> int:
    from tacocat.stamp import stamp

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the value file to write (.npz)")
    parser.add_argument("--rules", type=Path, default=None, help="a rules YAML file (default rules if absent)")
    parser.add_argument("--preset", default=None, help="a preset name instead of --rules")
    parser.add_argument("--games", type=int, default=500, help="games per pairing")
    parser.add_argument("--pairing", action="append", default=None, help="A,B agent specs (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seated", action="store_true", help="a file for one --pairing that knows who sits where")
    args = parser.parse_args(argv)
    try:
        if args.preset is not None:
            from tacocat.game.presets import preset_config

            rules = preset_config(args.preset)
        else:
            rules = make_config(None if args.rules is None else str(args.rules))
        pairings: tuple[tuple[str, str], ...] = DEFAULT_PAIRINGS
        if args.pairing:
            split = [tuple(p.split(",", 1)) for p in args.pairing]
            for pair in split:
                if len(pair) != 2:
                    raise ValueError(f"--pairing takes A,B (two agent specs), got {','.join(pair)!r}")
                for spec in pair:
                    make_agent(spec)
            pairings = tuple((pair[0], pair[1]) for pair in split)
        if args.games < 1 or args.epochs < 1:
            raise ValueError("--games and --epochs must be >= 1")
        training = ValueTraining(rules, pairings, args.games, args.seed, epochs=args.epochs, seated=args.seated)
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    net = train_value_net(training)
    net.meta["stamp"] = stamp(rules)
    net.meta["train_s"] = round(time.perf_counter() - start, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    net.save(args.out)
    held, base = net.meta["held_out_cross_entropy"], net.meta["held_out_cross_entropy_of_frequencies"]
    print(f"wrote {args.out}: held-out cross-entropy {held:.4f} (outcome frequencies alone: {base:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
