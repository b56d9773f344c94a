"""Named rule presets: small variants of the game for exact game-theoretic analysis.

The default rules (R1) make a game tree far too large to enumerate. These presets shrink every
dimension the rules let a config shrink (R1.1 deck, R1.2 board and deal sizes, R1.5 rounds)
while keeping every rule of R2-R6: a shuffle, replacing (simultaneous on the centre, R4.1;
arrow player first elsewhere, R4.2), duels, showdowns and the Tacocat's race over a board.

============= ==================== ====== ========== ============ ======================================
name          deck (value: copies)  board  max_rounds round_reward what it is
============= ==================== ====== ========== ============ ======================================
trio_decided  1:2 2:4 3:6           3 3 3  1          1            trio's board with a deck heavy in 3s:
                                                                   a decisive preset, about half of its
                                                                   rounds decided under the equilibrium
                                                                   (582,512 histories); CFR+'s argmax is
                                                                   no equilibrium there
jumbo_decided 1:2 2:12 3:2          4 4 4  1          1            jumbo's board with a third value: a
                                                                   decisive preset with sets of two
                                                                   (1.27 M histories)
tiny          1:4 2:4               2 2 2  1          1            one round on the centre: simultaneous
                                                                   replacing (R4.1), the duel (R5.1), the
                                                                   showdown (R6.1); the CI preset
small         1:2 2:2 3:2 4:2       2 2 2  1          1            the same round with four card values
race          1:4 2:4               2 2 2  2          0            two rounds and the game result: a player
                                                                   wins by taking both (R6.3), a one-arrow
                                                                   second round (R4.2)
skirmish      1:6 2:6               3 3 3  1          1            a deal of 3: after the duel one attack
                                                                   with a single card (R5.3, R5.4),
                                                                   answered by a defence or a sacrifice
                                                                   (R5.5), the trick's winner (R5.6); the
                                                                   CI preset with attacks
jumbo         1:4 2:12              4 4 4  1          1            a deal of 4: attacks with singles and
                                                                   with sets of two (R5.3 jumbo), each card
                                                                   answered in order (R5.5), a trick lost
                                                                   by one failed answer (R5.6) and the
                                                                   attacker attacking again (R5.7)
trio          1:4 2:4 3:4           3 3 3  1          1            skirmish with three card values: the
                                                                   single attack has a card to beat
grand         1:5 2:15              5 5 5  1          1            a deal of 5: sets of three (R5.3), two
                                                                   attacks in one round, a set of two
                                                                   answered card by card; the largest
                                                                   preset solved exactly here (3.4 M
                                                                   histories, docs/EXPLOITABILITY.md)
============= ==================== ====== ========== ============ ======================================

A deal of 2 has no attacks: the duel leaves one card each (R5.2). A deal of 3 leaves two cards
after the duel, so one single attack; a deal of 4 leaves three, so a set of two or two singles.
Sequences (R5.3) need three cards to attack with and one to keep after the duel, so a deal of 5
and three card values: no such preset is small enough to enumerate (with three values a deal of
4 can have about 143 M histories; jumbo_decided's deck, twelve of its sixteen cards 2s, has
1.27 M). Two values and 16 cards are the smallest deck R1.7 allows for a
deal of 4. Jumbo's deck has few 1s on purpose: with eight of each value (1:8 2:8) a player nearly
always holds a 1 to keep for the showdown, and a pure policy trained by the league had NashConv
0 there (every round void), which leaves nothing to measure. The other presets have pure
equilibria too, under which most rounds are void (97 % on tiny, over 90 % on skirmish, jumbo
and trio): a policy that ties can look unexploitable. The two `_decided` presets are those where
rounds are decided under the equilibrium (`benchmarks/exploitability.py presets`:
`docs/results/presets.json` gives every preset's void share and whether a pure equilibrium
exists, by `tacocat.analysis.pure_equilibrium`). A board of three spaces needs
two decisive rounds won by the same player to reach a goal, so one-round presets pay the round
result through ``round_reward`` (the engine's round shaping; every game is truncated after its
round, R1.5, with no game result). `docs/OPENSPIEL.md` gives the size of each preset's game
tree and how long exact exploitability takes on it.
"""

from __future__ import annotations

from typing import Any

from tacocat.game.config import RulesConfig, make_config

PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "tiny": {"deck": {1: 4, 2: 4}, "board": (2, 2, 2), "max_rounds": 1, "round_reward": 1.0},
    "small": {"deck": {1: 2, 2: 2, 3: 2, 4: 2}, "board": (2, 2, 2), "max_rounds": 1, "round_reward": 1.0},
    "race": {"deck": {1: 4, 2: 4}, "board": (2, 2, 2), "max_rounds": 2},
    "skirmish": {"deck": {1: 6, 2: 6}, "board": (3, 3, 3), "max_rounds": 1, "round_reward": 1.0},
    "jumbo": {"deck": {1: 4, 2: 12}, "board": (4, 4, 4), "max_rounds": 1, "round_reward": 1.0},
    "trio": {"deck": {1: 4, 2: 4, 3: 4}, "board": (3, 3, 3), "max_rounds": 1, "round_reward": 1.0},
    "grand": {"deck": {1: 5, 2: 15}, "board": (5, 5, 5), "max_rounds": 1, "round_reward": 1.0},
    "trio_decided": {"deck": {1: 2, 2: 4, 3: 6}, "board": (3, 3, 3), "max_rounds": 1, "round_reward": 1.0},
    "jumbo_decided": {"deck": {1: 2, 2: 12, 3: 2}, "board": (4, 4, 4), "max_rounds": 1, "round_reward": 1.0},
}


def preset_config(name: str, **overrides: Any) -> RulesConfig:
    """The rules of preset `name` ("default" = the R1 defaults), with optional field overrides."""
    if name not in PRESETS:
        raise ValueError(f"unknown rules preset {name!r}; presets: {', '.join(PRESETS)}")
    return make_config({**PRESETS[name], **overrides})


def preset_rules(name: str) -> dict[str, Any]:
    """Preset `name` as a config file's `rules:` section (tuples as lists, as YAML reads them)."""
    if name not in PRESETS:
        raise ValueError(f"unknown rules preset {name!r}; presets: {', '.join(PRESETS)}")
    return {key: list(value) if isinstance(value, tuple) else value for key, value in PRESETS[name].items()}
