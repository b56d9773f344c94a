"""Any agent as a policy on a game tree: the table that exact best responses read.

A policy on a `tacocat.analysis.tree.GameTree` is a float64 array (n_infosets, max_actions)
of probabilities over the columns of `tree.legal` (0 in the padding); `agent_policy` makes one
for any agent spec. Each information state is played at one representative history
(`tree.infoset_node`): the agent gets the `AgentInput` of the player to act there (its own cards
and the public information, R7), the same at every history of the information state since the
information state is the player's perfect-recall history (R7.2) and the input is a function of
it. tests/test_tabular_agents.py checks this by perturbation: every history of each information
state of `tiny` and `skirmish` gives the same move and the same observation. So the table does
not depend on which history represents an information state.

* Networks: the `league`, `rllib` and `champion` agents (tacocat-mlp-v1 policy files,
  `tacocat.agents.policy_file`) and `ppo` (SB3 MaskablePPO zips, `tacocat.agents.trained`) are run in one
  batched forward pass over the observations of all information states (the AEC env's
  observation, `tacocat.game.observation.encode`; mask: the legal actions). Deterministic: the
  argmax over the legal actions, ties to the lowest action id as the agents break them;
  sampling (or a spec with `deterministic=false`): the masked softmax the agent samples from.
  A network trained for other rules is refused (`prepare_agent`) before anything runs.
* Python agents (random, highcard, planner, counter, search, ismcts, ...) act once per
  information state and draw, with a generator seeded from the information-state string
  (`draw_generator`), so a table is the same on every run. Deterministic mode: the move of draw
  `seed` (draw 0 is what `tacocat.analysis.agent_tables.tabular_policy` has always played); sampling
  mode: the empirical distribution of the moves of draws `seed * samples` .. `seed * samples +
  samples - 1`. `random` is exactly uniform in both modes.
* `mix` (a behavioural mixture, `tacocat.agents.mix`): the weighted average of its agents'
  tables, each made as above in the mode asked for.
"""

from __future__ import annotations

import weakref
import zlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.mix import MixAgent
from tacocat.agents.mlp_agent import MLPPolicyAgent
from tacocat.agents.policy_file import PolicyFileError, policy_logits
from tacocat.agents.random_agent import RandomAgent
from tacocat.agents.registry import make_agent
from tacocat.agents.trained import ModelFileError, PPOAgent
from tacocat.analysis.tabular import to_tabular_policy
from tacocat.analysis.tree import GameTree, enumerate_tree
from tacocat.game.config import RulesConfig
from tacocat.game.observation import ObservationLayout, encode
from tacocat.game.ruleset import compile_rules

if TYPE_CHECKING:
    import pyspiel

    from tacocat.game.openspiel import TacocatState
    from tacocat.game.state import GameState

#: the agents played by a batched forward pass of their network
NETWORK_AGENTS = (MLPPolicyAgent, PPOAgent)
#: the last observations computed on each tree (rows, array), kept while the tree lives: a run
#: with `eval.nash_conv` tabulates its network on the same tree at every evaluation, and the
#: observations (a walk of the tree in Python) cost far more than the forward pass
_OBSERVATIONS: weakref.WeakKeyDictionary[GameTree, tuple[bytes, np.ndarray]] = weakref.WeakKeyDictionary()


def prepare_agent(spec: str | Agent, rules: RulesConfig) -> Agent:
    """The agent of `spec`, checked against `rules`: a network trained for other rules (its
    ruleset hash or its observation size) is refused with one line naming both rulesets.
    Unknown agents and bad parameters raise `tacocat.agents.registry.AgentSpecError` (a ValueError)."""
    agent = make_agent(spec) if isinstance(spec, str) else spec
    if isinstance(agent, MixAgent):
        for component in agent.components:
            prepare_agent(component, rules)
    if isinstance(agent, NETWORK_AGENTS):
        ruleset = compile_rules(rules)
        agent.check_ruleset(ruleset.hash)  # one line: "<file> was trained for ruleset A, this game uses B"
        expected = ObservationLayout(ruleset).size
        if isinstance(agent, MLPPolicyAgent):
            size, error = agent.meta["observation_size"], PolicyFileError
        else:
            size, error = agent.policy.observation_space.shape[0], ModelFileError
        if size != expected:
            raise error(f"{agent.path} takes observations of size {size}, ruleset {ruleset.hash} gives {expected}")
    return agent


