"""A pure Nash equilibrium of a preset, constructed from CFR+ and valued exactly.

CFR+'s average policy (`tacocat.analysis.cfr`) converges to an equilibrium, but on the
one-round presets it looks mixed mostly because it splits weight between moves that are worth
the same against the other player's equilibrium. Its argmax is then no equilibrium (it can be
far from one: each player's argmax ignores which of the equivalent moves keeps the other player
indifferent). `pure_equilibrium(tree)`:

1. runs CFR+ until the NashConv of its average policy is at most `target` (checked after
   geometrically spaced iterations, each check an exact best response);
2. builds a pure profile: each player's pure best response to the *other* player's CFR+ average
   (the argmax of the player's action values against it, `best_response_policy`). Against an
   exact equilibrium every move of the support is a best response; the best response keeps,
   at every information state, a move the near-equilibrium opponent cannot punish;
3. values the profile exactly (`value_profile`, with `tacocat.analysis.best_response.exploitability`): NashConv 0
   (within `TOLERANCE`) means the profile is a pure Nash equilibrium: a pure equilibrium
   exists, and this is one. A positive NashConv means only that this construction found none.

Also valued exactly: the share of void rounds under the profile (`void_share`: the probability,
over chance, of a terminal history whose return is 0; on the one-round presets a void round,
R6.1; on `race` a game neither player wins, R6.3), and the NashConv of CFR+'s argmax.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tacocat.analysis.best_response import best_response_policy, combine, exploitability, nash_conv
from tacocat.analysis.cfr import CFRSolver
from tacocat.analysis.levels import check_policy, edge_probabilities, reach, tree_index
from tacocat.analysis.tree import CHANCE, GameTree

#: a NashConv at most this is 0 (float64 sums over up to millions of histories)
TOLERANCE = 1e-9
#: the NashConv CFR+ is run to before the pure profile is built
CFR_TARGET = 1e-4
#: the most CFR+ iterations
MAX_ITERATIONS = 5_000


@dataclass(frozen=True)
class CFRResult:
    """CFR+'s average policy after `iterations`, and its exact NashConv."""

    average: np.ndarray
    iterations: int
    nash_conv: float


@dataclass(frozen=True)
class PureProfile:
    """A pure profile (`policy`: one 1 per row) valued exactly.

    nash_conv   its exact NashConv (0 within TOLERANCE: a pure Nash equilibrium)
    value       player_0's expected return under it
    void_share  the probability of a terminal history with return 0 under it
    """

    policy: np.ndarray
    nash_conv: float
    value: float
    void_share: float

    @property
    def is_equilibrium(self) -> bool:
        """Whether the profile is a Nash equilibrium (NashConv 0 within TOLERANCE)."""
        return self.nash_conv <= TOLERANCE


@dataclass(frozen=True)
class PureEquilibrium:
    """The pure profile built from a CFR+ run (`profile`), the run, and the exact NashConv of
    CFR+'s argmax for comparison."""

    profile: PureProfile
    cfr: CFRResult
    argmax_nash_conv: float

    @property
    def found(self) -> bool:
        """Whether the profile is a pure Nash equilibrium."""
        return self.profile.is_equilibrium


def solve_cfr_plus(tree: GameTree, target: float = CFR_TARGET, max_iterations: int = MAX_ITERATIONS) -> CFRResult:
    """CFR+ until its average policy's NashConv is at most `target` (checked after 1, 2, 3, ...
    then about every 20 % more iterations) or `max_iterations` are done."""
    if target < 0 or max_iterations < 1:
        raise ValueError(f"target must be >= 0 and max_iterations >= 1, not {target} and {max_iterations}")
    solver = CFRSolver(tree, plus=True)
    while True:
        step = min(max(1, solver.iteration // 5), max_iterations - solver.iteration)
        solver.iterate(step)
        average = solver.average_policy()
        found = nash_conv(tree, average)
        if found <= target or solver.iteration >= max_iterations:
            return CFRResult(average=average, iterations=solver.iteration, nash_conv=found)


def argmax_policy(tree: GameTree, policy: np.ndarray) -> np.ndarray:
    """The pure policy that plays each row's most probable column (the first on ties)."""
    policy = check_policy(tree, policy)
    pure = np.zeros_like(policy)
    pure[np.arange(tree.n_infosets), policy.argmax(axis=1)] = 1.0
    return pure


def pure_profile(tree: GameTree, average: np.ndarray) -> np.ndarray:
    """Each player's pure best response to the other player's rows of `average`, as one policy."""
    return combine(tree, best_response_policy(tree, average, 0), best_response_policy(tree, average, 1))


def void_share(tree: GameTree, policy: np.ndarray) -> float:
    """The probability, over chance and `policy`'s moves, of ending in a terminal history whose
    return is 0 (a void round on the one-round presets)."""
    edge = edge_probabilities(tree, check_policy(tree, policy))
    probability = reach(tree, edge, (0, 1, CHANCE))
    terminals = tree_index(tree).terminals
    void = terminals[np.abs(tree.utility[terminals]) <= TOLERANCE]
    return float(probability[void].sum())


def value_profile(tree: GameTree, profile: np.ndarray) -> PureProfile:
    """`profile` valued exactly; a one-line ValueError unless it is a pure policy on `tree`."""
    profile = check_policy(tree, profile, "the profile")
    impure = np.flatnonzero((profile != 0).sum(axis=1) != 1)
    if impure.size:
        raise ValueError(f"the profile is not pure: information state {impure[0]} plays {profile[impure[0]].tolist()}")
    found = exploitability(tree, profile)
    return PureProfile(
        policy=profile,
        nash_conv=found.nash_conv,
        value=float(found.policy_values[0]),
        void_share=void_share(tree, profile),
    )


def pure_equilibrium(
    tree: GameTree, target: float = CFR_TARGET, max_iterations: int = MAX_ITERATIONS
) -> PureEquilibrium:
    """CFR+ to `target`, the pure profile built from its average, and both valued exactly."""
    cfr = solve_cfr_plus(tree, target, max_iterations)
    return PureEquilibrium(
        profile=value_profile(tree, pure_profile(tree, cfr.average)),
        cfr=cfr,
        argmax_nash_conv=nash_conv(tree, argmax_policy(tree, cfr.average)),
    )
