"""The ``join`` value encoder: a small contrastive model trained on the lake's own distinct values (torch, CPU).

Hashed character n-grams put real fuzzy matches far apart (AutoFJ's true pairs sit at a median 0.77 of the maximum
distance), so PEXESO's tau of 6 % would find almost none.  This encoder learns, from the lake alone, which spelling
differences do not matter: positives are a value and its realistic variations (:mod:`.variations`), and pairs of
the lake's own values that an independent lexical scorer finds to be two spellings of one entity (:mod:`.mined`);
negatives are the other values of the batch (InfoNCE), among them near duplicates that share a column and so name
different entities (:func:`.mined.mine_negatives`).  The result puts true matches within tau and unrelated
values far away.  Dates, years and numeric spans written in cells get one canonical form first (:mod:`.spans`,
``spans`` in the config).  Names written "last, first" are turned around before hashing
(:func:`.canonical.reorder_names`),
so "Obama, Barack" and "Barack Obama" share every feature.

Architecture: punctuation that spellings disagree on is dropped (:func:`strip_punctuation`), then hashed word tokens
and character n-grams (qualifiers in their own namespace, :mod:`.ngrams`) -> an embedding bag, a mean weighted by a
learned per-bucket *importance* -> a two-layer MLP -> L2-normalised ``dim`` vector.  The importance lets the model
learn what TF-IDF knows (generic words such as "season" or "(politician)" may come and go, a rare name may not)
without tying it to embedding norms.  Training runs in torch (:mod:`.join_training`); inference runs in numpy with
the fixed-order reductions of :mod:`.deterministic`, so vectors are bit-identical across processes and do not need
torch at query time.
"""
from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa

from .base import ColumnConfig, Encoder
from .canonical import reorder_names
from .deterministic import matmul, segment_sum, unit
from .hash_encoder import prepare_strings
from .ngrams import extract_features

_CHUNK = 8192
_APOSTROPHE = re.compile(r"['\u2019`]|(?<=\d),(?=\d{3})")
_SEPARATOR = re.compile(r"[^\w\s(),\n]+")
_SPACES = re.compile(r"[ \t]{2,}")
_EDGES = re.compile(r"^ +| +$", re.MULTILINE)