def agent_policy(
    tree: GameTree,
    spec: str | Agent,
    *,
    sampling: bool = False,
    samples: int = 16,
    seed: int = 0,
    players: Sequence[int] = (0, 1),
    progress: bool = False,
) -> np.ndarray:
    """Agent `spec` as a policy on `tree`: (n_infosets, max_actions) probabilities over the
    columns of `tree.legal` (module docstring: how networks and Python agents are tabulated in
    deterministic and sampling mode). Only the information states of `players` are played by
    the agent; the other rows are uniform, so the result is always a policy on the tree
    (`tacocat.analysis.best_response.combine` takes each player's rows from its own agent's
    table). `progress` shows a progress bar over the information states."""
    check_draws(samples, seed)
    agent = prepare_agent(spec, tree.rules)
    rows = np.flatnonzero(np.isin(tree.infoset_player, list(players)))
    policy = tree.uniform_policy()  # random's rows, and those of the players left out
    if isinstance(agent, MixAgent):  # its policy is its agents' weighted average, exactly
        tables = [
            agent_policy(tree, c, sampling=sampling, samples=samples, seed=seed, players=players, progress=progress)
            for c in agent.components
        ]
        policy[rows] = sum(w * table[rows] for w, table in zip(agent.weights, tables, strict=True))
    elif isinstance(agent, NETWORK_AGENTS):
        policy[rows] = _network_rows(tree, agent, rows, sampling or not agent.deterministic, progress)
    elif not isinstance(agent, RandomAgent):
        draws = range(seed * samples, (seed + 1) * samples) if sampling else range(seed, seed + 1)
        policy[rows] = _python_rows(tree, agent, rows, draws, progress)
    return policy


def check_draws(samples: int, seed: int) -> None:
    """Refuse a number of samples below 1 or a negative seed (one-line ValueError)."""
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")


def draw_generator(infoset_key: str, draw: int) -> np.random.Generator:
    """The generator of draw `draw` at the information state `infoset_key`: seeded from the
    key's CRC-32 (`draw` 0: the CRC alone), so every draw of every information state has its
    own stream, the same on every run."""
    return np.random.default_rng(zlib.crc32(infoset_key.encode()) + (draw << 32))


def states_at(
    tree: GameTree, nodes: np.ndarray, progress: bool = False, desc: str = "histories"
) -> Iterator[tuple[int, TacocatState]]:
    """(node, `TacocatState`) for every node of `nodes`, in depth-first order: one walk down the
    tree that applies each edge leading to them once (`GameTree.state_at` replays the whole
    history of each). The caller must not change the states it is handed."""
    from tqdm import tqdm

    from tacocat.game.openspiel import load_game

    nodes = np.asarray(nodes, dtype=np.int64)
    target = np.zeros(tree.n_nodes, dtype=bool)
    target[nodes] = True
    needed = target.copy()
    for depth in range(tree.depth - 1, 0, -1):  # every ancestor of a target, level by level
        start, stop = tree.level_starts[depth], tree.level_starts[depth + 1]
        needed[tree.parent[start + np.flatnonzero(needed[start:stop])]] = True
    children = np.flatnonzero(needed[1:]) + 1
    children = children[np.argsort(tree.parent[children], kind="stable")]
    first_child = np.searchsorted(tree.parent[children], np.arange(tree.n_nodes + 1))
    bar = tqdm(total=int(target.sum()), desc=desc, disable=not progress, mininterval=1.0)
    stack = [(0, load_game(tree.rules).new_initial_state())]
    while stack:
        node, state = stack.pop()
        below = children[first_child[node] : first_child[node + 1]]
        stack.extend((int(c), state.child(int(tree.action[c]))) for c in below[::-1])
        if target[node]:
            bar.update()
            yield node, state
    bar.close()


def _representatives(tree: GameTree, rows: np.ndarray, progress: bool, desc: str) -> Iterator[tuple[int, GameState]]:
    """(information state, the engine state of its representative history) for each of `rows`."""
    infoset_of = {int(tree.infoset_node[i]): int(i) for i in rows}
    for node, state in states_at(tree, tree.infoset_node[rows], progress, desc):
        assert state.engine is not None  # a player's node: the first round is dealt
        yield infoset_of[node], state.engine


