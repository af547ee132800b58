"""What a union search returns: ranked tables with their column alignment, and how much work the query did."""
from __future__ import annotations

from dataclasses import asdict, dataclass

Alignment = tuple[tuple[int, int, float], ...]


@dataclass(frozen=True)
class UnionResult:
    """One ranked table: its score and the column alignment (query column, lake column ordinal, similarity)."""

    table_id: int
    score: float
    alignment: Alignment


@dataclass(frozen=True)
class SearchStats:
    """How much work a query did: candidate tables generated (for pgtus / pgtus++: those whose cone bound admits a
    pair), kept after pruning, exact matchings computed and how many of those needed an assignment problem (the rest
    had isolated admissible pairs only), candidates whose member-level bounds were computed, and whether the lake
    was scored exhaustively in the end (pgtus / pgtus++ when the cones did not narrow it, pgtus++-approx when its
    candidates held fewer than k unionable tables)."""

    method: str
    candidates_after_refinement: int
    candidates_after_pruning: int
    exact_matchings: int
    assignments_solved: int = 0
    candidates_bounded: int = 0
    exhaustive: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class UnionSearch:
    """Ranked results of one query; ``score_kind`` is "unionability" (Def. 5) or "dual_evidence" (TACTUS mu)."""

    results: list[UnionResult]
    stats: SearchStats
    score_kind: str
