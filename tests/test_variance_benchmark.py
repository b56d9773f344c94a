"""benchmarks/variance.py, the command behind docs/EVALUATION.md's variance tables: its
bootstrap interval of the variance ratio, and one row of the published table on a few deal
pairs (the pairing's shipped seated file, or the file for any pairing)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.variance import HEADER, ratio_interval, run, table_row


def test_the_ratio_interval_brackets_a_known_ratio_and_not_its_inverse():
    rng = np.random.default_rng(7)
    plain, reduced = rng.normal(0.0, 2.0, 2000), rng.normal(0.0, 1.0, 2000)  # variance ratio 4
    low, high = ratio_interval(plain, reduced)
    assert low < 4.0 < high and high < 5.0
    low, high = ratio_interval(reduced, plain)
    assert low < 0.25 < high and low > 0.2
    assert ratio_interval(plain, reduced) == ratio_interval(plain, reduced)  # its bootstrap is seeded


@pytest.mark.parametrize(
    ("any_pairing", "value_file"), [(False, "value_default_champion_counter.npz"), (True, "value_default.npz")]
)
def test_a_table_row_names_its_value_file_and_carries_the_match_estimates(any_pairing, value_file):
    result = run([("champion", "counter", 3)], workers=1, seed=3, options={}, command="c", any_pairing=any_pairing)
    (row,) = result["rows"]
    assert row["value_file"] == value_file and list(result["value_files"]) == [value_file]
    assert row["deal_pairs"] == 3 and result["command"] == "c" and result["seed"] == 3
    for mean, low, high in (row["plain"], row["reduced"]):
        assert low <= mean <= high
    assert row["variance_ratio"] > 0
    cells = table_row(row).strip("|").split("|")
    assert len(cells) == HEADER.splitlines()[0].count("|") - 1
    assert cells[:3] == [" champion ", " counter ", " 3 "]
    assert f"{row['variance_ratio']:.2f}" in cells[-1]
