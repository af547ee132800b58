"""Semantic joinable-table search (PEXESO): pivot mapping, hierarchical grids, block-and-verify, partitions."""
from .grid import CellHierarchy, GridSpec
from .metric import METRICS, chord_threshold, max_distance
from .partitioning import column_histograms, partition_columns, partition_count, search_partitions
from .pivots import map_to_pivots, select_pivots
from .search import METHODS, JoinableColumn, JoinIndex, JoinResult
from .tally import required_matches

__all__ = [
    "CellHierarchy", "GridSpec", "JoinIndex", "JoinResult", "JoinableColumn", "METHODS", "METRICS",
    "chord_threshold", "column_histograms", "map_to_pivots", "max_distance", "partition_columns",
    "partition_count", "required_matches", "search_partitions", "select_pivots",
]