@dataclass(frozen=True)
class JoinEncoderConfig:
    """Model and training parameters; model parameters enter the version through the weights' header.

    The target geometry is extreme: positives within distance 0.12 (cosine 0.993) while unrelated values stay
    apart.  InfoNCE alone barely distinguishes distances at that scale (a cosine gap of 0.007 is 0.35 in logits at
    temperature 0.02), so two direct terms are added: ``alignment_weight`` times the mean squared distance of the
    positive pairs, and ``margin_weight`` times the mean squared hinge ``max(0, margin - distance)`` over the
    in-batch negative pairs, which keeps unrelated values outside tau.  ``steps`` bounds training time (about 0.1 s
    per step of ``batch_size`` 512 on one thread; 1000 steps are a few passes over a lake of 165k distinct values).

    Measured choices on AutoFJ: a hinge on the positive distance (pull only the positives above a target such as
    0.04) instead of the mean squared distance, a wider negative margin (0.6-0.8), a heavier word weight and an
    importance initialised from the lake's inverse document frequencies all ranked true matches worse against random
    pairs, so none of them is used.  Neither did 3000 steps, a unit-normalised n-gram bag, batches drawn from a few
    columns each (harder in-batch negatives) or positives mined from the lake's own cross-table mutual nearest
    neighbours: each leaves about half of the differing AutoFJ pairs closer than the 0.1 % quantile of random pairs.

    The two direct terms are what costs that ranking.  With ``alignment_weight = margin_weight = 0`` (InfoNCE
    alone) the same model ranks about 77 % of those pairs above the 0.1 % random quantile, close to TF-IDF over
    words and character 3-grams (83 %), and matches AutoFJ's values better (nearest-pair F1 0.64 against 0.49), but
    only at a tau of about 35 % of the maximum distance, because InfoNCE spreads all values evenly over the sphere:
    there Lemma 1 of PEXESO prunes almost nothing and the search costs what an exact one does
    (``benchmarks/encoders.py`` prints both geometries).  The defaults keep the tight, clustered geometry in which
    PEXESO's tau of a few percent both finds matches and prunes; the InfoNCE-only setting is one ``join_options``
    line away for lakes where match quality matters more than search time.

    ``mined_share`` of each batch are pairs of lake values mined by :func:`.mined.mine_pairs` (IDF-weighted word
    overlap, mutual best partners, equal numbers, cosine at least ``mined_similarity``), the rest generated
    variations.  The alignment term then pulls spellings that really occur together within tau, which generated
    edits alone do not reach ("2005 united kingdom general election results in scotland" / "united kingdom general
    election, 2005 (scotland)"); ``benchmarks/encoders.py`` trains the variant without them (``mined_share = 0``)
    for comparison.  Measured on AutoFJ with 250 steps each: nearest-pair F1 0.455 -> 0.472 at tau 3 % (recall
    0.33 -> 0.36) and 0.473 -> 0.491 at 4.5 %; the own left table ranked first at 3 % for 0.76 of the queries with
    them and 0.78 without (one dataset of 50), and Lemma 1 keeps as few random pairs (0.25 % against 0.29 %).  A
    gain, but far from closing the gap to the InfoNCE ranking: the mutual-best guard keeps about 14k pairs of 164k
    values, a third of them AutoFJ ground-truth pairs.

    Same-column hard negatives: ``hard_share`` of each batch are pairs of distinct values of one column that are
    lexically closest there, at word cosine at least ``hard_similarity`` (:func:`.mined.mine_negatives`: "1893 lsu
    football team" / "1894 lsu football team"), both taken as anchors, and ``hard_weight`` times the mean squared hinge
    ``max(0, hard_margin - distance)`` over
    those pairs pushes them apart.  In-batch negatives drawn from the whole lake are almost never that close, yet
    they are what a nearest match must tell apart.  This needs the column of each training value
    (``train_join_encoder(..., columns=...)``); without columns none are mined.

    ``number_negatives`` adds to them the values of one column that carry the same numbers under other words
    (:func:`.mined.mine_number_negatives`: "2012 korea open" / "2012 king's cup"): every positive agrees on its
    numbers, so without them equal numbers alone pull values within tau.  Measured through the real pipeline
    (``benchmarks/join.py --autofj``, 1,500 steps each, 2026-11-27), without / with them: the own left table first
    among the left tables 45 / 47 of 50 (the misses were broader tables matching a query value more, through such
    pairs), best-match P / R / F1 0.838 / 0.528 / 0.648 against 0.847 / 0.520 / 0.644, PEXESO's distance
    computations 3.8M / 1.9M (Lemma 1 keeps 0.75 % / 0.40 % of all pairs), pexeso : exact CPU 5.0x / 6.0x.

    Measured on AutoFJ, 300 steps per variant (a scratch harness training on the 100 tables' titles, on a loaded
    machine), at tau 3 % / 4.5 %: nearest-pair precision / recall / F1, the own left table ranked first among the
    other 99 columns, and the share of random pairs that 5 random pivots leave to verify (Lemma 1).  "hard" is a
    hard share 0.25, hard margin 0.2, hard weight 100:

    variant                                  P / R / F1 at 3 %    top-1   pivots   F1 4.5 %  pivots
    previous defaults (T 0.05, mined 0.25)   0.709 / 0.377 / 0.492  0.78   0.75 %   0.510     3.36 %
    temperature 0.02 (mined 0.25, no hard)   0.876 / 0.367 / 0.518  0.78   0.77 %   0.592     3.86 %
    temperature 0.01 (mined 0.25, no hard)   0.920 / 0.376 / 0.534  0.78   2.17 %   0.614     10.0 %
    temperature 0.02, mined 0.5              0.895 / 0.365 / 0.519  0.80   0.67 %   0.605     3.54 %
    the same and hard (the defaults)         0.941 / 0.329 / 0.487  0.78   0.56 %   0.610     3.06 %
    hard in the batch, no hinge, T 0.05      0.727 / 0.362 / 0.484  0.76   1.13 %   0.515     4.59 %
    defaults, margin weight 300              0.955 / 0.325 / 0.485  0.78   0.67 %   0.603     3.64 %
    defaults, hard margin 0.3, weight 300    0.986 / 0.237 / 0.382  0.76   1.04 %   0.526     5.39 %
    T 0.02, mined 0.5, alignment weight 300  0.562 / 0.439 / 0.493  0.78   1.63 %   0.475     5.56 %
    alignment and margin weights 10, T 0.05  0.989 / 0.173 / 0.295  0.70   0.09 %   0.385     0.52 %

    A lower temperature and the hard negatives rank better: of the right values matched within tau 9 %, the nearest
    left value is the right one for 0.67 with the defaults against 0.48 before (the nearest value by TF-IDF over
    words and character 3-grams: 0.67 of all right values), and precision within tau rises from 0.71 to 0.94 at
    3 %.  What they do not change is the trade between recall and pruning: at an equal share left by the pivots, F1
    stays within a few points across variants.  Through the real pipeline (``benchmarks/join.py --autofj``, where a
    loaded machine's training budget cut training to 750 steps) best-match F1 is 0.567 at tau 3 % (0.559 before,
    with 1,500 steps), 0.609 at 3.5 %, where PEXESO computes as many distances as it did at 3 % before, and 0.652 at
    4.5 %.

    Training stops when the held-out loss stops falling (:class:`~.join_training.HeldOut`): ``holdout`` of the
    distinct values (at most ``holdout_max``) are kept out of the anchors, their positive pairs drawn once, and every
    ``check_every`` steps the loss above (InfoNCE, alignment and margin terms, in batches of ``batch_size``) is
    computed on them; after ``patience`` checks without a fall of ``min_improvement`` times the best loss below it,
    training ends.  A lake with fewer than ``holdout_min`` held-out values keeps them all for training and trains the
    steps its epochs allow (``join_epochs``).  The held-out pairs are drawn from their own generator, so a model
    stopped at step n is the model trained with ``steps = n``.  The rule is a plateau of 300 steps, not a slowing: on
    AutoFJ and fivethirtyeight the held-out loss still fell 1-2% per 100 steps at 1,500 steps, and AutoFJ's
    nearest-pair F1 at tau 4% rose with it (0.56 at 200 steps, 0.62 at 500, 0.65 at 900, 0.66 at 1,200;
    ``benchmarks/training.py``): checks every 25 steps with a patience of 4 would have stopped there at 700 steps, 0.03
    below.
    """

    dim: int = 48
    embed_dim: int = 96
    hidden: int = 192
    buckets: int = 1 << 18
    ngram_sizes: tuple[int, ...] = (2, 3, 4)
    word_weight: float = 2.0
    canonicalize: bool = True
    spans: bool = True
    reorder_names: bool = True
    steps: int = 1000
    batch_size: int = 512
    lr: float = 1e-2
    temperature: float = 0.02
    alignment_weight: float = 100.0
    margin: float = 0.4
    margin_weight: float = 100.0
    max_variations: int = 2
    mined_share: float = 0.5
    mined_similarity: float = 0.6
    hard_share: float = 0.25
    hard_similarity: float = 0.3
    hard_margin: float = 0.2
    hard_weight: float = 100.0
    number_negatives: bool = True
    holdout: float = 0.05
    holdout_max: int = 2048
    holdout_min: int = 128
    check_every: int = 50
    patience: int = 6
    min_improvement: float = 0.01
    seed: int = 0
    threads: int = 1


