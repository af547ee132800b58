"""String programs: how the values of a query row are written as one lake value, learned from the two columns.

Some joins pair no two similar strings: a lake column of user names (``jsmith``, ``smith_j``, ``john.smith@corp``)
holds each person the query writes in two columns, ``first`` and ``last``.  Auto-Join (Zhu, He and Chaudhuri, VLDB
2017) joins such columns by a *program* that turns a query row into the lake's value, learned from the row pairs
that a program can explain.  Here a program is a concatenation of parts:

* ``f.w`` / ``f.last``: a word of field ``f`` (the first, second, third or the last word), as the key writes it;
* ``f.w[:k]`` / ``f.last[:k]``: its first ``k`` letters (1 to 3);
* ``"s"``: a constant (a separator, a domain; at most two in a program).

Words are runs of letters and digits of the normalised key (:func:`discovery.ground.normalize.normalize_array`: case
folded, accents kept), so a program writes the lake value's key exactly.

**Learning.**  Each of the first ``SAMPLE`` query rows is blocked against the lake values by the 3-grams of its
fields joined (:mod:`.blocking`, ``CANDIDATES`` nearest); every program that writes one of its candidates exactly is
enumerated, and a program's *support* is the number of rows it writes a candidate for.  The program of most
support is taken (ties: fewer constants, then fewer parts, then first words before last), the rows it writes a
lake value for are set aside, and the next is learned from the rest, up to ``MAX_PROGRAMS``, while a program's
support is at least ``MIN_SUPPORT`` rows and a tenth of the sample: a program a few rows support is a coincidence.
A lake value a chosen program writes for one row supports no later program for another row (``James`` with the
constant ``.martin`` writes ``james.martin``, which ``first + '.' + last`` already wrote for James Martin).

**Applying and its precision.**  Every query row is written by the programs in order, and joins the lake value equal
to the first output the lake holds.  Two different query rows written as one value (``James Smith`` and ``John
Smith``, both ``jsmith``) name two people, and the lake value can be at most one of them: neither joins.  A row
written as no other row is can still meet an account of someone the query does not hold: the query's own rows say
how often a program writes two people as one (the principle of Auto-FuzzyJoin, which reads the lake's values to
say how alike distinct entities look), and the lake values no program writes say how many such people the lake
holds; :func:`_precision` turns the two into each join's ``p``.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .blocking import featurise, nearest

SAMPLE = 300
CANDIDATES = 5
MAX_PROGRAMS = 3
MIN_SUPPORT = 3
MAX_CONSTANTS = 2
#: Lake values longer than this are not learned from (a program writes a key, not a sentence).
MAX_LENGTH = 64
_WORD = re.compile(r"[^\W_]+")
#: Which words of a field a part may take: the first three and the last.
_POSITIONS = (0, 1, 2, -1)

Part = tuple  # ("word", field, position, letters or 0) or ("const", text)


@dataclass(frozen=True)
class Program:
    """A concatenation of parts (module docstring) and the query columns its fields name."""

    parts: tuple[Part, ...]

    def write(self, fields: list[list[str]]) -> str | None:
        """The value this program writes for a row whose fields have the words ``fields``; None when a part reads a
        word the row lacks."""
        out = []
        for part in self.parts:
            if part[0] == "const":
                out.append(part[1])
                continue
            _, f, position, letters = part
            words = fields[f]
            if position >= len(words) or -position > len(words):
                return None
            word = words[position]
            if letters and len(word) <= letters:
                return None
            out.append(word[:letters] if letters else word)
        return "".join(out)

    def describe(self, names: list[str]) -> str:
        shown = []
        for part in self.parts:
            if part[0] == "const":
                shown.append(repr(part[1]))
                continue
            _, f, position, letters = part
            word = f"{names[f]}.{'last' if position < 0 else f'w{position + 1}'}"
            shown.append(f"{word}[:{letters}]" if letters else word)
        return " + ".join(shown)

    def _rank(self) -> tuple:
        """Order among programs of equal support: fewer constants, fewer parts, then first words before last."""
        order = tuple(p if p[0] == "const" else (p[0], p[1], 99 if p[2] < 0 else p[2], p[3]) for p in self.parts)
        return sum(p[0] == "const" for p in self.parts), len(self.parts), order


def _positions(n: int) -> list[int]:
    """The word positions a field of ``n`` words offers: the first three it has, and the last.  A word that is both
    (``Smith`` is the first and the last) is offered as both; the rows of other lengths decide which holds
    (``Mary Ann`` writes ``m`` by its first word, ``de Vries`` ``vries`` by its last)."""
    return [i for i in _POSITIONS if i < n] if n else []


def _pieces(fields: list[list[str]]) -> list[tuple[Part, str]]:
    """Every field part a row offers, with the text it writes."""
    out = []
    for f, words in enumerate(fields):
        for position in _positions(len(words)):
            word = words[position]
            out.append((("word", f, position, 0), word))
            out += [(("word", f, position, k), word[:k]) for k in (1, 2, 3) if k < len(word)]
    return out


def programs_writing(fields: list[list[str]], target: str) -> set[Program]:
    """Every program (at most ``MAX_CONSTANTS`` constants) that writes ``target`` from a row with these fields."""
    pieces = _pieces(fields)
    found: set[Program] = set()
    if len(target) > MAX_LENGTH:
        return found

    def walk(pos: int, parts: tuple, constants: int) -> None:
        if pos == len(target):
            if constants < len(parts):      # a program that writes no field is a constant, not a program
                found.add(Program(parts))
            return
        starts = False
        for part, text in pieces:
            if text and target.startswith(text, pos):
                starts = True
                walk(pos + len(text), parts + (part,), constants)
        if constants < MAX_CONSTANTS and (not parts or parts[-1][0] != "const"):
            # a constant runs to the next place a field part starts (or to the end), or is one separator
            ends = {len(target)} | {q for q in range(pos + 1, len(target)) for _, text in pieces
                                    if text and target.startswith(text, q)}
            if not starts or not target[pos].isalnum():
                for end in sorted(ends):
                    walk(end, parts + (("const", target[pos:end]),), constants + 1)
                    if target[pos].isalnum():
                        break

    walk(0, (), 0)
    return found


def words_of(rows: list[tuple[str, ...]]) -> list[list[list[str]]]:
    return [[_WORD.findall(v) for v in row] for row in rows]


def learn(rows: list[tuple[str, ...]], lake: list[str]) -> list[Program]:
    """The programs that write the lake's values from the query ``rows`` (module docstring)."""
    sample = rows[:SAMPLE]
    if not sample or not lake:
        return []
    f = featurise([" ".join(r) for r in sample], lake)
    qi, li = nearest(f.gram_vectors[f.rows("query")], f.gram_vectors[f.rows("lake")], CANDIDATES)
    fields = words_of(sample)
    writes: dict[int, dict[Program, set[str]]] = {}
    for i, j in zip(qi.tolist(), li.tolist()):
        for program in programs_writing(fields[i], lake[j]):
            writes.setdefault(i, {}).setdefault(program, set()).add(lake[j])
    lake_set, left = set(lake), set(writes)
    chosen: list[Program] = []
    claimed: set[str] = set()
    least = max(MIN_SUPPORT, len(sample) // 10)
    while left and len(chosen) < MAX_PROGRAMS:
        # a lake value a chosen program writes for one row is that row's: no support for writing it for another
        support = Counter(p for i in left for p, values in writes[i].items() if values - claimed)
        if not support:
            break
        best = min(support, key=lambda p: (-support[p], p._rank()))
        if support[best] < least:
            break
        chosen.append(best)
        written = {i: best.write(fields[i]) for i in writes}
        claimed |= {v for v in written.values() if v in lake_set}
        left = {i for i in left if written[i] not in lake_set}
    return chosen


def apply(programs: list[Program], rows: list[tuple[str, ...]], lake: list[str]
          ) -> tuple[list[tuple[int, str, int, float]], set[int], float | None]:
    """``(joins, decided, precision)``: ``(row, lake value, program, p)`` for each row whose first output the lake
    holds and no other row writes; the rows whose output the lake holds (joined, or left out as one of several
    writing it); the estimated precision of the joins (module docstring; None when nothing joins)."""
    lake_set = set(lake)
    written = [[program.write(f) for f in words_of(rows)] for program in programs]
    first = [next(((written[k][r], k) for k in range(len(programs)) if written[k][r] in lake_set), None)
             for r in range(len(rows))]
    taken = Counter(o[0] for o in first if o is not None)
    p = _precision(written, lake_set)
    joins = [(r, str(o[0]), o[1], p) for r, o in enumerate(first) if o is not None and taken[o[0]] == 1]
    decided = {r for r, o in enumerate(first) if o is not None}
    return joins, decided, (p if joins else None)


def _precision(written: list[list[str | None]], lake: set[str]) -> float:
    """How likely a row's output the lake holds, and no other row writes, is that row's (module docstring).

    Each program writes two of the query's rows as one value with a frequency read off the rows: ``c``, its
    colliding pairs of rows over all pairs of rows it writes (summed over the programs).  The lake values no
    program writes for any row belong to entities the query does not hold, ``o`` of them, each writing a given
    output with probability ``c``; so a lake value equal to one row's output is another entity's with odds ``o c``
    against 1."""
    colliding = pairs = 0.0
    for column in written:
        counts = Counter(v for v in column if v is not None)
        n = sum(counts.values())
        pairs += n * (n - 1) / 2
        colliding += sum(k * (k - 1) / 2 for k in counts.values())
    others = len(lake - {v for column in written for v in column})
    return 1.0 / (1.0 + others * colliding / pairs) if pairs else 1.0
