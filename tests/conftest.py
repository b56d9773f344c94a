"""Shared helpers for the test suite.

Rule numbers (R…) cite RULES_REFERENCE.md.

All randomness in tests comes from an explicit `numpy.random.Generator` (or a hypothesis-drawn
seed turned into one); nothing reads a global RNG.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

from tacocat import GameState, RulesConfig, apply_action, legal_actions, new_game
from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.registry import register
from tacocat.game.state import Phase

DEFAULT = RulesConfig()

# One XLA compilation cache for the whole test run, shared by pytest-xdist's workers and the
# subprocesses that tests start (they inherit the environment): much of the suite's JAX time
# was compiling the same programs again, for a new env object or in another process (a warm
# cache took tests/test_batch_engine.py from 194 s to 84 s). A hit loads the same executable.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.3")
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(2 * 1024**3))


def _session_home() -> Path:
    """The test session's own home (issue 36): a temporary folder, removed when the session
    ends, for what the tests and the libraries they drive write under ~ (Ray's ~/ray_results,
    which it reads from HOME alone, and ~/.ray; IPython's, Jupyter's and matplotlib's folders;
    the exact-tree cache, `TACOCAT_CACHE`). Set before any test imports them, in the
    environment, so pytest-xdist's workers and the subprocesses tests start share it; git keeps
    the user's global config."""
    inherited = os.environ.get("TACOCAT_TEST_HOME")
    if inherited:  # a worker, or a subprocess of the session
        return Path(inherited)
    home = Path(tempfile.mkdtemp(prefix="tacocat-test-home-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    git_config = Path.home() / ".gitconfig"
    if "GIT_CONFIG_GLOBAL" not in os.environ and git_config.is_file():
        os.environ["GIT_CONFIG_GLOBAL"] = str(git_config)
    os.environ.update(
        {
            "TACOCAT_TEST_HOME": str(home),
            "HOME": str(home),
            "TACOCAT_CACHE": str(home / ".cache" / "tacocat" / "trees"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "IPYTHONDIR": str(home / ".ipython"),
            "MPLCONFIGDIR": str(home / ".config" / "matplotlib"),
            "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
            "JUPYTER_DATA_DIR": str(home / ".local" / "share" / "jupyter"),
            "JUPYTER_RUNTIME_DIR": str(home / ".local" / "share" / "jupyter" / "runtime"),
        }
    )
    return home


SESSION_HOME = _session_home()


# ---------------------------------------------------------------------------------------
# random play
# ---------------------------------------------------------------------------------------
def random_action(state: GameState, rng: np.random.Generator) -> int:
    """A uniformly random legal action of the player to act."""
    legal = legal_actions(state)
    return legal[int(rng.integers(len(legal)))]


def walk(state: GameState, rng: np.random.Generator, max_steps: int = 100_000) -> Iterator[GameState]:
    """Play random legal moves from `state` (mutated in place), yielding the live state before
    every move. The caller may inspect the state (or clone it) but must not change it."""
    for _ in range(max_steps):
        if state.is_over:
            return
        yield state
        apply_action(state, random_action(state, rng))
    raise AssertionError(f"game not over after {max_steps} moves")


def play_random(state: GameState, rng: np.random.Generator, max_steps: int = 100_000) -> GameState:
    """Play `state` to the end with uniformly random legal moves; returns the same state."""
    for _ in walk(state, rng, max_steps):
        pass
    return state


def random_game(seed: int, config: RulesConfig | None = None) -> GameState:
    """A whole random game from one seed (deal and moves from two independent streams)."""
    deal_seed, move_seed = np.random.SeedSequence(seed).spawn(2)
    return play_random(new_game(config or DEFAULT, np.random.default_rng(deal_seed)), np.random.default_rng(move_seed))


def sample_states(seed: int, config: RulesConfig | None = None, every: int = 1) -> Iterator[GameState]:
    """Clones of (every `every`-th) state of one random game."""
    deal_seed, move_seed = np.random.SeedSequence(seed).spawn(2)
    state = new_game(config or DEFAULT, np.random.default_rng(deal_seed))
    for i, live in enumerate(walk(state, np.random.default_rng(move_seed))):
        if i % every == 0:
            yield live.clone()


# ---------------------------------------------------------------------------------------
# inspecting a state
# ---------------------------------------------------------------------------------------
def snapshot(state: GameState) -> tuple:
    """Every field of a state (rng state included), as comparable plain data."""
    return (
        state.space,
        list(state.covered),
        state.rounds_played,
        state.phase,
        state.to_act,
        [list(h) for h in state.hands],
        [list(h) for h in state.set_aside],
        list(state.draw_pile),
        list(state.discard),
        list(state.replace_queue),
        list(state.replace_cap),
        list(state.replaced),
        list(state.duel),
        state.last_duel,
        state.attacker,
        list(state.attack),
        list(state.answers),
        state.winner,
        state.truncated,
        state.last_round_winner,
        list(state.events),
        list(state.actions),
        repr(state.rng.bit_generator.state),
    )


def card_counts(state: GameState) -> list[int]:
    """How many cards of each value index are anywhere in the game (R0.4 / R2.3 bookkeeping)."""
    n = state.rules.n_values
    counts = [0] * n
    for v in range(n):
        counts[v] = (
            state.hands[0][v]
            + state.hands[1][v]
            + state.set_aside[0][v]
            + state.set_aside[1][v]
            + state.discard[v]
            + state.draw_pile.count(v)
            + state.attack.count(v)
            + state.answers.count(v)
            + sum(1 for d in state.duel if d == v)
        )
    return counts


def trick_cards(state: GameState, player: int) -> int:
    """Cards `player` has put on the table in the trick in progress (R5.5)."""
    if state.phase is not Phase.ANSWER:
        return 0
    return len(state.attack) if player == state.attacker else len(state.answers)


def names(state: GameState) -> set[str]:
    """Readable names of the legal moves."""
    codec = state.rules.codec
    return {codec.name(a) for a in legal_actions(state)}


def act(state: GameState, *moves: str) -> GameState:
    """Apply moves given by their readable names (e.g. 'duel: play a 9'), in order."""
    codec = state.rules.codec
    for move in moves:
        apply_action(state, codec.parse(move))
    return state


def values_of(state: GameState, counts: Sequence[int]) -> list[int]:
    """Card values (ascending) of a per-value-index count list."""
    return [state.rules.values[v] for v, n in enumerate(counts) for _ in range(n)]


def hand(state: GameState, player: int) -> list[int]:
    return state.hand_values(player)


def pile(config: RulesConfig, *placed: Sequence[int], top: Sequence[int] = ()) -> list[int]:
    """An explicit draw pile (card values, top card last) holding every card of `config`'s deck
    not listed in `placed`, with the cards of `top` drawn first, in the order given."""
    rest = Counter(dict(config.deck))
    for cards in (*placed, top):
        rest.subtract(cards)
    assert min(rest.values()) >= 0, f"more cards placed than the deck holds: {rest}"
    return sorted(rest.elements()) + list(reversed(top))


def hidden_pool(state: GameState, observer: int) -> list[int]:
    opp = 1 - observer
    cards = [v for v, n in enumerate(state.hands[opp]) for _ in range(n)]
    cards += [v for v, n in enumerate(state.set_aside[opp]) for _ in range(n)]
    if state.duel[opp] is not None:
        cards.append(state.duel[opp])
    return cards + list(state.draw_pile)


def resample_hidden(state: GameState, observer: int, rng: np.random.Generator) -> GameState:
    """A clone in which everything hidden from `observer` is dealt again at random from the same
    cards, with the same counts (public information unchanged)."""
    twin = state.clone()
    opp = 1 - observer
    pool = hidden_pool(state, observer)
    pool = [pool[i] for i in rng.permutation(len(pool))]
    n_values = state.rules.n_values

    def take(k: int) -> list[int]:
        out = [0] * n_values
        for _ in range(k):
            out[pool.pop()] += 1
        return out

    twin.hands[opp] = take(sum(state.hands[opp]))
    twin.set_aside[opp] = take(sum(state.set_aside[opp]))
    if state.duel[opp] is not None:
        twin.duel[opp] = pool.pop()
    twin.draw_pile = pool  # the rest, in a new order
    assert len(twin.draw_pile) == len(state.draw_pile)
    twin.invalidate_legal_cache()
    return twin


# ---------------------------------------------------------------------------------------
# hypothesis strategies
# ---------------------------------------------------------------------------------------
seeds = st.integers(min_value=0, max_value=2**32 - 1)


@st.composite
def rules_configs(draw: Callable) -> RulesConfig:
    """Valid non-default rulesets: tie and arrow policies, other decks (R1.7 respected), other
    odd-length boards, short max_rounds (to reach truncation) and round-reward shaping."""
    if draw(st.integers(0, 9)) == 0:
        return DEFAULT
    n_spaces = draw(st.sampled_from([3, 5, 7, 9]))
    board = tuple(draw(st.lists(st.integers(2, 9), min_size=n_spaces, max_size=n_spaces)))
    values = sorted(draw(st.lists(st.integers(1, 15), min_size=2, max_size=12, unique=True)))
    copies = draw(st.lists(st.integers(1, 5), min_size=len(values), max_size=len(values)))
    deficit = 4 * max(board) - sum(copies)
    i = 0
    while deficit > 0:  # top up round-robin so that R1.7 holds
        copies[i % len(copies)] += 1
        deficit -= 1
        i += 1
    arrow_policy = draw(st.sampled_from(["trailing", "leading", "explicit"]))
    arrows = None
    if arrow_policy == "explicit":
        arrows = tuple(
            draw(st.lists(st.sampled_from(["both", "player_0", "player_1"]), min_size=n_spaces, max_size=n_spaces))
        )
    return RulesConfig(
        deck=dict(zip(values, copies, strict=True)),
        board=board,
        arrow_policy=arrow_policy,
        arrows=arrows,
        tie_policy=draw(st.sampled_from(["void", "arrow_player_wins"])),
        max_rounds=draw(st.sampled_from([1, 2, 3, 5, 10, 60])),
        round_reward=draw(st.sampled_from([0.0, 0.1, 0.5])),
    )


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240601)


@register("test-first")
class FirstLegalAgent(Agent):
    """Test agent: always the first legal action (deterministic)."""

    def act(self, inp: AgentInput) -> int:
        return inp.legal_actions[0]


@register("test-last")
class LastLegalAgent(Agent):
    """Test agent: always the last legal action (deterministic)."""

    def act(self, inp: AgentInput) -> int:
        return inp.legal_actions[-1]


# ---------------------------------------------------------------------------------------
# training runs
# ---------------------------------------------------------------------------------------
def killed_copy(run_dir: Path, destination: Path, last_checkpoint: str) -> Path:
    """A copy of a finished league run at `destination` as a kill after its checkpoint before
    `last_checkpoint` leaves it: that checkpoint (e.g. "ckpt_768"), final.json and policy.npz
    never written. Resuming it must reach the finished run's policy."""
    import shutil

    shutil.copytree(run_dir, destination)
    shutil.rmtree(destination / "checkpoints" / last_checkpoint)
    for path in [
        destination / "checkpoints" / f"{last_checkpoint}.json",
        destination / "final.json",
        destination / "policy.npz",
    ]:
        path.unlink()
    return destination


def same_policy_files(a: Path, b: Path) -> bool:
    """Whether two policy files hold the same arrays (their metadata aside)."""
    with np.load(a) as x, np.load(b) as y:
        return x.files == y.files and all(np.array_equal(x[k], y[k]) for k in x.files if k != "metadata")