class JoinEncoder(Encoder):
    """Trained value encoder for semantic joins; see the module docstring."""

    kind = "join"

    def __init__(self, config: JoinEncoderConfig, weights: dict[str, np.ndarray],
                 column: ColumnConfig = ColumnConfig()):
        super().__init__(config.dim, column)
        self.config = config
        self.weights = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
        self._w64 = {k: v.astype(np.float64) for k, v in self.weights.items() if k not in ("embedding", "importance")}

    def _state(self) -> tuple[dict, dict[str, np.ndarray]]:
        return {"join": asdict(self.config)}, self.weights

    @classmethod
    def from_state(cls, config: dict, arrays: dict[str, np.ndarray]) -> JoinEncoder:
        cfg = dict(config["join"])
        cfg["ngram_sizes"] = tuple(cfg["ngram_sizes"])
        cfg.setdefault("reorder_names", False)  # models stored before the rule existed encode without it
        cfg.setdefault("spans", False)  # likewise the span rules of :mod:`.spans`
        return cls(JoinEncoderConfig(**cfg), arrays, ColumnConfig(**config["column"]))

    def encode_values(self, values: list[str] | pa.Array) -> np.ndarray:
        strings = prepare_strings(values, self.config.canonicalize, self.config.spans)
        out = np.zeros((len(strings), self.dim), dtype=np.float32)
        for start in range(0, len(strings), _CHUNK):
            block = strings[start:start + _CHUNK]
            out[start:start + len(block)] = self._forward(block)
        return out

    def _forward(self, strings: list[str]) -> np.ndarray:
        ids, weights, offsets = featurize(strings, self.config)
        weights = weights * self.weights["importance"][ids]
        rows = gather_rows(self.weights["embedding"], ids).astype(np.float64) * weights[:, None]
        wsum = segment_sum(weights[:, None], offsets)
        bag = segment_sum(rows, offsets) / np.maximum(wsum, 1e-12)
        w = self._w64
        hidden = np.maximum(matmul(bag, w["w1"]) + w["b1"], 0.0)
        out = matmul(hidden, w["w2"]) + w["b2"]
        out[wsum[:, 0] == 0] = 0.0
        return unit(out).astype(np.float32)


