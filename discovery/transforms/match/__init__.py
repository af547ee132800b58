"""Two-table matching: which value of one column names the same entity as a value of another, and how sure that is.

The join search finds a joinable lake column; writing the join pairs the two columns' values with
:func:`match_values` (:mod:`.matcher`), which blocks, measures and chooses its configuration per column pair for a
stated precision target without labels; a join on several query columns (``first``, ``last``) pairs their rows
with :func:`match_rows`, which also learns string programs (:mod:`.programs`).  Once paired, the rows' other
columns can refuse a pair (:mod:`.evidence`).  The lake column may be held in this process or by a Spark job
(:mod:`.sides`, :mod:`.distributed`), with the same pairs.
"""
from .matcher import Matches, match_rows, match_values

__all__ = ["Matches", "match_rows", "match_values"]
