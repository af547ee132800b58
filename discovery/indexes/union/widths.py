"""Table scores that weigh Definition 5 by the two tables' widths, as named options of the exact union search.

Definition 5 sums the aligned columns' similarities, so a wide lake table that aligns a few columns of a narrow query
well, and many more of its own nowhere, scores as a table of the query's own shape; on fivethirtyeight five of the
sixteen wrong first results went to one table of 1,093 columns.  A width-aware score divides the sum by a norm of
the query's width ``q`` (its column vectors) and the lake table's ``t`` (its columns in the union index):

* ``sum``: Definition 5 itself, the default.  Measured at k = 1..20 (benchmarks/README.md, "Width-weighted
  scores and the lexical term", without the term), ``max_width`` leads on UGEN-V1 (MAP@10 0.722 against 0.708) and
  ``sqrt_width`` on fivethirtyeight (0.429 against 0.390), but each costs the sample lake more than 0.01 (0.949,
  0.934 against 0.965) and neither gains on the held-out public union benchmarks, so no weighted score is a default
  that holds across lakes;
* ``max_width``: ``sum / max(q, t)``, the share of the wider table's columns that align: 1 only when both tables
  align column for column, like a Jaccard over columns;
* ``sqrt_width``: ``sum / sqrt(q t)``, the cosine form: a table twice as wide as the query pays a factor of 1.4.

Why the exact searches stay exact under them: the norm is a positive constant per lake table for a given query, so
every upper and lower bound of a table's Definition 5 score, multiplied by the table's factor, bounds its weighted
score, and pruning at the k-th weighted score stops where the weighted ranking can no longer change.  The alignment
is the one Definition 5 finds (the maximum-weight matching does not depend on the factor).  The lexical term
(:mod:`.lexical`) is added to whichever score is chosen.
"""
from __future__ import annotations

import numpy as np

#: The scores, by name; the first is the default.
SCORES = ("sum", "max_width", "sqrt_width")


def check_score(score: str) -> str:
    if score not in SCORES:
        raise ValueError(f"unknown union score {score!r}; expected one of {', '.join(SCORES)}")
    return score


def score_kind(score: str) -> str:
    """What a search reports as its ``score_kind``: "unionability" (Definition 5) or the weighted score's name."""
    return "unionability" if score == "sum" else score


def factors(score: str, query_width: int, widths: np.ndarray) -> np.ndarray | None:
    """Per lake table (``widths``: its columns), what its Definition 5 score is multiplied by; None for ``sum``."""
    check_score(score)
    if score == "sum":
        return None
    t = np.maximum(np.asarray(widths, dtype=np.float64), 1.0)
    if score == "max_width":
        return 1.0 / np.maximum(t, float(query_width))
    return 1.0 / np.sqrt(t * float(query_width))
