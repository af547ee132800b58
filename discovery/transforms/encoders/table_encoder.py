"""TACTUS table encoder (§4): attentive pooling of column vectors, trained contrastively on the lake itself.

Model (§4.2): a learnable query attends over the table's column vectors with multi-head attention (Eq. 5, keys and
values are the column vectors), and a two-layer MLP with ReLU maps the result to the table embedding (Eq. 6),
L2-normalised so that cosine similarity is the table-level unionability mu_T.  Column vectors come from a column
encoder (the hash encoder by default) instead of BERT [CLS] states: no model may be downloaded, and the column
encoder already implements §4.2's priority sampling of values.  Attention without positional encoding makes the table
vector independent of column order, as unionability is.

Training (§4.1, §4.3, Algorithm 1): per epoch the lake is split into random batches of N tables; each table yields a
row-sampled original and a positive with sampled rows *and* columns (shuffling the positive's rows, which the paper
does for diversity, is a no-op here because column vectors are frequency-weighted means); the 2N embeddings give, for
every anchor, the latent positives (mu_T > gamma, Eq. 1), which are excluded, and the top half of the remaining tables
by mu_T as hard negatives (Eq. 2); the loss is Eq. 3 averaged over the 2N anchors (Eq. 4), optimised with Adam.

Choices the paper leaves open, and why:
* Eq. 3 is implemented as printed, with only the hard negatives in the denominator.  An anchor whose negatives were
  all excluded as latent positives has no contrast and is left out of that batch's mean rather than given an
  undefined loss.
* "Top half" keeps ceil(|N_rem| / 2) tables, so a single remaining negative is still used.
* Row and column fractions are drawn uniformly from ``row_fraction`` / ``column_fraction`` per table and pair (the
  paper says "a proportion"); at least one column is kept.
* Training re-encodes row subsets from each table's value vectors, computed once per table (the column vector of a
  subset is Eq. 7 over the subset's rows, exactly what encoding the subset from scratch gives).  Tables are capped at
  ``max_rows`` rows (a deterministic prefix) to bound that work on large lakes.
* Column vectors are scaled by sqrt(dim) before attention: unit vectors have entries of about 1/sqrt(dim), far
  below the unit scale the linear layers are initialised for, and at that scale the MLP biases dominate so every
  table starts with mu_T > 0.99, which makes every table a latent positive (Eq. 1) and leaves nothing to train on.
Inference runs in numpy with fixed-order float64 reductions (see :mod:`.deterministic`).
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from .base import Encoder, encoder_from_bytes
from .columns import NUMERIC_KINDS, ColumnProfile, parse_numbers, priority_sample_of, priority_weights, profile_column
from .deterministic import matmul, unit
from .hash_encoder import HashEncoder


@dataclass(frozen=True)
class TableEncoderConfig:
    """Model and training parameters of the TACTUS table encoder (paper defaults where it gives them).

    Training stops when the loss on held-out tables stops falling: ``holdout`` of the tables (at most
    ``holdout_max``) are kept out of training, their original and positive views drawn once, and after every epoch
    the loss of Eq. 4 over them (in batches of ``batch_size``) is computed; after ``patience`` epochs without a fall
    of ``min_improvement`` times the best loss (in magnitude) below it, training ends.  A lake with fewer than
    ``holdout_min`` held-out tables trains on all of them for ``epochs`` epochs.  The held-out views have their own
    generator, so a model stopped after n steps is the model trained with ``max_steps = n``.
    """

    out_dim: int = 128
    heads: int = 4
    hidden: int = 256
    epochs: int = 20
    max_steps: int = 0
    batch_size: int = 64
    lr: float = 1e-3
    temperature: float = 0.07
    gamma: float = 0.9
    row_fraction: tuple[float, float] = (0.5, 0.9)
    column_fraction: tuple[float, float] = (0.5, 1.0)
    max_rows: int = 1000
    holdout: float = 0.1
    holdout_max: int = 128
    holdout_min: int = 32
    patience: int = 3
    min_improvement: float = 0.01
    seed: int = 0
    threads: int = 1


Column: TypeAlias = pa.Array | pa.ChunkedArray | list
RawTable: TypeAlias = list[Column]


class TableEncoder(Encoder):
    """Column encoder for values and columns, attentive pooling (Eq. 5-6) for tables."""

    kind = "table"

    def __init__(self, base: Encoder, config: TableEncoderConfig, weights: dict[str, np.ndarray]):
        super().__init__(base.dim, base.column)
        self.base = base
        self.config = config
        self.weights = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
        self._w64 = {k: v.astype(np.float64) for k, v in self.weights.items()}

    def _state(self) -> tuple[dict, dict[str, np.ndarray]]:
        arrays = dict(self.weights)
        arrays["base"] = np.frombuffer(self.base.to_bytes(), dtype=np.uint8)
        return {"table": asdict(self.config)}, arrays

    @classmethod
    def from_state(cls, config: dict, arrays: dict[str, np.ndarray]) -> TableEncoder:
        cfg = dict(config["table"])
        cfg["row_fraction"] = tuple(cfg["row_fraction"])
        cfg["column_fraction"] = tuple(cfg["column_fraction"])
        weights = {k: v for k, v in arrays.items() if k != "base"}
        return cls(encoder_from_bytes(arrays["base"].tobytes()), TableEncoderConfig(**cfg), weights)

    def encode_values(self, values: list[str] | pa.Array) -> np.ndarray:
        return self.base.encode_values(values)

    def column_vector(self, values, counts, kind, value_vectors=None, header=None, numbers=None) -> np.ndarray:
        return self.base.column_vector(values, counts, kind, value_vectors, header, numbers)

    @property
    def table_dim(self) -> int:
        return self.config.out_dim

    def encode_table(self, column_vectors: np.ndarray) -> np.ndarray:
        """Table embedding (out_dim,) from the table's column vectors (c, dim), c >= 1."""
        cols = np.asarray(column_vectors, dtype=np.float64).reshape(-1, self.column_dim) * math.sqrt(self.column_dim)
        if cols.shape[0] == 0:
            return np.zeros(self.config.out_dim, dtype=np.float32)
        w, d, h = self._w64, self.column_dim, self.config.heads
        dh = d // h
        wq, wk, wv = w["in_proj_weight"][:d], w["in_proj_weight"][d:2 * d], w["in_proj_weight"][2 * d:]
        bq, bk, bv = w["in_proj_bias"][:d], w["in_proj_bias"][d:2 * d], w["in_proj_bias"][2 * d:]
        q = (matmul(w["query"].reshape(1, d), wq.T) + bq).reshape(h, dh)
        k = (matmul(cols, wk.T) + bk).reshape(-1, h, dh)
        v = (matmul(cols, wv.T) + bv).reshape(-1, h, dh)
        scores = np.einsum("hk,chk->hc", q, k, optimize=False) / math.sqrt(dh)
        scores = np.exp(scores - scores.max(axis=1, keepdims=True))
        attn = scores / np.add.reduce(scores, axis=1, keepdims=True)
        z = np.einsum("hc,chk->hk", attn, v, optimize=False).reshape(1, d)
        z = matmul(z, w["out_proj_weight"].T) + w["out_proj_bias"]
        hidden = np.maximum(matmul(z, w["w1"]) + w["b1"], 0.0)
        out = matmul(hidden, w["w2"]) + w["b2"]
        return unit(out[0]).astype(np.float32)


