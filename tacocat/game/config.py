"""The rules configuration: every choice the rule texts leave open (R1) is a field here.

`RulesConfig` is a frozen, validated pydantic model. It loads from keyword arguments,
from a mapping or from YAML, and every invalid value raises a `pydantic.ValidationError`
(a `ValueError`) that names the field and the reason. `ruleset_hash()` identifies a
ruleset across processes and machines: every result file carries it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

#: R1.1 default deck composition, value -> copies (38 cards).
DEFAULT_DECK: dict[int, int] = {
    1: 2,
    2: 3,
    3: 3,
    4: 3,
    5: 4,
    6: 4,
    7: 4,
    8: 4,
    9: 3,
    10: 3,
    11: 3,
    12: 2,
}
#: R1.2 default deal sizes, from player_0's goal to player_1's goal.
DEFAULT_BOARD: tuple[int, ...] = (4, 6, 9, 7, 9, 6, 4)

#: fields that do not change the game itself, left out of the ruleset hash
_NOT_RULES = frozenset({"round_reward"})

#: Size limits (docs/RULES.md, "Limits of the rules config"): far above any real variant, low
#: enough that a typo (a deck of 10^9 copies, a board of hundreds of spaces) is an error that
#: names the field instead of an out-of-memory crash or a game that cannot be played out.
LIMITS = {
    "card_value": 1000,  # largest card value
    "distinct_values": 50,  # card values in the deck
    "copies": 100,  # copies of one value
    "deck_size": 1000,  # cards in the deck
    "spaces": 25,  # board spaces
    "deal_size": 50,  # cards dealt per player on one space
    "max_rounds": 10_000,
    "round_reward": 100.0,
}

ArrowPolicy = Literal["trailing", "leading", "explicit"]
ArrowMark = Literal["both", "player_0", "player_1"]
TiePolicy = Literal["void", "arrow_player_wins"]


class RulesConfig(BaseModel):
    """A complete, validated Tacocat ruleset (defaults = RULES_REFERENCE R1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deck: dict[int, StrictInt] = Field(
        default_factory=lambda: dict(DEFAULT_DECK),
        description="R1.1 deck composition: card value -> number of copies.",
    )
    board: tuple[StrictInt, ...] = Field(
        default=DEFAULT_BOARD,
        description="R1.2 deal size of each space, listed from player_0's goal to player_1's goal.",
    )
    arrow_policy: ArrowPolicy = Field(
        default="trailing",
        description=(
            "R1.3 which player a space's arrow points at: 'trailing' (the player whose goal is "
            "farther), 'leading' (the nearer one) or 'explicit' (the `arrows` list). Under "
            "'trailing'/'leading' a space equally far from both goals (the centre) has two arrows."
        ),
    )
    arrows: tuple[ArrowMark, ...] | None = Field(
        default=None,
        description="R1.3 the arrow of every space when arrow_policy is 'explicit'.",
    )
    tie_policy: TiePolicy = Field(
        default="void",
        description=(
            "R1.4 equal last cards: 'void' round, or 'arrow_player_wins' (on a two-arrow space the round stays void)."
        ),
    )
    max_rounds: StrictInt = Field(
        default=60,
        gt=0,
        le=LIMITS["max_rounds"],
        description="R1.5 rounds (void ones included) before truncation.",
    )
    round_reward: float = Field(
        default=0.0,
        ge=0.0,
        le=LIMITS["round_reward"],
        allow_inf_nan=False,
        description=(
            "Optional shaping: +round_reward to the winner and -round_reward to the loser of "
            "every decisive round. 0 (off) by default; the +1/-1 game reward is unchanged."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _no_booleans(cls, data: Any) -> Any:
        """YAML reads `yes`/`true` as booleans and Python's bool is an int: refuse them in
        every (numeric) field instead of reading `max_rounds: true` as 1."""
        if isinstance(data, dict):
            for name, value in data.items():
                items = value.items() if isinstance(value, dict) else [(None, value)]
                for key, item in items:
                    inner = item if isinstance(item, (list, tuple)) else [item]
                    if isinstance(key, bool) or any(isinstance(x, bool) for x in inner):
                        raise ValueError(f"{name}: a boolean is not a number (got {value!r})")
                    if name == "round_reward" and isinstance(item, str):
                        raise ValueError(f"round_reward: must be a number, got the text {item!r}")
        return data

    @field_validator("deck", mode="before")
    @classmethod
    def _deck_is_a_mapping(cls, deck: Any) -> Any:
        if not isinstance(deck, dict):
            raise ValueError(f"the deck must be a mapping value -> copies, got {type(deck).__name__}")
        return {k: (v if isinstance(v, int) else _no_text(v, f"copies of value {k}")) for k, v in deck.items()}

    @field_validator("board", mode="before")
    @classmethod
    def _board_is_a_list(cls, board: Any) -> Any:
        if isinstance(board, (str, bytes, dict)) or not hasattr(board, "__iter__"):
            raise ValueError(f"the board must be a list of deal sizes, got {type(board).__name__}")
        return board

    @field_validator("deck")
    @classmethod
    def _check_deck(cls, deck: dict[int, int]) -> dict[int, int]:
        if not deck:
            raise ValueError("the deck must hold at least one card value")
        if len(deck) > LIMITS["distinct_values"]:
            raise ValueError(f"{len(deck)} card values; at most {LIMITS['distinct_values']} are supported")
        for value, copies in deck.items():
            if not 0 < value <= LIMITS["card_value"]:
                raise ValueError(f"card values must be in 1..{LIMITS['card_value']}, got value {value}")
            if copies <= 0:
                raise ValueError(f"value {value} has {copies} copies; copies must be positive")
            if copies > LIMITS["copies"]:
                raise ValueError(f"value {value} has {copies} copies; at most {LIMITS['copies']} are supported")
        if sum(deck.values()) > LIMITS["deck_size"]:
            raise ValueError(f"{sum(deck.values())} cards; a deck of at most {LIMITS['deck_size']} is supported")
        return dict(sorted(deck.items()))

    @field_validator("board")
    @classmethod
    def _check_board(cls, board: tuple[int, ...]) -> tuple[int, ...]:
        if len(board) > LIMITS["spaces"]:
            raise ValueError(f"{len(board)} spaces; at most {LIMITS['spaces']} are supported")
        if len(board) < 3 or len(board) % 2 == 0:
            raise ValueError(
                f"the board needs an odd number (>= 3) of spaces so that the Tacocat can start "
                f"on the centre (R2.1); got {len(board)}"
            )
        for index, size in enumerate(board):
            if size < 2:
                raise ValueError(
                    f"space {index} deals {size} card(s); every deal size must be >= 2 "
                    "(a duel and a last card, R5.1/R6.1)"
                )
            if size > LIMITS["deal_size"]:
                raise ValueError(f"space {index} deals {size} cards; at most {LIMITS['deal_size']} are supported")
        return board

    @model_validator(mode="after")
    def _check_consistency(self) -> RulesConfig:
        needed = 4 * max(self.board)
        if sum(self.deck.values()) < needed:
            raise ValueError(
                f"deck: {sum(self.deck.values())} cards is too few; R1.7 needs at least "
                f"4 x the largest deal size ({max(self.board)}) = {needed}"
            )
        if self.arrow_policy == "explicit":
            if self.arrows is None or len(self.arrows) != len(self.board):
                raise ValueError(
                    f"arrows: arrow_policy 'explicit' needs one arrow per board space "
                    f"({len(self.board)}), got {None if self.arrows is None else len(self.arrows)}"
                )
        elif self.arrows is not None:
            raise ValueError(f"arrows: only used with arrow_policy 'explicit' (arrow_policy is '{self.arrow_policy}')")
        return self

    # -- derived facts -----------------------------------------------------------------
    @property
    def values(self) -> tuple[int, ...]:
        """The distinct card values, ascending."""
        return tuple(self.deck)

    @property
    def deck_size(self) -> int:
        return sum(self.deck.values())

    @property
    def centre(self) -> int:
        """The start space (R2.1)."""
        return len(self.board) // 2

    def arrow(self, space: int) -> int | None:
        """The player a space's arrow points at, or None for two arrows (R1.3)."""
        if self.arrow_policy == "explicit":
            assert self.arrows is not None
            mark = self.arrows[space]
            return None if mark == "both" else int(mark[-1])
        to_goal_0 = space + 1
        to_goal_1 = len(self.board) - space
        if to_goal_0 == to_goal_1:
            return None
        trailing = 1 if to_goal_1 > to_goal_0 else 0
        return trailing if self.arrow_policy == "trailing" else 1 - trailing

    # -- identity and (de)serialisation ---------------------------------------------------
    def canonical_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with every field (deck keys as strings, sorted)."""
        data = self.model_dump(mode="json")
        data["deck"] = {str(v): c for v, c in self.deck.items()}
        return data

    def ruleset_hash(self) -> str:
        """A stable 16-hex-digit identity of the rules (same config => same hash).

        `round_reward` is left out: reward shaping changes what a learner is paid, not the
        game, so results under any shaping compare (and models load) under one hash.
        """
        rules = {k: v for k, v in self.canonical_dict().items() if k not in _NOT_RULES}
        blob = json.dumps(rules, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def with_overrides(self, **overrides: Any) -> RulesConfig:
        """A new validated config with some fields replaced."""
        return RulesConfig(**{**self.model_dump(), **overrides})

    @classmethod
    def from_yaml(cls, path: str | Path) -> RulesConfig:
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except yaml.YAMLError as err:
            raise ValueError(f"{path}: not valid YAML ({' '.join(str(err).split())})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a rules config must be a YAML mapping, got {type(data).__name__}")
        return cls(**data)

    def to_yaml(self) -> str:
        data = self.model_dump(mode="json")
        return yaml.safe_dump(data, sort_keys=False)


def _no_text(value: Any, what: str) -> Any:
    if isinstance(value, str):
        raise ValueError(f"{what} must be a number, got the text {value!r}")
    return value


def make_config(config: RulesConfig | dict[str, Any] | str | Path | None = None, **overrides: Any) -> RulesConfig:
    """Build a config from None (defaults), a RulesConfig, a mapping or a YAML path, plus overrides."""
    if config is None:
        base: dict[str, Any] = {}
    elif isinstance(config, RulesConfig):
        base = config.model_dump()
    elif isinstance(config, dict):
        base = dict(config)
    elif isinstance(config, (str, Path)):
        base = RulesConfig.from_yaml(config).model_dump()
    else:
        raise TypeError(f"rules config must be a RulesConfig, a dict, a YAML path or None, got {type(config).__name__}")
    return RulesConfig(**{**base, **overrides})
