"""The lake being written: unique realistic paths, format choice, missing values, and the table manifest."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .seeds import DATE_ATTRS, FLOAT_ATTRS, INT_ATTRS
from .tablefile import FORMATS, table_bytes

#: How missing values are spelt in the lake's text files (all are null tokens of ``discovery.ground.normalize``).
MISSING = ("", "N/A", "null", "-", "NaN")
_FORMAT_NAMES = ("csv", "tsv", "semicolon", "parquet")
_FORMAT_WEIGHTS = np.array([0.78, 0.08, 0.08, 0.06])
_SUFFIXES = ("2019", "2020", "2021", "2022", "2023", "q1", "q2", "q3", "q4", "emea", "apac", "amer", "latam", "v2",
             "final", "export", "snapshot", "archive", "eu", "us", "north", "south", "part1", "part2", "part3")


def attr_kind(attribute: str) -> str:
    """Value type of a canonical attribute: int, float, date or str."""
    if attribute in INT_ATTRS:
        return "int"
    if attribute in FLOAT_ATTRS:
        return "float"
    if attribute in DATE_ATTRS:
        return "date"
    return "str"


@dataclass
class LakeBuilder:
    """Writes table files under ``root`` and records one manifest row per file."""

    root: Path
    rng: np.random.Generator
    manifest: list[dict] = field(default_factory=list)
    _paths: set[str] = field(default_factory=set)

    def fresh_path(self, folder: str, stem: str, ext: str) -> str:
        """A path under ``folder`` not used yet: the stem, else the stem with a realistic suffix (year, region)."""
        candidates = [stem] + [f"{stem}_{s}" for s in (_SUFFIXES[i] for i in self.rng.permutation(len(_SUFFIXES)))]
        candidates += [f"{stem}_{i:03d}" for i in range(1000)]
        for name in candidates:
            rel = f"{folder}/{name}{ext}"
            if rel not in self._paths:
                self._paths.add(rel)
                return rel
        raise ValueError(f"no free file name for {folder}/{stem}")

    def reseeded(self, rng: np.random.Generator) -> LakeBuilder:
        """A builder of the same lake (manifest and used paths shared) drawing from ``rng``: a part of the lake added
        later keeps its own random stream, so adding it leaves the rest of the lake as it was."""
        return LakeBuilder(self.root, rng, self.manifest, self._paths)

    def choose_format(self) -> str:
        """CSV mostly, some TSV and semicolon files, a few Parquet files."""
        return _FORMAT_NAMES[int(self.rng.choice(len(_FORMAT_NAMES), p=_FORMAT_WEIGHTS))]

    def with_missing(self, column: list[str], rate: float) -> list[str]:
        """The column with about ``rate`` of its cells replaced by missing-value spellings."""
        hit = np.flatnonzero(self.rng.random(len(column)) < rate)
        if not len(hit):
            return column
        out = list(column)
        for i, token in zip(hit, self.rng.integers(len(MISSING), size=len(hit))):
            out[int(i)] = MISSING[int(token)]
        return out

    def write_bytes(self, rel: str, data: bytes) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def add_table(self, folder: str, stem: str, header: list[str], columns: list[list[str]], kinds: list[str],
                  role: str, group: str, fmt: str | None = None) -> str:
        """Write one good table and return its path relative to the lake root."""
        fmt = fmt or self.choose_format()
        rel = self.fresh_path(folder, stem, FORMATS[fmt][0])
        self.write_bytes(rel, table_bytes(fmt, header, columns, kinds, frozenset(MISSING)))
        self.manifest.append({"path": rel, "role": role, "group": group, "format": fmt, "encoding": "utf-8",
                              "rows": len(columns[0]) if columns else 0, "cols": len(header)})
        return rel