@dataclass(frozen=True)
class _PreparedColumn:
    profile: ColumnProfile
    vectors: np.ndarray
    kind: str
    header: np.ndarray | None   # the name's header-channel vector (None: channel off)
    priority: np.ndarray | None  # priority_weights of the values, when there are more than a sample holds
    numbers: np.ndarray | None   # parse_numbers of the values of a numeric column


class PreparedTable:
    """A table's columns with every distinct value encoded once, for cheap re-encoding of row/column subsets.

    Build many at once with :func:`prepare_tables`, which encodes the union of all distinct values in one pass.
    """

    def __init__(self, encoder: Encoder, rows: int, columns: list[_PreparedColumn]):
        self.encoder = encoder
        self.rows = rows
        self.columns = columns

    def column_vectors(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """Column vectors (len(columns), dim) of the sub-table made of the given rows and columns."""
        out = np.zeros((len(columns), self.encoder.column_dim), dtype=np.float32)
        for j, c in enumerate(columns):
            col = self.columns[c]
            codes = col.profile.row_codes[rows[rows < col.profile.row_codes.size]]
            counts = np.bincount(codes[codes >= 0], minlength=len(col.profile.values)).astype(np.float64)
            present = np.flatnonzero(counts)
            chosen = present if col.priority is None else present[
                priority_sample_of(col.priority[present], counts[present], self.encoder.column.max_values)]
            out[j] = self.encoder.column_vector([col.profile.values[i] for i in chosen], counts[chosen], col.kind,
                                                col.vectors[chosen], col.header,
                                                None if col.numbers is None else col.numbers[chosen])
        return out


def prepare_tables(encoder: Encoder, tables: list[RawTable], kinds: list[list[str]] | None,
                   max_rows: int, names: list[list[str]] | None = None) -> list[PreparedTable]:
    """Profile every column (first ``max_rows`` rows) and encode all distinct values of all tables in one batch;
    ``names`` (column names per table, for the header channel) default to none."""
    shapes, profiles = [], []
    for table in tables:
        arrays = [col if isinstance(col, (pa.Array, pa.ChunkedArray)) else pa.array(
            [None if v is None else str(v) for v in col], type=pa.string()) for col in table]
        rows = min(max_rows, max((len(a) for a in arrays), default=0))
        shapes.append(rows)
        profiles.append([profile_column(a.slice(0, rows)) for a in arrays])
    distinct = sorted({v for cols in profiles for p in cols for v in p.values})
    position = {v: i for i, v in enumerate(distinct)}
    vectors = encoder.encode_values(distinct)
    prepared = []
    for i, (rows, cols) in enumerate(zip(shapes, profiles)):
        table_kinds = kinds[i] if kinds else ["string"] * len(cols)
        table_names: list[str | None] = list(names[i]) if names else [None] * len(cols)
        headers = encoder.header_vectors(table_names)
        sample = encoder.column.max_values
        columns = [_PreparedColumn(p, vectors[[position[v] for v in p.values]].reshape(-1, encoder.dim), k,
                                   None if headers is None else headers[j],
                                   priority_weights(p.values) if len(p.values) > sample else None,
                                   parse_numbers(p.values) if k in NUMERIC_KINDS else None)
                   for j, (p, k) in enumerate(zip(cols, table_kinds))]
        prepared.append(PreparedTable(encoder, rows, columns))
    return prepared


def two_pronged_loss(emb, partner, gamma: float, temperature: float):
    """Eq. 1-4: exclude latent positives (> gamma), keep the top half of the rest as hard negatives, InfoNCE."""
    import torch

    n = emb.shape[0]
    sim = emb @ emb.T
    with torch.no_grad():
        s = sim.detach()
        idx = torch.arange(n)
        rem = torch.ones(n, n, dtype=torch.bool)
        rem[idx, idx] = False
        rem[idx, partner] = False
        rem &= ~(s > gamma)
        keep = (rem.sum(dim=1) + 1) // 2
        ranked = torch.where(rem, s, torch.full_like(s, -math.inf))
        order = ranked.argsort(dim=1, descending=True, stable=True)
        rank = torch.empty_like(order)
        rank.scatter_(1, order, idx.expand(n, n).contiguous())
        hard = rem & (rank < keep[:, None])
        valid = hard.any(dim=1)
    logits = sim / temperature
    negatives = torch.logsumexp(logits.masked_fill(~hard, -math.inf), dim=1)
    per_anchor = negatives - logits[idx, partner]
    if not bool(valid.any()):
        return None
    return per_anchor[valid].mean()


def train_table_encoder(tables: list[RawTable], column_encoder: Encoder | None = None,
                        config: TableEncoderConfig = TableEncoderConfig(),
                        kinds: list[list[str]] | None = None,
                        names: list[list[str]] | None = None,
                        stop: Callable[[int], bool] | None = None,
                        on_check: Callable[[int, float], None] | None = None) -> TableEncoder:
    """Train the TACTUS table encoder on raw lake tables (each a list of columns of cells), Algorithm 1.

    ``kinds`` gives each column's inferred type ("string", "int", ...; default "string"), ``names`` each column's
    name (for the column encoder's header channel; default none).  Seeded; bounded by
    ``config.epochs``, if positive ``config.max_steps``, and ``stop(steps_done)`` asked after every batch (a time
    budget); uses ``config.threads`` torch threads and restores the caller's setting afterwards.  ``on_check(steps,
    held-out loss)`` is called at every held-out check (before each epoch).
    """
    import torch

    from .optim import Adam

    encoder = column_encoder or HashEncoder()
    usable = [i for i, t in enumerate(tables) if len(t) > 0]
    if len(usable) < 2:
        raise ValueError("train_table_encoder needs at least two tables with columns")
    if encoder.column_dim % config.heads:
        raise ValueError(f"column dimension {encoder.column_dim} is not divisible by {config.heads} heads")
    prepared = prepare_tables(encoder, [tables[i] for i in usable], [kinds[i] for i in usable] if kinds else None,
                              config.max_rows, [names[i] for i in usable] if names else None)
    held_rng = random.Random(config.seed ^ 0x7AB1)  # its own draws: the training's stay those of max_steps = n
    held = set(held_rng.sample(range(len(prepared)), held_out_tables(config, len(prepared))))
    held_views = [_view(prepared[i], np.random.Generator(np.random.PCG64([config.seed, i])), config, positive)
                  for positive in (False, True) for i in sorted(held)]
    prepared = [t for i, t in enumerate(prepared) if i not in held]
    rng = np.random.Generator(np.random.PCG64(config.seed))
    order_rng = random.Random(config.seed)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        torch.manual_seed(config.seed)
        model = _attentive_table_model(encoder.column_dim, config)
        opt = Adam(model.parameters(), lr=config.lr)
        steps = 0
        losses: list[float] = []
        for _ in range(config.epochs):
            if held_views:
                loss = _held_loss(model, held_views, config)
                if on_check is not None:
                    on_check(steps, loss)
                if _flat(losses, loss, config):
                    break
            order = list(range(len(prepared)))
            order_rng.shuffle(order)
            for start in range(0, len(order), config.batch_size):
                batch = [prepared[i] for i in order[start:start + config.batch_size]]
                if len(batch) < 2:
                    continue
                views = [_view(t, rng, config, positive=False) for t in batch]
                views += [_view(t, rng, config, positive=True) for t in batch]
                n = len(batch)
                partner = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
                loss = two_pronged_loss(model(views), partner, config.gamma, config.temperature)
                if loss is not None:
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                steps += 1
                if _enough(steps, config, stop):
                    break
            if _enough(steps, config, stop):
                break
    finally:
        torch.set_num_threads(previous_threads)
    planned = table_steps(config, len(prepared))
    return TableEncoder(encoder, replace(config, max_steps=steps) if steps < planned else config, model.export())


def held_out_tables(config: TableEncoderConfig, n_tables: int) -> int:
    """Tables of ``n_tables`` kept out of training for the stopping loss (0 below ``holdout_min``)."""
    n = min(config.holdout_max, int(config.holdout * n_tables))
    return n if n >= config.holdout_min else 0


def table_steps(config: TableEncoderConfig, n_tables: int) -> int:
    """Batches :func:`train_table_encoder` runs over ``n_tables`` training tables (batches of one are skipped)."""
    per_epoch = n_tables // config.batch_size + (1 if n_tables % config.batch_size >= 2 else 0)
    steps = config.epochs * per_epoch
    return min(steps, config.max_steps) if config.max_steps else steps


def _held_loss(model, views: list[np.ndarray], config: TableEncoderConfig) -> float:
    """Eq. 4 over the held-out tables' views (originals, then positives), in batches of about ``batch_size``."""
    import torch

    n = len(views) // 2
    chunks = np.array_split(np.arange(n), max(1, round(n / config.batch_size)))
    out = []
    with torch.no_grad():
        for c in chunks:
            m = len(c)
            partner = torch.cat([torch.arange(m, 2 * m), torch.arange(0, m)])
            loss = two_pronged_loss(model([views[i] for i in c] + [views[n + i] for i in c]), partner,
                                     config.gamma, config.temperature)
            if loss is not None:
                out.append(loss.item())
    return float(np.mean(out)) if out else float("inf")


def _flat(losses: list[float], loss: float, config: TableEncoderConfig) -> bool:
    """Record ``loss``; True when none of the last ``patience`` losses fell ``min_improvement`` below the best
    before them."""
    losses.append(loss)
    best, since = losses[0], 0
    for value in losses[1:]:
        if value < best - config.min_improvement * abs(best) or best == float("inf"):  # Eq. 4 may fall below 0
            best, since = value, 0
        else:
            since += 1
    return since >= config.patience


def _enough(steps: int, config: TableEncoderConfig, stop: Callable[[int], bool] | None) -> bool:
    """Training ends at ``config.max_steps`` (if positive) or when ``stop(steps_done)`` says so (a time budget)."""
    return bool(config.max_steps and steps >= config.max_steps) or (stop is not None and stop(steps))


def _view(table: PreparedTable, rng: np.random.Generator, config: TableEncoderConfig, positive: bool) -> np.ndarray:
    """Column vectors of a row-sampled original (all columns) or a row- and column-sampled positive."""
    n_rows = max(table.rows, 1)
    rows = np.sort(rng.choice(n_rows, max(1, round(n_rows * rng.uniform(*config.row_fraction))), replace=False))
    n_cols = len(table.columns)
    if positive:
        keep = max(1, round(n_cols * rng.uniform(*config.column_fraction)))
        columns = np.sort(rng.choice(n_cols, keep, replace=False))
    else:
        columns = np.arange(n_cols)
    return table.column_vectors(rows, columns)


def _attentive_table_model(dim: int, config: TableEncoderConfig):
    """The torch module of Eq. 5-6, built lazily so that importing this module does not import torch."""
    import torch
    import torch.nn.functional as F

    class AttentiveTableModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.query = torch.nn.Parameter(torch.randn(1, 1, dim) / math.sqrt(dim))
            self.attn = torch.nn.MultiheadAttention(dim, config.heads, batch_first=True)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, config.hidden), torch.nn.ReLU(),
                                           torch.nn.Linear(config.hidden, config.out_dim))

        def forward(self, views: list[np.ndarray]):
            width = max(v.shape[0] for v in views)
            cols = torch.zeros(len(views), width, dim)
            pad = torch.ones(len(views), width, dtype=torch.bool)
            for i, v in enumerate(views):
                cols[i, : v.shape[0]] = torch.from_numpy(v) * math.sqrt(dim)
                pad[i, : v.shape[0]] = False
            z, _ = self.attn(self.query.expand(len(views), -1, -1), cols, cols, key_padding_mask=pad,
                             need_weights=False)
            return F.normalize(self.mlp(z[:, 0]), dim=1)

        def export(self) -> dict[str, np.ndarray]:
            def get(t):
                return t.detach().numpy().copy()

            return {
                "query": get(self.query).reshape(-1),
                "in_proj_weight": get(self.attn.in_proj_weight), "in_proj_bias": get(self.attn.in_proj_bias),
                "out_proj_weight": get(self.attn.out_proj.weight), "out_proj_bias": get(self.attn.out_proj.bias),
                "w1": get(self.mlp[0].weight).T, "b1": get(self.mlp[0].bias),
                "w2": get(self.mlp[2].weight).T, "b2": get(self.mlp[2].bias),
            }

    return AttentiveTableModel()
