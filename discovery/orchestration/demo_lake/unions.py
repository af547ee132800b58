"""Unionable families: each seed table cut by rows and by columns into several tables with renamed headers.

A family's members hold disjoint row ranges of one seed table (row split); about half of them also keep only a
subset of the columns (column split), always including the subject column and a low-cardinality anchor column, and
at least 60% of the seed's columns and at least (m + 2) / 2 of its m columns, so any two members share at least
two attributes and some values.  Headers are
replaced by synonyms in a per-table style and columns are shuffled, as independent exports of one source look.
"""
from __future__ import annotations

import math

import numpy as np

from . import vocab
from .builder import LakeBuilder, attr_kind
from .seeds import SEEDS, SeedSchema
from .tablefile import header_key, style_header


def family_sizes(n_tables: int, rng: np.random.Generator) -> list[int]:
    """Split ``n_tables`` into families of at least three tables, one family per seed schema at most."""
    n_families = max(1, min(len(SEEDS), n_tables // 6))
    base, extra = divmod(n_tables, n_families)
    sizes = [base + (1 if i < extra else 0) for i in range(n_families)]
    if min(sizes) < 3:
        raise ValueError(f"{n_tables} tables are too few for unionable families")
    return sizes


def _headers(schema_attrs: list[str], rng: np.random.Generator, canonical: bool) -> dict[str, str]:
    style = 0 if canonical else int(rng.integers(5))
    out: dict[str, str] = {}
    for attr in schema_attrs:
        synonyms = vocab.HEADER_SYNONYMS[attr]
        name = synonyms[0] if canonical else synonyms[int(rng.integers(len(synonyms)))]
        name = style_header(name, style)
        if header_key(name) in {header_key(h) for h in out.values()} or not header_key(name):
            name = synonyms[0]
        out[attr] = name
    return out


def _member_attrs(seed: SeedSchema, attrs: list[str], rng: np.random.Generator, split: bool) -> list[str]:
    if not split:
        return list(attrs)
    keep = max(math.ceil(0.6 * len(attrs)), math.ceil((len(attrs) + 2) / 2))
    must = [a for a in attrs if a in (seed.subject, seed.anchor)]
    others = [a for a in attrs if a not in must]
    chosen = set(must) | {others[i] for i in rng.permutation(len(others))[:keep - len(must)]}
    return [a for a in attrs if a in chosen]


def write_family(lake: LakeBuilder, seed: SeedSchema, size: int, family: str) -> tuple[list[str], list[dict]]:
    """Write one family; returns its table paths and the (table, column, attribute) rows of its columns."""
    rng = lake.rng
    n_rows = rng.integers(15, 61, size=size)
    data = seed.make(rng, int(n_rows.sum()))
    attrs = list(data)
    bounds = np.concatenate([[0], np.cumsum(n_rows)])
    order = rng.permutation(int(n_rows.sum()))
    paths, columns_gt = [], []
    for m in range(size):
        rows = np.sort(order[bounds[m]:bounds[m + 1]])
        member = _member_attrs(seed, attrs, rng, split=m > 0 and rng.random() < 0.5)
        if m > 0 and rng.random() < 0.6:
            member = [member[i] for i in rng.permutation(len(member))]
        names = _headers(member, rng, canonical=m == 0)
        cols = []
        for a in member:
            col = [data[a][int(r)] for r in rows]
            cols.append(col if a == seed.subject else lake.with_missing(col, 0.03))
        path = lake.add_table(seed.folder, seed.stems[int(rng.integers(len(seed.stems)))], [names[a] for a in member],
                              cols, [attr_kind(a) for a in member], role="union", group=family)
        paths.append(path)
        columns_gt += [{"table": path, "column": names[a], "attribute": a} for a in member]
    return paths, columns_gt


def union_pairs(families: dict[str, list[str]], attrs_of: dict[str, set[str]], all_tables: list[str],
                rng: np.random.Generator) -> list[dict]:
    """Labelled candidates: for the first (up to three) members of each family, every other member as a positive
    and as many negatives, half of them hard (tables sharing a column attribute but from another source)."""
    family_of = {t: f for f, ts in families.items() for t in ts}
    out = []
    for fam, members in families.items():
        for query in members[:3]:
            positives = [t for t in members if t != query]
            others = [t for t in all_tables if family_of.get(t) != fam]
            hard = [t for t in others if attrs_of.get(t, set()) & attrs_of[query]]
            n_hard = min(len(hard), len(positives) // 2)
            negatives = [hard[i] for i in rng.permutation(len(hard))[:n_hard]]
            rest = [t for t in others if t not in set(negatives)]
            negatives += [rest[i] for i in rng.permutation(len(rest))[:len(positives) - n_hard]]
            out += [{"query_table": query, "lake_table": t, "unionable": 1} for t in positives]
            out += [{"query_table": query, "lake_table": t, "unionable": 0} for t in negatives]
    return out
