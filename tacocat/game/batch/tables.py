"""Constant tables of the batch engine, compiled from a `Ruleset` with numpy only.

Every number the JAX rules read that depends on the rules config lives here, so the JAX code
has no Python branches on the config: deck, board, arrows, the action codec decoded into
arrays, and the reward and round-fraction values computed exactly as the reference computes
them (in float64, then rounded once to float32).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tacocat.game.config import RulesConfig
from tacocat.game.observation import ObservationLayout
from tacocat.game.ruleset import Ruleset, compile_rules

#: action kinds, in the order of the step branches
REPLACE, STOP, DUEL, ATTACK, DEFEND, SACRIFICE = range(6)
_KIND_CODE = {
    "replace": REPLACE,
    "stop": STOP,
    "duel": DUEL,
    "single": ATTACK,
    "set": ATTACK,
    "sequence": ATTACK,
    "defend": DEFEND,
    "sacrifice": SACRIFICE,
}
#: the arrow of a two-arrow space, and "no player" in player-valued fields (the reference's None)
NONE = -1
#: `last_round_winner` of a void round (the reference's None); NONE means "no round ended yet"
VOID = -2
#: the largest max_rounds the engine compiles (the round fraction is a lookup table)
MAX_ROUNDS_LIMIT = 1 << 16


class ConfigNotCompilableError(ValueError):
    """A valid rules config that the batch engine cannot compile (a documented limit)."""


@dataclass(frozen=True, eq=False)  # hashed by identity: jitted functions are cached per instance
class Tables:
    """Per-ruleset constants of the batch engine (numpy arrays; the JAX code closes over them)."""

    rules: Ruleset
    n_values: int
    n_spaces: int
    n_actions: int
    obs_size: int
    deck_size: int
    max_attack: int
    max_deal: int
    centre: int
    max_rounds: int
    deck_cards: np.ndarray  # (deck,) value index of every card, ascending
    board: np.ndarray  # (S,) deal size of each space
    arrows: np.ndarray  # (S,) arrow player of each space, NONE for two arrows
    kind: np.ndarray  # (N,) action kind code
    card: np.ndarray  # (N,) value index of replace/duel/defend actions (0 otherwise)
    attack_cards: np.ndarray  # (N, A) cards of an attack action, highest first, NONE-padded
    attack_len: np.ndarray  # (N,) number of cards of an attack action (0 otherwise)
    attack_counts: np.ndarray  # (N, V) cards of an attack action, count per value
    action_rows: np.ndarray  # (N, 3 + V + A) kind, card, attack_len, attack_counts, attack_cards
    round_fraction: np.ndarray  # (max_rounds + 1,) float32(rounds / max_rounds)
    win_reward: np.float32  # float32(1 + round_reward): the game winner's last reward
    round_reward: np.float32  # float32(round_reward)


def compile_tables(config: RulesConfig | Ruleset) -> Tables:
    """The tables of a config; `ConfigNotCompilableError` for configs beyond the engine's limits."""
    rules = config if isinstance(config, Ruleset) else compile_rules(config)
    cfg = rules.config
    if cfg.max_rounds > MAX_ROUNDS_LIMIT:
        raise ConfigNotCompilableError(
            f"max_rounds={cfg.max_rounds}: the batch engine supports max_rounds <= {MAX_ROUNDS_LIMIT} "
            "(the observation's round fraction is a lookup table)"
        )
    if cfg.deck_size > np.iinfo(np.int32).max // 4:
        raise ConfigNotCompilableError(f"deck of {cfg.deck_size} cards is too large for int32 counts")
    codec = rules.codec
    n, v = codec.size, rules.n_values
    max_attack = max(rules.board) - 1
    kind = np.zeros(n, np.int32)
    card = np.zeros(n, np.int32)
    attack_cards = np.full((n, max_attack), NONE, np.int32)
    attack_len = np.zeros(n, np.int32)
    attack_counts = np.zeros((n, v), np.int32)
    for a, move in enumerate(codec.moves):
        kind[a] = _KIND_CODE[move.kind]
        if kind[a] == ATTACK:
            attack_cards[a, : len(move.cards)] = move.cards
            attack_len[a] = len(move.cards)
            for c in move.cards:
                attack_counts[a, c] += 1
        elif move.cards:
            card[a] = move.cards[0]
    check_codec_layout(kind, card, v)
    fractions = np.array([r / cfg.max_rounds for r in range(cfg.max_rounds + 1)], np.float64).astype(np.float32)
    return Tables(
        rules=rules,
        n_values=v,
        n_spaces=rules.n_spaces,
        n_actions=n,
        obs_size=ObservationLayout(rules).size,
        deck_size=cfg.deck_size,
        max_attack=max_attack,
        max_deal=max(rules.board),
        centre=cfg.centre,
        max_rounds=cfg.max_rounds,
        deck_cards=np.asarray(rules.deck_cards, np.int32),
        board=np.asarray(rules.board, np.int32),
        arrows=np.asarray([NONE if a is None else a for a in rules.arrows], np.int32),
        kind=kind,
        card=card,
        attack_cards=attack_cards,
        attack_len=attack_len,
        attack_counts=attack_counts,
        action_rows=np.concatenate(
            [kind[:, None], card[:, None], attack_len[:, None], attack_counts, attack_cards], axis=1
        ),
        round_fraction=fractions,
        win_reward=np.float32(1.0 + cfg.round_reward),
        round_reward=np.float32(cfg.round_reward),
    )


def check_codec_layout(kind: np.ndarray, card: np.ndarray, n_values: int) -> None:
    """The batch engine builds the legal mask block by block; it relies on the codec's order:
    replace (one per value), stop, duel (one per value), the attacks, defend (one per value),
    sacrifice."""
    v = n_values
    values = np.arange(v)
    n_attacks = len(kind) - 3 * v - 2
    expected = np.concatenate(
        [np.full(v, REPLACE), [STOP], np.full(v, DUEL), np.full(n_attacks, ATTACK), np.full(v, DEFEND), [SACRIFICE]]
    )
    by_value = np.concatenate([values, [0], values, np.zeros(n_attacks, int), values, [0]])
    if not (np.array_equal(kind, expected) and np.array_equal(card, by_value)):
        raise AssertionError("the action codec's layout changed: update tacocat.game.batch.core.legal_mask")
