"""Generated lakes of clustered column vectors, for scale benchmarks and property tests (no text involved).

A lake has ``n_domains`` semantic domains (random unit centres) grouped into ``n_topics`` topics of
``domains_per_topic`` domains.  A table picks a topic and draws 3..``max_columns`` distinct domains from it (with
probability ``stray`` a column comes from any domain instead); a column vector is its domain centre plus isotropic
Gaussian noise of a per-column scale drawn from ``noise``, normalised.  Tables of a topic are therefore unionable to
a degree that varies with how many domains they share and how noisy their columns are, which gives Definition 5
scores a continuous spread.  A table vector is the normalised mean of its column vectors.

:func:`build_index_inputs` plays the production centroid stage on such a lake (:func:`partition_lake`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from discovery.indexes.union.partitioning import DEFAULT_RHO_H, DEFAULT_RHO_L, PartitionArrays, partition_lake


@dataclass(frozen=True)
class SyntheticLake:
    column_vectors: np.ndarray  # float32 (n, d), unit rows
    column_table_ids: np.ndarray  # int64 (n,)
    column_ordinals: np.ndarray  # int64 (n,)
    table_vectors: np.ndarray  # float32 (t, d), row i for table id i


@dataclass(frozen=True)
class LakeModel:
    """The hidden structure tables are drawn from; queries drawn from the same model resemble lake tables."""

    domains: np.ndarray  # (n_domains, d) unit centres
    topics: np.ndarray  # (n_topics, domains_per_topic) domain ids
    max_columns: int
    noise: tuple[float, float]
    stray: float


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def lake_model(dim: int, n_domains: int, n_topics: int, domains_per_topic: int, *, max_columns: int = 12,
               noise: tuple[float, float] = (0.15, 0.5), stray: float = 0.1, seed: int = 0) -> LakeModel:
    """Random domains and topics."""
    rng = np.random.default_rng(seed)
    domains = _unit(rng.standard_normal((n_domains, dim)))
    topics = np.stack([rng.choice(n_domains, size=domains_per_topic, replace=False) for _ in range(n_topics)])
    return LakeModel(domains, topics, max_columns, noise, stray)


def draw_tables(model: LakeModel, n_tables: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(column vectors float32 (n, d), owning table 0..n_tables-1, ordinal) of ``n_tables`` fresh tables."""
    rng = np.random.default_rng(seed)
    n_domains, dim = model.domains.shape
    per_topic = model.topics.shape[1]
    sizes = rng.integers(3, min(model.max_columns, per_topic) + 1, size=n_tables)
    topic = rng.integers(len(model.topics), size=n_tables)
    owner = np.repeat(np.arange(n_tables), sizes)
    ordinal = np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    # distinct domains of the topic per table: a random permutation rank per (table, topic slot)
    ranks = np.argsort(rng.random((n_tables, per_topic)), axis=1)
    domain = model.topics[topic[owner], ranks[owner, ordinal]]
    stray = rng.random(len(owner)) < model.stray
    domain[stray] = rng.integers(n_domains, size=int(stray.sum()))
    scale = rng.uniform(*model.noise, size=(len(owner), 1)) / np.sqrt(dim)
    vectors = _unit(model.domains[domain] + scale * rng.standard_normal((len(owner), dim)))
    return vectors.astype(np.float32), owner.astype(np.int64), ordinal.astype(np.int64)


def table_vectors_of(vectors: np.ndarray, owner: np.ndarray, n_tables: int) -> np.ndarray:
    """Normalised mean column vector of every table."""
    sums = np.zeros((n_tables, vectors.shape[1]))
    np.add.at(sums, owner, vectors)
    return _unit(sums).astype(np.float32)


def generate_lake(model: LakeModel, n_tables: int, seed: int = 1) -> SyntheticLake:
    """A lake of ``n_tables`` tables with ids 0..n_tables-1."""
    vectors, owner, ordinal = draw_tables(model, n_tables, seed)
    return SyntheticLake(vectors, owner, ordinal, table_vectors_of(vectors, owner, n_tables))


def build_index_inputs(lake: SyntheticLake, n_centroids: int | None = None, *, sample: int = 100_000,
                       rho_l: float = DEFAULT_RHO_L, rho_h: float = DEFAULT_RHO_H,
                       seed: int = 0) -> tuple[np.ndarray, PartitionArrays]:
    """Centroids (k-means on a sample; default k = sqrt(#columns)) and Algorithm 1 partitions of every table."""
    return partition_lake(lake.column_vectors, lake.column_table_ids, lake.column_ordinals, n_centroids,
                          sample=sample, rho_l=rho_l, rho_h=rho_h, seed=seed)
