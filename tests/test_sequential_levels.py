"""benchmarks/lab_sequential_levels.py: Pocock's levels at the lab's later looks, checked by simulation."""

from __future__ import annotations

import json

import pytest

from benchmarks.lab_sequential_levels import check, look_sizes, main, smallest_p


def test_look_sizes_count_each_seed_once_in_the_order_read():
    earlier = [frozenset({93, 94, 95}), frozenset({96, 97, 98}), frozenset({99, 100})]
    assert look_sizes(earlier, [frozenset(range(213, 221))]) == [3, 6, 8, 16]
    assert look_sizes([frozenset({1, 2})], [frozenset({2, 3}), frozenset({4})]) == [2, 4]  # seed 2 once


def test_one_look_at_5_percent_decides_a_null_one_time_in_twenty():
    """One look is the plain t-test: its p is uniform under the null, so it lies below 0.05 with chance 0.05 (20,000
    draws: standard error 0.0015)."""
    row = check([6], draws=20_000)
    assert row["nominal_level"] == 0.05 and row["error_at_nominal"] == pytest.approx(0.05, abs=0.005)
    assert row["level_for_5_percent"] == pytest.approx(0.05, abs=0.005)


def test_equally_spaced_large_looks_give_pocock_his_5_percent():
    """Two equally spaced looks of many seeds (t close to z): Pocock's 0.0294 is his level for exactly this case, so
    the chance of deciding at either look is 5 %; unequal small looks (4 then 12 seeds, t on 3 df) raise it."""
    equal = check([200, 400], draws=20_000)
    assert equal["error_at_nominal"] == pytest.approx(0.05, abs=0.005)
    assert equal["level_for_5_percent"] == pytest.approx(0.0294, abs=0.003)
    small = check([4, 12], draws=20_000)
    assert small["error_at_nominal"] > 0.05 and small["level_for_5_percent"] < 0.0294


def test_smallest_p_is_the_smallest_over_the_looks():
    """With the same draws (the largest look sets their shape), the last look's p alone is at least the smallest over
    both looks, draw by draw, and a look repeated changes nothing."""
    both, last = smallest_p([3, 6], 1000, seed=1), smallest_p([6], 1000, seed=1)
    assert both.shape == (1000,) and (both <= last).all() and (both < last).any()
    assert (smallest_p([6, 6], 1000, seed=1) == last).all()


def test_command_line(tmp_path, capsys):
    for name, first, n in (("a.json", 1, 4), ("b.json", 5, 8)):
        (tmp_path / name).write_text(json.dumps({"setup": {"seeds": n, "first_seed": first}, "claims": []}))
    out = tmp_path / "levels.json"
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main([f"{a}+{b}", f"{a},{b}", "--draws", "2000", "--json", str(out)]) == 0
    written = json.loads(out.read_text())
    rows = written["rows"]
    assert len(rows) == 1 and rows[0]["sizes"] == [4, 12] and rows[0]["looks"] == 2  # the first look is left out
    assert written["command"].endswith(f"{a}+{b} {a},{b} --draws 2000")  # the options that change the figures
    assert "| 2 | 4, 12 | 0.0294 |" in capsys.readouterr().out
    assert main([f"{a}+{b}", "--draws", "2000", "--scale", "10", "--json", str(out)]) == 0
    scaled = json.loads(out.read_text())
    assert scaled["rows"][0]["sizes"] == [40, 120] and scaled["command"].endswith("--draws 2000 --scale 10")
    capsys.readouterr()
    assert main([f"{a}+"]) == 2 and "error:" in capsys.readouterr().err
    assert main([f"{a}+{tmp_path / 'gone.json'}"]) == 2 and "gone.json" in capsys.readouterr().err
