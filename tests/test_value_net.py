"""Value files trained for one pairing ("seated", `tacocat.train.value_net --seated`): they know
who sits where, serve only their pairing, and are preferred for it where shipped."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from tacocat.cli.app import app
from tacocat.evaluation import variance
from tacocat.evaluation.matches import match
from tacocat.evaluation.variance import (
    AIVAT,
    Reduction,
    RoundPayoffs,
    ValueFeatures,
    ValueFileError,
    ValueNet,
    load_value_net,
    resolve_value_file,
    shipped_value_file,
    value_meta,
)
from tacocat.game.config import make_config
from tacocat.game.engine import new_game
from tacocat.game.presets import preset_config
from tacocat.game.ruleset import compile_rules
from tacocat.train.value_net import ValueTraining, main, train_value_net

TINY = preset_config("tiny")
JUMBO = preset_config("jumbo")


def seated_net(rules, pairing=("planner", "random"), p0_wins=(0.8, 0.3), seed=0) -> ValueNet:
    """A small seated net whose seat input weighs heavily, so the seat shows in its output."""
    size = ValueFeatures(compile_rules(rules)).size
    rng = np.random.default_rng(seed)
    first = rng.normal(size=(size + 1, 8)) * 0.1
    first[-1] = 3.0
    return ValueNet(
        (first, rng.normal(size=(8, 3))),
        (np.zeros(8), np.zeros(3)),
        np.zeros(size + 1),
        np.ones(size + 1),
        value_meta(rules, pairing=list(pairing), p0_wins=list(p0_wins)),
        RoundPayoffs(compile_rules(rules)),
    )


def test_race_values_follow_the_share_of_rounds_player_0_wins():
    """The full game: with player_0 winning every decisive round the race value of the start is
    +1 (it reaches its goal), with none -1, and 1/2 gives the symmetric 0."""
    full = make_config(None)
    rules = compile_rules(full)
    x = ValueFeatures(rules)(new_game(full, 0))[None, :]
    void = 2  # a void round leaves the board: its payoff is the race value of the start
    values = [float(RoundPayoffs(rules, p)(x)[0, void]) for p in (1.0, 0.5, 0.0)]
    assert values == pytest.approx([1.0, 0.0, -1.0])
    with pytest.raises(ValueError, match="p0_wins must be a probability"):
        RoundPayoffs(rules, 1.5)


def test_a_seated_file_knows_the_seats_and_serves_its_pairing_only(tmp_path):
    path = tmp_path / "seated.npz"
    seated_net(JUMBO).save(path)
    net = load_value_net(path, JUMBO)
    assert net.pairing == ("planner", "random") and net.seat is None
    x = np.stack([ValueFeatures(compile_rules(JUMBO))(new_game(JUMBO, seed)) for seed in range(4)])
    first, swapped = net.for_seating(["planner", "random"]), net.for_seating(["random", "planner"])
    assert first.seat == 1.0 and swapped.seat == 0.0
    assert first.payoffs.p0_wins == 0.8 and swapped.payoffs.p0_wins == 0.3
    assert not np.allclose(first.probabilities(x), swapped.probabilities(x))  # the seat input is read
    with pytest.raises(ValueError, match="bound to its seating"):
        net(x)
    for other in (["planner", "counter"], None):
        with pytest.raises(ValueFileError, match="trained for planner vs random only") as err:
            net.for_seating(other)
        assert "\n" not in str(err.value)
    broken = seated_net(JUMBO)
    broken.meta["p0_wins"] = [0.5, 2.0]
    broken.save(tmp_path / "broken.npz")
    with pytest.raises(ValueFileError, match="malformed"):
        load_value_net(tmp_path / "broken.npz", JUMBO)


def test_matches_use_a_seated_file_for_its_pairing_and_refuse_it_for_another(tmp_path):
    """The reduced estimate binds the seated file per game (both seatings of a deal pair); a
    match of another pairing, or a consumer of several pairings, is refused before any game."""
    path = tmp_path / "seated.npz"
    seated_net(TINY).save(path)
    result = match("planner", "random", 20, seed=1, config=TINY, progress=False, reduction=Reduction(str(path)))
    assert result.reduced_ci is not None
    with pytest.raises(ValueFileError, match="not for planner vs counter"):
        match("planner", "counter", 2, seed=1, config=TINY, progress=False, reduction=Reduction(str(path)))
    with pytest.raises(ValueFileError, match="not for games of any pairing"):
        resolve_value_file(path, TINY)
    rules = tmp_path / "tiny.yaml"
    rules.write_text(json.dumps(TINY.model_dump(mode="json")))
    out = tmp_path / "out.json"
    cli = CliRunner().invoke(
        app, ["match", "counter", "random", "-n", "2", "--rules", str(rules), "--value", str(path), "--json", str(out)]
    )
    assert cli.exit_code == 2 and "trained for planner vs random only" in cli.output
    assert "Traceback" not in cli.output and not out.exists()


def test_the_shipped_file_of_a_pairing_is_preferred_for_it(tmp_path, monkeypatch):
    """Among the shipped files for the rules: the pairing's seated one (in either order) for its
    matches, the file for any pairing otherwise."""
    size = ValueFeatures(compile_rules(TINY)).size
    any_pairing = ValueNet(
        (np.zeros((size, 3)),),
        (np.zeros(3),),
        np.zeros(size),
        np.ones(size),
        value_meta(TINY),
        None,  # type: ignore[arg-type]
    )
    any_pairing.save(tmp_path / "value_tiny.npz")
    seated_net(TINY).save(tmp_path / "value_tiny_planner_random.npz")
    monkeypatch.setattr(variance, "MODELS", tmp_path)
    assert shipped_value_file(TINY) == tmp_path / "value_tiny.npz"
    assert shipped_value_file(TINY, ("random", "planner")) == tmp_path / "value_tiny_planner_random.npz"
    assert shipped_value_file(TINY, ("random", "counter")) == tmp_path / "value_tiny.npz"


def test_seated_training_counts_rounds_per_seating_and_trains_a_usable_file(tmp_path):
    """planner beats random on jumbo: player_0 wins most decisive rounds when planner (the
    pairing's first agent) sits there and few when random does; the file loads, is seated and
    gives an unbiased-by-construction estimator a value for both seatings."""
    training = ValueTraining(JUMBO, (("planner", "random"),), games=40, seed=3, epochs=2, seated=True)
    net = train_value_net(training, progress=False)
    shares = net.meta["p0_wins"]
    assert shares[0] > 0.6 and shares[1] < 0.4, shares
    path = tmp_path / "pr.npz"
    net.save(path)
    loaded = load_value_net(path, JUMBO)
    assert loaded.pairing == ("planner", "random")
    estimator = AIVAT(JUMBO, loaded)
    from tacocat.agents.registry import make_agent
    from tacocat.evaluation.matches import deal_seed, play_deal

    a, b = make_agent("planner"), make_agent("random")
    record = play_deal(a, b, 0, 0, JUMBO, keep_records=True).records[1]
    plain, reduced = estimator.estimate(deal_seed(0, 0), record.actions, (b, a))
    assert plain == record.returns[0] and np.isfinite(reduced)
    with pytest.raises(ValueError, match="one pairing"):
        ValueTraining(JUMBO, (("planner", "random"), ("counter", "random")), seated=True)
    assert main(["--out", str(tmp_path / "x.npz"), "--preset", "jumbo", "--seated"]) == 2
    assert not (tmp_path / "x.npz").exists()
