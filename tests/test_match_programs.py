"""String programs (:mod:`discovery.transforms.match.programs`): the enumeration finds exactly the programs a brute
force over every sequence of parts finds, learning takes the program most rows support (and a second for the rows
another convention writes), and the estimate is one minus the share of rows a program writes as another row's value."""
from __future__ import annotations

import itertools
import random

import pytest

from discovery.transforms.match import match_rows
from discovery.transforms.match.programs import (MAX_CONSTANTS, Program, _pieces, apply, learn, programs_writing,
                                                 words_of)


def _brute_force(fields: list[list[str]], target: str) -> set[Program]:
    """Every sequence of field parts and constants (constants: any substring of the target, none adjacent, at
    most MAX_CONSTANTS, each starting where no field part starts or at a separator, and running to the end or to
    where a field part starts; at least one field part) that writes ``target``."""
    pieces = _pieces(fields)
    starts = {q for q in range(len(target)) for _, t in pieces if t and target.startswith(t, q)}
    found = set()
    for n in range(1, 6):
        options = [(p, t) for p, t in pieces if t] + [
            (("const", target[a:b]), target[a:b]) for a in range(len(target)) for b in range(a + 1, len(target) + 1)]
        for seq in itertools.product(options, repeat=n):
            if "".join(t for _, t in seq) != target:
                continue
            parts = tuple(p for p, _ in seq)
            consts = [i for i, p in enumerate(parts) if p[0] == "const"]
            if len(consts) > MAX_CONSTANTS or len(consts) == len(parts):
                continue
            if any(b == a + 1 for a, b in zip(consts, consts[1:])):
                continue
            pos, ok = 0, True
            for p, t in seq:
                if p[0] == "const":
                    end = pos + len(t)
                    ok &= (pos not in starts or not target[pos].isalnum())
                    ok &= end == len(target) or end in starts
                    ok &= target[pos].isalnum() is False or end == min([q for q in starts if q > pos] +
                                                                       [len(target)])
                pos += len(t)
            if ok:
                found.add(Program(parts))
    return found


@pytest.mark.parametrize("case", [(["jo", "li"], "jli"), (["ann", "de vo"], "a.vo"), (["bo"], "bo_x"),
                                  (["al bo", "cy"], "cyab"), (["ed", "fu"], "fu-e")])
def test_the_programs_writing_a_value_are_exactly_the_brute_forces(case):
    rows, target = case
    fields = words_of([tuple(rows)])[0]
    assert programs_writing(fields, target) == _brute_force(fields, target)


def test_the_most_supported_program_is_learned_and_a_second_convention_after_it():
    rng = random.Random(3)
    first = ["ada", "bo", "cyd", "dag", "eli", "fay", "gus", "hal", "ivy", "jon", "kai", "lev"]
    last = ["adler", "brandt", "costa", "dietz", "engel", "fuchs", "gomez", "horn", "ito", "jansen", "klein", "lopez"]
    rows = [(f, s) for f, s in zip(first, last)] + [(f, s) for f, s in zip(first, reversed(last))]
    rng.shuffle(rows)
    lake = [f[0] + s for f, s in rows[:16]] + [f"{s}.{f}" for f, s in rows[16:]]
    programs = learn(rows, lake)
    assert [p.describe(["first", "last"]) for p in programs] == ["first.w1[:1] + last.w1",
                                                                 "last.w1 + '.' + first.w1"]
    joins, decided, precision = apply(programs, rows, lake)
    assert sorted((r, v) for r, v, _, _ in joins) == sorted(enumerate(lake))
    assert decided == set(range(len(rows))) and precision == 1.0          # no row written as another


@pytest.mark.parametrize("outsiders", [0, 4])
def test_two_rows_one_output_join_neither_and_outsiders_lower_the_estimate(outsiders):
    rows = [("james", "smith"), ("john", "smith")] + [(f"n{i}x", f"s{i}y") for i in range(18)]
    lake = ["jsmith"] + [f"ns{i}y" for i in range(18)] + [f"zz{i}" for i in range(outsiders)]
    programs = learn(rows, lake)
    joins, decided, precision = apply(programs, rows, lake)
    assert {r for r, _, _, _ in joins} == set(range(2, 20)) and decided == set(range(20))
    # 1 colliding pair among the 190 pairs of rows; each lake value no row writes is an outsider's
    assert precision == pytest.approx(1 / (1 + outsiders * 1 / 190))
    assert all(p == precision for _, _, _, p in joins)


def test_rows_are_matched_as_values_when_no_program_reaches_the_target():
    rows = [("marta", "kowalski"), ("lena", "novak"), ("omar", "haddad")]
    lake = ["marta kowalsky", "lena novak", "omar hadad", "ines duarte"]
    found = match_rows(rows, ["a", "b", "c"], lake, ["first", "last"], 0.95)
    assert dict(zip(found.query, found.lake)) == {"a": "marta kowalsky", "b": "lena novak", "c": "omar hadad"}
    assert found.programs is None and "programs" not in found.describe()