def gather_rows(array: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``array[ids]`` of a 2-D C-contiguous array.  When the array lies in a memory-mapped file (a stored encoder's
    ``model_files`` copy, :func:`~discovery.transforms.encoders.stored.mapped_payload`), the distinct rows are read with
    positioned reads instead of through the map: the kernel maps a whole large folio around every row touched, and a
    query's few thousand rows scattered over 2^18 brought nearly all 100 MB of a join encoder into the process's
    resident memory."""
    source = _mapped_file(array)
    if source is None:
        return array[ids]
    path, start = source
    distinct, inverse = np.unique(ids, return_inverse=True)
    row_bytes = array.shape[1] * array.itemsize
    out = np.empty((len(distinct), array.shape[1]), dtype=array.dtype)
    cuts = np.flatnonzero(np.diff(distinct) != 1) + 1  # runs of consecutive rows: one read each
    with open(path, "rb", buffering=0) as fh:
        for lo, hi in zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(distinct)].tolist()):
            data = os.pread(fh.fileno(), (hi - lo) * row_bytes, start + int(distinct[lo]) * row_bytes)
            out[lo:hi] = np.frombuffer(data, dtype=array.dtype).reshape(hi - lo, -1)
    return out[inverse]


def _mapped_file(array: np.ndarray) -> tuple[str, int] | None:
    """(file, byte offset of ``array`` in it) when ``array`` is a view of a file-backed :class:`numpy.memmap`."""
    owner: object = array
    while owner is not None and not isinstance(owner, np.memmap):
        owner = owner.obj if isinstance(owner, memoryview) else getattr(owner, "base", None)
    if owner is None or owner.filename is None or not array.flags.c_contiguous:
        return None
    delta = array.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    return owner.filename, owner.offset + delta


def strip_punctuation(strings: list[str]) -> list[str]:
    """Drop the punctuation that spellings of one value disagree on, keeping the qualifier markers.

    Apostrophes and thousands separators vanish ("men's" -> "mens", "2,000" -> "2000"); hyphens, full stops,
    slashes and other marks become spaces ("anzhi-arena" -> "anzhi arena"); parentheses and commas stay, since
    :func:`extract_features` hashes the qualifier they delimit in its own namespace.  One regex pass per rule over
    the newline-joined batch.
    """
    if not strings:
        return []
    text = _APOSTROPHE.sub("", "\n".join(strings))
    text = _SEPARATOR.sub(" ", text)
    text = _SPACES.sub(" ", _EDGES.sub("", text))
    return text.split("\n")


def featurize(strings: list[str], config: JoinEncoderConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bucket ids, weights and per-value offsets of prepared strings (shared by training and inference)."""
    if config.reorder_names and strings:
        strings = reorder_names("\n".join(strings)).split("\n")
    feats = extract_features(strip_punctuation(strings), config.ngram_sizes, config.word_weight, config.seed,
                             mark_qualifiers=True)
    ids = (feats.hashes % np.uint64(config.buckets)).astype(np.int64)
    return ids, feats.weights, feats.offsets