def _python_rows(tree: GameTree, agent: Agent, rows: np.ndarray, draws: range, progress: bool) -> np.ndarray:
    """The empirical distribution of the agent's moves over `draws` at each information state."""
    out = np.zeros((rows.size, tree.max_actions))
    position = {int(i): k for k, i in enumerate(rows)}
    name = agent.spec or agent.name
    for infoset, state in _representatives(tree, rows, progress, f"{name}: information states"):
        player, key = int(tree.infoset_player[infoset]), tree.infoset_keys[infoset]
        legal = tree.legal[infoset]
        for draw in draws:
            agent.reset(player, draw_generator(key, draw))
            move = agent.act(AgentInput.from_state(state, player))
            column = np.flatnonzero(legal == move)
            if column.size != 1:
                raise ValueError(f"{name} played {move}, not a legal action, in information state {key!r}")
            out[position[infoset], column[0]] += 1.0
    return out / len(draws)


def observations(tree: GameTree, rows: np.ndarray, progress: bool = False) -> np.ndarray:
    """The observation vector (`tacocat.game.observation.encode`, float32) of the player to act
    at the representative history of each information state of `rows`, in that order; read-only,
    and the same array again when asked for the same rows of the same tree (`_OBSERVATIONS`)."""
    key = np.asarray(rows, dtype=np.int64).tobytes()
    cached = _OBSERVATIONS.get(tree)
    if cached is not None and cached[0] == key:
        return cached[1]
    size = ObservationLayout(compile_rules(tree.rules)).size
    out = np.zeros((rows.size, size), dtype=np.float32)
    position = {int(i): k for k, i in enumerate(rows)}
    for infoset, state in _representatives(tree, rows, progress, "observations"):
        out[position[infoset]] = encode(state, int(tree.infoset_player[infoset]))
    out.setflags(write=False)
    _OBSERVATIONS[tree] = (key, out)
    return out


def _network_rows(
    tree: GameTree, agent: MLPPolicyAgent | PPOAgent, rows: np.ndarray, sampling: bool, progress: bool
) -> np.ndarray:
    """The network's rows for the information states `rows`, from one batched forward pass."""
    legal = tree.legal[rows]
    n_actions = compile_rules(tree.rules).codec.size
    mask = np.zeros((rows.size, n_actions), dtype=bool)
    row, column = np.nonzero(legal >= 0)
    mask[row, legal[row, column]] = True
    obs = observations(tree, rows, progress)
    if isinstance(agent, MLPPolicyAgent):
        scores = policy_logits(agent.layers, agent.meta["activation"], obs)
        z = np.where(mask, scores - np.where(mask, scores, -np.inf).max(axis=1, keepdims=True), -np.inf)
        probs = np.exp(z)
    else:
        probs = scores = _sb3_probabilities(agent, obs.copy(), mask)  # torch wants a writable array
    columns = np.maximum(legal, 0)
    if sampling:
        out = np.where(legal >= 0, np.take_along_axis(probs, columns, axis=1), 0.0)
        return out / out.sum(axis=1, keepdims=True)
    best = np.where(legal >= 0, np.take_along_axis(scores, columns, axis=1), -np.inf).argmax(axis=1)  # first max
    out = np.zeros(legal.shape)
    out[np.arange(rows.size), best] = 1.0
    return out


def _sb3_probabilities(agent: PPOAgent, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The masked action distribution of an SB3 policy on a batch, as float64 (its float32
    values unchanged, so that the argmax breaks ties as `policy.predict` does)."""
    import torch

    with torch.no_grad():
        tensor, _ = agent.policy.obs_to_tensor(obs)
        distribution = agent.policy.get_distribution(tensor, action_masks=mask)
        return distribution.distribution.probs.cpu().numpy().astype(np.float64)


def tabular_policy(game: pyspiel.Game, spec: str) -> tuple[pyspiel.TabularPolicy, int]:
    """Agent `spec` as an OpenSpiel tabular policy on `game` (`agent_policy` in
    deterministic mode: its move at every information state, uniform for "random"); also
    returns the number of histories."""
    tree = enumerate_tree(game.config)
    return to_tabular_policy(tree, agent_policy(tree, spec)), tree.n_nodes
