"""The sample lake: byte-identical per seed, and its ground truth agrees with the files when read back."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from discovery.ground.normalize import normalize_values
from discovery.orchestration.demo_lake import generate_demo_lake, load_ground_truth, read_demo_table
from discovery.orchestration.demo_lake.tablefile import header_key
from discovery.orchestration.demo_lake.vocab import HEADER_SYNONYMS


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("lake")
    summary = generate_demo_lake(root, seed=7, n_tables=300)
    return root, summary, load_ground_truth(root)


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    generate_demo_lake(root, seed=11, n_tables=60)
    return root, load_ground_truth(root)


def _read_all(root: Path, gt: dict) -> dict[str, tuple[list[str], list[list[str | None]]]]:
    return {t["path"]: read_demo_table(root, t["path"], gt) for t in gt["tables"] if t["role"] != "broken"}


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate_demo_lake(a, seed=3, n_tables=60)
    generate_demo_lake(b, seed=3, n_tables=60)
    generate_demo_lake(c, seed=4, n_tables=60)
    fa, fb, fc = _files(a), _files(b), _files(c)
    assert fa == fb
    assert fa != fc


def test_regenerating_replaces_the_previous_lake_and_refuses_foreign_folders(tmp_path):
    generate_demo_lake(tmp_path / "lake", seed=1, n_tables=70)
    generate_demo_lake(tmp_path / "lake", seed=2, n_tables=50)
    gt = load_ground_truth(tmp_path / "lake")
    lake_files = {p for p in _files(tmp_path / "lake") if not p.startswith("_ground_truth/")}
    assert lake_files == {t["path"] for t in gt["tables"]}
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        generate_demo_lake(tmp_path / "other", n_tables=50)
    with pytest.raises(ValueError):
        generate_demo_lake(tmp_path / "tiny", n_tables=10)


def test_manifest_matches_files_and_summary(lake):
    root, summary, gt = lake
    paths = [t["path"] for t in gt["tables"]]
    assert len(paths) == len(set(paths)) == summary["n_tables"] == 300
    assert all((root / p).is_file() for p in paths)
    assert sum((root / p).stat().st_size for p in paths) == summary["bytes"] < 8_000_000
    assert sum(summary["tables_by_role"].values()) == 300
    assert all(summary["tables_by_format"][f] > 0 for f in ("csv", "tsv", "semicolon", "parquet"))
    assert len({p.split("/")[0] for p in paths}) >= 8 and all("/" in p for p in paths)
    for path, (header, cols) in _read_all(root, gt).items():
        entry = next(t for t in gt["tables"] if t["path"] == path)
        assert len(header) == entry["cols"] and all(len(c) == entry["rows"] for c in cols)


def test_every_table_named_in_ground_truth_exists(lake):
    root, _, gt = lake
    known = {t["path"] for t in gt["tables"]}
    named = {r[k] for name in ("union", "join", "join_values", "nary") for r in gt[name]
             for k in ("query_table", "lake_table")}
    named |= {r["table"] for r in gt["union_columns"]} | {r["path"] for r in gt["broken"]}
    assert named <= known


def test_union_families_share_header_synonyms_and_values(lake):
    root, _, gt = lake
    tables = _read_all(root, gt)
    group = {t["path"]: t["group"] for t in gt["tables"]}
    attrs: dict[str, dict[str, str]] = {}
    for r in gt["union_columns"]:
        assert header_key(r["column"]) in {header_key(s) for s in HEADER_SYNONYMS[r["attribute"]]}
        attrs.setdefault(r["table"], {})[r["attribute"]] = r["column"]
    for path, mapping in attrs.items():
        assert sorted(mapping.values()) == sorted(tables[path][0])

    def values(path, attr):
        header, cols = tables[path]
        return set(normalize_values(cols[header.index(attrs[path][attr])])) - {None}

    positives = [r for r in gt["union"] if r["unionable"] == 1]
    assert positives and any(r["unionable"] == 0 for r in gt["union"])
    for r in gt["union"]:
        q, t = r["query_table"], r["lake_table"]
        assert (group[q] == group[t]) == bool(r["unionable"])
        if r["unionable"]:
            shared = set(attrs[q]) & set(attrs[t])
            assert len(shared) >= 2
            assert any(values(q, a) & values(t, a) for a in shared)
    for fam in {group[p] for p in attrs}:
        members = [p for p in attrs if group[p] == fam]
        listed = {r["lake_table"] for r in positives if group[r["query_table"]] == fam} | \
                 {r["query_table"] for r in positives if group[r["query_table"]] == fam}
        assert listed == set(members)


def test_join_pairs_are_planted_in_the_files(lake):
    root, _, gt = lake
    tables = _read_all(root, gt)
    assert len(gt["join"]) >= 7 and len({r["kind"] for r in gt["join"]}) >= 5
    for pair in gt["join"]:
        qh, qc = tables[pair["query_table"]]
        lh, lc = tables[pair["lake_table"]]
        q_vals, l_vals = set(qc[qh.index(pair["query_column"])]), set(lc[lh.index(pair["lake_column"])])
        rows = [v for v in gt["join_values"] if (v["query_table"], v["lake_table"]) ==
                (pair["query_table"], pair["lake_table"])]
        assert len(rows) == pair["matched_values"] == len({v["query_value"] for v in rows}) > 0
        assert pair["containment"] == pytest.approx(pair["matched_values"] / pair["query_distinct"], abs=1e-4)
        assert len(q_vals) == pair["query_distinct"]
        assert all(v["query_value"] in q_vals and v["lake_value"] in l_vals for v in rows)
        norm_lake = normalize_values([v["lake_value"] for v in rows])
        assert len(set(norm_lake)) == len(rows)
        changed = [v for v in rows if v["lake_value"] != v["query_value"]]
        assert len(changed) == len(rows)
        assert sum(n != q for n, q in zip(norm_lake, normalize_values([v["query_value"] for v in rows]))) \
            >= 0.7 * len(rows)
    variations = {part for v in gt["join_values"] for part in v["variation"].split("+")}
    assert {"abbreviation", "case", "typo", "word_order", "qualifier"} <= variations


def _brute_force_j(q_cols, header, cols):
    q = {t for t in zip(*q_cols) if None not in t}
    best = 0
    for perm in itertools.permutations(range(len(header)), len(q_cols)):
        best = max(best, len(q & set(zip(*(cols[j] for j in perm)))))
    return best


def _check_nary(root, gt, complete: bool):
    tables = {p: (h, [normalize_values(c) for c in cols]) for p, (h, cols) in _read_all(root, gt).items()}
    group = {t["path"]: t["group"] for t in gt["tables"]}
    queries = {r["query_table"]: r["query_columns"] for r in gt["nary"]}
    assert queries
    for r in gt["nary"]:
        qh, qc = tables[r["query_table"]]
        q_cols = [qc[qh.index(c)] for c in r["query_columns"]]
        lh, lc = tables[r["lake_table"]]
        stated = [lc[lh.index(c)] for c in r["lake_columns"]]
        tuples = {t for t in zip(*q_cols) if None not in t}
        assert r["query_tuples"] == len(tuples)
        assert len(tuples & set(zip(*stated))) == r["joinable_tuples"] == _brute_force_j(q_cols, lh, lc)
        assert (group[r["lake_table"]] == group[r["query_table"]]) == bool(r["planted"])
    for q, q_columns in queries.items():
        planted = {r["lake_table"] for r in gt["nary"] if r["query_table"] == q and r["planted"]}
        assert planted == {p for p in group if group[p] == group[q] and p != q and p not in queries}
        assert max(r["joinable_tuples"] for r in gt["nary"] if r["query_table"] == q and r["planted"]) > 0
        if complete:
            listed = {r["lake_table"] for r in gt["nary"] if r["query_table"] == q}
            qh, qc = tables[q]
            q_cols = [qc[qh.index(c)] for c in q_columns]
            for path, (lh, lc) in tables.items():
                if path != q and path not in listed:
                    assert _brute_force_j(q_cols, lh, lc) == 0


def test_nary_joinability_is_exact_when_read_back(lake):
    root, _, gt = lake
    _check_nary(root, gt, complete=False)
    assert any(len(r["query_columns"]) == 3 for r in gt["nary"])


def test_nary_ground_truth_lists_every_joinable_table(small_lake):
    _check_nary(*small_lake, complete=True)


def test_nary_lake_tables_hold_decoys_that_only_a_multi_column_key_rejects(lake):
    root, _, gt = lake
    tables = _read_all(root, gt)
    for r in (r for r in gt["nary"] if r["planted"]):
        qh, qc = tables[r["query_table"]]
        lh, lc = tables[r["lake_table"]]
        first_q = set(normalize_values(qc[qh.index(r["query_columns"][0])])) - {None}
        cols = [normalize_values(lc[lh.index(c)]) for c in r["lake_columns"]]
        single_hits = sum(1 for v in cols[0] if v in first_q)
        assert single_hits > r["joinable_tuples"]


def test_broken_files_are_there_for_their_reasons(lake):
    root, _, gt = lake
    broken = {r["path"]: r for r in gt["broken"]}
    assert len(broken) >= 10 and {r["status"] for r in broken.values()} == {"ok", "error"}
    by_reason = {r["reason"].split(" ")[0].split(":")[0]: root / p for p, r in broken.items()}
    assert by_reason["empty"].stat().st_size == 0
    assert by_reason["header"].read_text().count("\n") == 1
    assert (root / next(p for p, r in broken.items() if "exceeds" in r["reason"])).stat().st_size > 1_000_000
    cp1252 = (root / next(p for p, r in broken.items() if r["reason"].startswith("cp1252"))).read_bytes()
    with pytest.raises(UnicodeDecodeError):
        cp1252.decode("utf-8")
    assert "Zürich" in cp1252.decode("cp1252")
    assert (root / next(p for p, r in broken.items() if r["reason"].startswith("UTF-16"))).read_bytes()[:2] \
        in (b"\xff\xfe", b"\xfe\xff")
    truncated = root / next(p for p, r in broken.items() if "Parquet" in r["reason"])
    with pytest.raises(pa.ArrowInvalid):
        pq.read_table(truncated)
    binary = (root / next(p for p, r in broken.items() if "JPEG" in r["reason"])).read_bytes()
    with pytest.raises(UnicodeDecodeError):
        binary.decode("utf-8")
    ragged = (root / next(p for p, r in broken.items() if r["reason"].startswith("ragged"))).read_text()
    assert len({line.count(",") for line in ragged.splitlines()}) == 2
    quoting = (root / next(p for p, r in broken.items() if r["reason"].startswith("malformed"))).read_text()
    assert quoting.count('"') % 2 == 1
    for path, r in broken.items():
        if r["status"] == "ok":
            header, cols = read_demo_table(root, path, gt)
            entry = next(t for t in gt["tables"] if t["path"] == path)
            assert len(header) == entry["cols"] and len(cols[0]) == entry["rows"] > 0
    dup = next(p for p, r in broken.items() if r["reason"].startswith("duplicate"))
    header, _ = read_demo_table(root, dup, gt)
    assert len({h.lower() for h in header}) < len(header)


def test_numeric_joins_are_planted_in_the_files(lake):
    """Coordinates a few metres apart and re-taken measurements: the counts of ``numeric.csv`` are those of a brute
    force over the files (haversine by its own formula here), and the planted join beats the weaker one."""
    root, summary, gt = lake
    tables = _read_all(root, gt)
    assert summary["numeric_joins"] == sum(r["planted"] for r in gt["numeric"]) == 2
    assert {r["kind"] for r in gt["numeric"]} == {"coordinates", "measurement"}

    def column_values(path, cols):
        header, data = tables[path]
        return np.unique(np.array([[float(v) for v in row] for row in zip(*(data[header.index(c)] for c in cols))
                                   if all(v not in (None, "") for v in row)]), axis=0)

    def haversine(a, b):
        la1, lo1, la2, lo2 = map(np.radians, (a[:, None, 0], a[:, None, 1], b[None, :, 0], b[None, :, 1]))
        h = np.sin((la2 - la1) / 2) ** 2 + np.cos(la1) * np.cos(la2) * np.sin((lo2 - lo1) / 2) ** 2
        return 2 * 6371008.8 * np.arcsin(np.sqrt(h))

    for r in gt["numeric"]:
        q, x = column_values(r["query_table"], r["query_columns"]), column_values(r["lake_table"], r["lake_columns"])
        d = haversine(q, x) if r["kind"] == "coordinates" else np.abs(q[:, None, 0] - x[None, :, 0])
        assert r["query_distinct"] == len(q)
        assert r["matched_values"] == int((d <= r["tau"] * (1 + 1e-9)).any(axis=1).sum())
        assert r["matched_values"] == int((d <= r["tau"] * (1 - 1e-9)).any(axis=1).sum())  # none near the boundary
        if r["planted"]:
            assert r["matched_values"] >= 0.6 * r["query_distinct"]
    planted = next(r for r in gt["numeric"] if r["kind"] == "coordinates" and r["planted"])
    weaker = next(r for r in gt["numeric"] if not r["planted"])
    assert 0 < weaker["matched_values"] < planted["matched_values"]
