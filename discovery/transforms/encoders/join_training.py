"""Training the ``join`` value encoder: the contrastive loss, the hard negatives and the held-out stopping rule.

Kept apart from :mod:`.join_encoder` because the two run in different places.  Every join query loads the encoder
and computes its vectors in numpy; training runs only in the refresh's embed stage (:mod:`.lake_training`) and needs
torch, scipy's sparse matrices (:mod:`.mined`) and the row-wise optimizers (:mod:`.optim`), all imported inside the
functions, so importing this module (the package's ``__init__`` does) loads none of them.  What training shares with
inference, the featurisation (:func:`~.join_encoder.featurize`) and the model's parameters
(:class:`~.join_encoder.JoinEncoderConfig`, which also says why each loss term is there), stays with the encoder.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from .base import ColumnConfig
from .hash_encoder import prepare_strings
from .join_encoder import JoinEncoder, JoinEncoderConfig, featurize, strip_punctuation
from .variations import LakeVocabulary, vary

if TYPE_CHECKING:
    from .mined import Words

_GATE_MIN, _GATE_MAX = -6.0, 3.0


def _importance(gate):
    """Learned per-bucket feature importance, exp of a clamped log-weight (so it stays positive and bounded)."""
    return gate.clamp(_GATE_MIN, _GATE_MAX).exp()


def _hard_negatives(stripped: list[str], at: dict[str, int], columns: list[list[str]] | None, mined: np.ndarray,
                    words: Words | None, config: JoinEncoderConfig) -> np.ndarray:
    """Same-column near duplicates (:func:`.mined.mine_negatives`) as indices of ``stripped``, minus mined positives;
    ``at`` maps a raw training value to its index."""
    from .mined import mine_negatives, mine_number_negatives

    if not columns:
        return np.zeros((0, 2), dtype=np.int64)
    groups = [np.unique(np.fromiter((at.get(v, -1) for v in c), dtype=np.int64, count=len(c))) for c in columns]
    groups = [g[g >= 0] for g in groups]
    hard = mine_negatives(stripped, groups, config.hard_similarity, words=words)
    if config.number_negatives:
        assert words is not None, "number negatives need the values' word matrix"  # train_join_encoder builds it
        hard = np.unique(np.concatenate((hard, mine_number_negatives(groups, words))), axis=0)
    if len(mined) and len(hard):
        n = np.int64(len(stripped))
        hard = hard[~np.isin(hard[:, 0] * n + hard[:, 1], mined[:, 0] * n + mined[:, 1])]
    return hard


def _pair_loss(a, b, config: JoinEncoderConfig):
    """Symmetric InfoNCE of the positive pairs (rows of ``a`` and ``b``) against the other rows, plus the alignment
    and negative-margin terms (see :class:`JoinEncoderConfig`)."""
    import torch
    import torch.nn.functional as F

    n = a.shape[0]
    labels = torch.arange(n)
    logits = a @ b.T / config.temperature
    loss = 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels))
    loss = loss + config.alignment_weight * (a - b).pow(2).sum(dim=1).mean()
    negative = (2 - 2 * a @ b.T).clamp_min(1e-12).sqrt()
    negative = negative.masked_fill(torch.eye(n, dtype=torch.bool), config.margin)
    return loss + config.margin_weight * (config.margin - negative).clamp_min(0).pow(2).mean()


class HeldOut:
    """Held-out values of a training run, their fixed positive pairs, and the rule that stops training when the
    loss on them no longer falls (see :class:`JoinEncoderConfig`)."""

    def __init__(self, prepared: list[str], vocabulary: LakeVocabulary, config: JoinEncoderConfig):
        rng = random.Random(config.seed ^ 0x4E1D)  # its own draws: the training's stay those of steps = n
        n = min(config.holdout_max, int(config.holdout * len(prepared)))
        self.config = config
        self.values = sorted(rng.sample(prepared, n)) if n >= config.holdout_min else []
        left = [vary(rng, v, vocabulary, config.max_variations) if rng.random() < 0.5 else v for v in self.values]
        right = [vary(rng, v, vocabulary, config.max_variations) for v in self.values]
        self.left = prepare_strings(left, config.canonicalize, config.spans)
        self.right = prepare_strings(right, config.canonicalize, config.spans)
        self.losses: list[tuple[int, float]] = []
        self.best = float("inf")
        self.since_best = 0

    def loss(self, encode) -> float:
        """Mean loss over the held-out pairs, in equal batches of about ``batch_size`` (no gradients)."""
        import torch

        chunks = np.array_split(np.arange(len(self.values)), max(1, round(len(self.values) / self.config.batch_size)))
        with torch.no_grad():
            return float(np.mean([_pair_loss(encode([self.left[i] for i in c]), encode([self.right[i] for i in c]),
                                              self.config).item() for c in chunks]))

    def due(self, step: int) -> bool:
        """Whether the loss is checked after ``step`` steps: every ``check_every`` steps, and before the first."""
        return bool(self.values) and step % self.config.check_every == 0

    def check(self, step: int, encode) -> bool:
        """Record the held-out loss after ``step`` steps; True when it has not fallen by ``min_improvement`` below
        its best for ``patience`` checks, which ends training."""
        loss = self.loss(encode)
        self.losses.append((step, loss))
        if not self.losses[:-1] or loss < self.best - self.config.min_improvement * abs(self.best):
            self.best, self.since_best = loss, 0
        else:
            self.since_best += 1
        return self.since_best >= self.config.patience


def train_join_encoder(values: list[str], config: JoinEncoderConfig = JoinEncoderConfig(),
                       column: ColumnConfig = ColumnConfig(), stop: Callable[[int], bool] | None = None,
                       columns: list[list[str]] | None = None,
                       on_check: Callable[[int, float, Callable[[], JoinEncoder]], None] | None = None
                       ) -> JoinEncoder:
    """Train on the lake's distinct values: (value or variation, variation) positives, in-batch negatives; loss =
    symmetric InfoNCE + alignment + negative margin + hard-negative margin (see :class:`JoinEncoderConfig`).
    ``columns`` lists the values of each lake column (raw, as ``values``): the hard negatives are mined within them.

    Seeded (Python, numpy and torch generators) and bounded by ``config.steps``; training ends earlier when the
    held-out loss stops falling (:class:`HeldOut`), and ``stop(steps_done)``, asked before every step, may end it
    earlier still (a time budget, :class:`~.lake_training.StepBudget`).  The learning rate does not depend on the
    step count, so a model stopped after n steps is the model ``steps = n`` gives, and its config says ``steps =
    n``.  ``on_check(step, held-out loss, export)`` is called at every held-out check; ``export()`` gives the model
    as it is then.  Runs with ``config.threads`` torch threads and restores the caller's setting afterwards.
    """
    import torch

    from .mined import mine_pairs, word_matrix  # scipy.sparse: training only, kept off the query path
    from torch.nn import functional as F

    from .optim import Adam, RowAdam

    spelled = prepare_strings(values, config.canonicalize, config.spans)
    prepared = sorted({s for s in spelled if s})
    if len(prepared) < 2:
        raise ValueError("train_join_encoder needs at least two distinct non-null values")
    vocabulary = LakeVocabulary.from_values(prepared)
    held = HeldOut(prepared, vocabulary, config)
    kept = set(held.values)
    pool = [v for v in prepared if v not in kept]
    rng = random.Random(config.seed)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        torch.manual_seed(config.seed)
        embedding = torch.nn.EmbeddingBag(config.buckets, config.embed_dim, mode="sum")
        torch.nn.init.normal_(embedding.weight, std=0.1)
        gate = torch.nn.Embedding(config.buckets, 1)
        torch.nn.init.zeros_(gate.weight)
        mlp = torch.nn.Sequential(torch.nn.Linear(config.embed_dim, config.hidden), torch.nn.ReLU(),
                                  torch.nn.Linear(config.hidden, config.dim))
        table, gates = embedding.weight.detach(), gate.weight.detach()  # updated row by row (RowAdam)
        opt_rows = RowAdam([table, gates], lr=config.lr)
        opt_dense = Adam(mlp.parameters(), lr=config.lr)
        batch = min(config.batch_size, len(pool))

        def bags(ids, weights, offsets, rows: torch.Tensor, row_gates: torch.Tensor) -> torch.Tensor:
            """Unit vectors of the values whose features (``ids`` into ``rows``) and weights are given."""
            n = len(offsets) - 1
            w = torch.from_numpy(weights.astype(np.float32)) * _importance(row_gates[ids][:, 0])
            bag = F.embedding_bag(ids, rows, torch.from_numpy(offsets[:-1]), mode="sum", per_sample_weights=w)
            wsum = torch.zeros(n).index_add_(0, torch.from_numpy(np.repeat(np.arange(n), np.diff(offsets))), w)
            return F.normalize(mlp(bag / wsum.clamp_min(1e-12)[:, None]), dim=1)

        def encode(strings: list[str]) -> torch.Tensor:
            ids, weights, offsets = featurize(strings, config)
            return bags(torch.from_numpy(ids), weights, offsets, table, gates)

        def export() -> JoinEncoder:
            return JoinEncoder(replace(config, steps=step), _weights(table, gates, mlp), column)

        stripped = strip_punctuation(prepared)
        words = word_matrix(stripped) if config.mined_share > 0 or config.hard_share > 0 else None
        mined = (mine_pairs(stripped, config.mined_similarity, words=words) if config.mined_share > 0
                 else np.zeros((0, 2), dtype=np.int64))
        n_mined = min(len(mined), int(config.mined_share * batch))
        index = {v: i for i, v in enumerate(prepared)}
        at = {raw: index[s] for raw, s in zip(values, spelled) if s}
        hard: np.ndarray | list[np.ndarray] = (_hard_negatives(stripped, at, columns, mined, words, config)
                                               if config.hard_share > 0 else [])
        n_hard = min(len(hard), int(config.hard_share * batch) // 2)

        def draw() -> tuple:
            """The next step's pairs, featurised: every draw of ``rng`` happens here, one batch after another."""
            anchors = rng.sample(pool, batch - n_mined - 2 * n_hard)
            anchors += [prepared[int(x)] for k in rng.sample(range(len(hard)), n_hard) for x in hard[k]]
            left = [vary(rng, v, vocabulary, config.max_variations) if rng.random() < 0.5 else v for v in anchors]
            right = [vary(rng, v, vocabulary, config.max_variations) for v in anchors]
            for k in rng.sample(range(len(mined)), n_mined):  # a mined pair, in a random direction
                one, other = (prepared[int(x)] for x in (mined[k] if rng.random() < 0.5 else mined[k][::-1]))
                left.append(one)
                right.append(vary(rng, other, vocabulary, 1) if rng.random() < 0.3 else other)
            (l_ids, l_w, l_off), (r_ids, r_w, r_off) = (
                featurize(prepare_strings(side, config.canonicalize, config.spans), config) for side in (left, right))
            used, local = np.unique(np.concatenate((l_ids, r_ids)), return_inverse=True)
            return used, local, len(l_ids), (l_w, l_off), (r_w, r_off)

        step = 0
        # the next batch is drawn and featurised in a thread while this one trains (its work is mostly numpy and
        # pyarrow, which release the GIL): the batches are the same, drawn in the same order, so the model is too
        with ThreadPoolExecutor(1, thread_name_prefix="join-batches") as ahead:
            coming = ahead.submit(draw)
            while step < config.steps and not (stop is not None and stop(step)):
                if held.due(step):
                    flat = held.check(step, encode)
                    if on_check is not None:
                        on_check(step, held.losses[-1][1], export)
                    if flat:
                        break
                used, local, n_left, (l_w, l_off), (r_w, r_off) = coming.result()
                coming = ahead.submit(draw)
                rows = torch.from_numpy(used)
                step_rows = table.index_select(0, rows).requires_grad_()  # the rows this step reads and trains
                step_gates = gates.index_select(0, rows).requires_grad_()
                positions = torch.from_numpy(local)  # every feature's row in ``rows``
                a = bags(positions[:n_left], l_w, l_off, step_rows, step_gates)
                b = bags(positions[n_left:], r_w, r_off, step_rows, step_gates)
                loss = _pair_loss(a, b, config)
                if n_hard and config.hard_weight > 0:
                    start = batch - n_mined - 2 * n_hard
                    apart = (a[start:start + 2 * n_hard:2] - a[start + 1:start + 2 * n_hard:2]).pow(2).sum(dim=1)
                    apart = apart.clamp_min(1e-12).sqrt()
                    loss = loss + config.hard_weight * (config.hard_margin - apart).clamp_min(0).pow(2).mean()
                opt_dense.zero_grad()
                loss.backward()
                opt_rows.step(rows, [step_rows.grad, step_gates.grad])
                opt_dense.step()
                step += 1
    finally:
        torch.set_num_threads(previous_threads)
    return JoinEncoder(replace(config, steps=step), _weights(table, gates, mlp, ended=True), column)


def _weights(table, gates, mlp, ended: bool = False) -> dict[str, np.ndarray]:
    """The weights as the numpy arrays :class:`JoinEncoder` computes with: copies, but for the embedding of a training
    that ``ended``, the trained table itself (nothing trains it further; a copy is 100 MB of fresh memory, time a first
    build waits for)."""
    return {
        "embedding": table.numpy() if ended else table.numpy().copy(),
        "importance": _importance(gates[:, 0]).numpy(),
        "w1": mlp[0].weight.detach().numpy().T.copy(), "b1": mlp[0].bias.detach().numpy().copy(),
        "w2": mlp[2].weight.detach().numpy().T.copy(), "b2": mlp[2].bias.detach().numpy().copy(),
    }
