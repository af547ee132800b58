"""Table union search over a snapshot: PGTUS / PGTUS++ (exact Definition 5 scores), Starmie, TACTUS, exhaustive.

Build a :class:`UnionIndex` once per snapshot from its arrays and call :meth:`UnionIndex.search` per query; a served
snapshot answers the exact methods from a :class:`CompactIndex` over its memory-mapped query arrays (``arrays``).  The
Spark centroid stage uses :func:`assign_to_centroids` and :func:`partition_table` (Algorithm 1) per table and
:func:`flatten_partitions` to lay the result out as the index expects it.
"""
from .centroids import assign_to_centroids, kmeans
from .compact import CompactIndex
from .depq import DEPQ
from .matching import Matching, match_similarities, similarity_matrix, unionability
from .partitioning import Partition, PartitionArrays, flatten_partitions, partition_lake, partition_table
from .results import SearchStats, UnionResult, UnionSearch
from .search import METHODS, UnionIndex

__all__ = [
    "CompactIndex", "DEPQ", "METHODS", "Matching", "Partition", "PartitionArrays", "SearchStats", "UnionIndex",
    "UnionResult", "UnionSearch", "assign_to_centroids", "flatten_partitions", "kmeans", "match_similarities",
    "partition_lake", "partition_table", "similarity_matrix", "unionability",
]
