"""RulesConfig: the R1 defaults, derived facts (arrows R1.3, centre R2.1), identity and (de)serialisation;
and the training backends' registry, from which the experiment config union is built.

Malformed configs (each a clear error) are in test_bad_input.py.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pydantic
import pytest

from tacocat import RulesConfig, make_config


def test_R0_4_R1_1_default_deck_is_38_cards_valued_1_to_12():
    cfg = RulesConfig()
    assert cfg.deck == {1: 2, 2: 3, 3: 3, 4: 3, 5: 4, 6: 4, 7: 4, 8: 4, 9: 3, 10: 3, 11: 3, 12: 2}
    assert cfg.deck_size == 38
    assert cfg.values == tuple(range(1, 13))


def test_R0_2_R1_2_default_board_seven_spaces_centre_7_sizes_4_to_9():
    cfg = RulesConfig()
    assert cfg.board == (4, 6, 9, 7, 9, 6, 4)
    assert len(cfg.board) == 7
    assert cfg.centre == 3 and cfg.board[cfg.centre] == 7
    assert min(cfg.board) >= 4 and max(cfg.board) <= 9
    assert cfg.board == tuple(reversed(cfg.board)), "R1.6: the default board is symmetric"


def test_R1_4_R1_5_other_defaults():
    cfg = RulesConfig()
    assert cfg.tie_policy == "void"
    assert cfg.max_rounds == 60
    assert cfg.arrow_policy == "trailing" and cfg.arrows is None
    assert cfg.round_reward == 0.0


def test_R1_7_default_deck_is_large_enough():
    cfg = RulesConfig()
    assert cfg.deck_size >= 4 * max(cfg.board)  # 38 >= 36


def test_R1_7_boundary_deck_of_exactly_four_times_largest_deal_is_accepted():
    # largest deal 5 -> 20 cards needed; exactly 20 is fine
    cfg = RulesConfig(deck={1: 5, 2: 5, 3: 5, 4: 5}, board=(3, 5, 3))
    assert cfg.deck_size == 20
    with pytest.raises(pydantic.ValidationError):
        RulesConfig(deck={1: 5, 2: 5, 3: 5, 4: 4}, board=(3, 5, 3))


@pytest.mark.parametrize(
    ("board", "expected"),
    [
        # R1.3: spaces 0-2 point at player_1 (player_0 leads there), spaces 4-6 at player_0.
        ((4, 6, 9, 7, 9, 6, 4), [1, 1, 1, None, 0, 0, 0]),
        ((4, 6, 7, 6, 4), [1, 1, None, 0, 0]),
        ((4, 7, 4), [1, None, 0]),
        ((4, 5, 6, 7, 8, 7, 6, 5, 4), [1, 1, 1, 1, None, 0, 0, 0, 0]),
    ],
)
def test_R1_3_trailing_arrows_point_at_the_player_whose_goal_is_farther(board, expected):
    cfg = RulesConfig(board=board, deck=dict.fromkeys(range(1, 10), 4))
    assert [cfg.arrow(s) for s in range(len(board))] == expected
    # the leading variant flips every one-arrow space, the centre keeps two arrows
    lead = cfg.with_overrides(arrow_policy="leading")
    assert [lead.arrow(s) for s in range(len(board))] == [None if a is None else 1 - a for a in expected]


def test_R1_3_explicit_arrows_are_read_from_the_list():
    arrows = ("player_0", "both", "player_1", "player_0", "player_1", "both", "player_0")
    cfg = RulesConfig(arrow_policy="explicit", arrows=arrows)
    assert [cfg.arrow(s) for s in range(7)] == [0, None, 1, 0, 1, None, 0]


def test_config_is_frozen():
    cfg = RulesConfig()
    with pytest.raises(pydantic.ValidationError):
        cfg.max_rounds = 5  # type: ignore[misc]  # frozen: the assignment must fail
    assert cfg.max_rounds == 60


def test_ruleset_hash_identifies_the_rules():
    a = RulesConfig()
    b = RulesConfig(deck=dict(reversed(list(RulesConfig().deck.items()))))  # same deck, other key order
    assert a.ruleset_hash() == b.ruleset_hash()
    assert len(a.ruleset_hash()) == 16
    for change in (
        {"tie_policy": "arrow_player_wins"},
        {"max_rounds": 59},
        {"arrow_policy": "leading"},
        {"deck": {**a.deck, 5: 5}},
        {"board": (4, 6, 9, 8, 9, 6, 4)},
    ):
        assert a.with_overrides(**change).ruleset_hash() != a.ruleset_hash(), change
    # reward shaping pays a learner differently but leaves the game itself unchanged
    assert a.with_overrides(round_reward=0.5).ruleset_hash() == a.ruleset_hash()


def test_yaml_round_trip(tmp_path: Path):
    cfg = RulesConfig(
        tie_policy="arrow_player_wins",
        arrow_policy="explicit",
        arrows=("both",) * 5,
        board=(4, 6, 7, 6, 4),
        max_rounds=12,
        round_reward=0.25,
    )
    path = tmp_path / "rules.yaml"
    path.write_text(cfg.to_yaml())
    again = RulesConfig.from_yaml(path)
    assert again == cfg
    assert again.ruleset_hash() == cfg.ruleset_hash()
    assert make_config(path) == cfg
    assert make_config(str(path), max_rounds=3).max_rounds == 3


def test_empty_yaml_gives_defaults(tmp_path: Path):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert RulesConfig.from_yaml(path) == RulesConfig()


def test_make_config_sources_and_overrides():
    assert make_config() == RulesConfig()
    assert make_config(None, tie_policy="arrow_player_wins").tie_policy == "arrow_player_wins"
    base = RulesConfig(max_rounds=7)
    assert make_config(base) == base
    assert make_config(base, round_reward=0.5) == RulesConfig(max_rounds=7, round_reward=0.5)
    assert make_config({"max_rounds": 9}).max_rounds == 9
    # overrides win over the mapping
    assert make_config({"max_rounds": 9}, max_rounds=4).max_rounds == 4


def test_with_overrides_validates():
    with pytest.raises(pydantic.ValidationError, match="board"):
        RulesConfig().with_overrides(board=(4, 6, 9, 7))


def test_canonical_dict_is_json_ready():
    data = RulesConfig().canonical_dict()
    assert data["deck"] == {str(v): c for v, c in RulesConfig().deck.items()}
    assert data["board"] == [4, 6, 9, 7, 9, 6, 4]


# ---------------------------------------------------------------------------------------
# the training backends (tacocat.train.backends): one registry, the config union built from it
# ---------------------------------------------------------------------------------------
def test_each_backend_config_names_its_backend_and_has_its_section():
    from tacocat.train.backends import BACKENDS

    for name, backend in BACKENDS.items():
        assert typing.get_args(backend.config.model_fields["backend"].annotation) == (name,)
        assert name in backend.config.model_fields, f"{backend.config.__name__} has no `{name}` section"


def test_the_config_union_and_its_lookup_are_the_registry():
    from tacocat.train.backends import BACKENDS
    from tacocat.train.config import EXPERIMENT_TYPES, ExperimentConfig, parse_experiment

    assert {name: backend.config for name, backend in BACKENDS.items()} == EXPERIMENT_TYPES
    assert typing.get_args(ExperimentConfig) == tuple(backend.config for backend in BACKENDS.values())
    with pytest.raises(pydantic.ValidationError, match="'sb3', 'rllib' or 'league'"):
        parse_experiment({"backend": "toy"})


def test_the_union_a_type_checker_reads_names_the_registry_types():
    """tacocat/train/config.py spells the union out for type checkers: the same types, in order."""
    import tacocat.train.config
    from tacocat.train.backends import BACKENDS

    tree = ast.parse(Path(tacocat.train.config.__file__).read_text())
    spelled = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "ExperimentConfig"
    )
    names = sorted((n for n in ast.walk(spelled.value) if isinstance(n, ast.Name)), key=lambda n: n.col_offset)
    assert [n.id for n in names] == [backend.config.__name__ for backend in BACKENDS.values()]


def test_a_backend_trainer_is_imported_only_when_asked_for():
    import subprocess
    import sys

    code = (
        "import sys; from tacocat.train.config import load_experiment; "
        "from tacocat.train.backends import trainer_module; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'ray', 'stable_baselines3') "
        "or m.endswith('.trainer')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
