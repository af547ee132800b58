"""Include and exclude patterns over lake table paths, as data catalogs' path specs offer them.

Patterns are gitignore-style globs (``pathspec``): ``*`` stays within a folder, ``**`` crosses folders, a pattern
with no ``/`` matches a name at any depth, and a trailing ``/`` names folders.  A table is kept when it matches an
include pattern (every table when there is none) and no exclude pattern.  A dataset table (a Delta, Iceberg,
partitioned or part-file folder) is matched as its folder path, with and without the trailing ``/``, so both
``sales/orders`` and ``sales/`` select it.
"""
from __future__ import annotations

from collections.abc import Sequence

import pathspec


def _spec(patterns: Sequence[str]) -> pathspec.PathSpec | None:
    patterns = [p.strip() for p in patterns if p and p.strip()]
    if not patterns:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(patterns)
    except Exception as exc:  # pathspec raises several types for a malformed pattern
        raise ValueError(f"invalid lake path pattern in {patterns!r}: {exc}") from None


class TableFilter:
    """``filter(path)`` is True for a table the patterns keep."""

    def __init__(self, include: Sequence[str] = (), exclude: Sequence[str] = ()):
        self.include, self.exclude = _spec(include), _spec(exclude)

    @staticmethod
    def _hit(spec: pathspec.PathSpec, path: str) -> bool:
        return spec.match_file(path) or spec.match_file(path.rstrip("/") + "/")

    def __call__(self, path: str) -> bool:
        if self.include is not None and not self._hit(self.include, path):
            return False
        return self.exclude is None or not self._hit(self.exclude, path)
