"""Arrow's memory pool of a process that answers queries: the system allocator, chosen before pyarrow is imported.

Arrow's default pool, mimalloc, keeps the segments a read freed, per thread, for later allocations: a cold text join
on the sample lake read its index rows (a few MB of Parquet decoded by Arrow's reader threads) and stayed 40 to 70
MB above the rows themselves, which ``release_unused`` did not give back.  A query process reads each index once and
then computes in numpy, so it gains nothing from those kept segments; the system allocator returns freed pages
(``release_unused`` trims its heap).  Measured on the sample lake, cold CLI, CPU seconds within noise: text join peak
RSS 386 -> 324 MB, n-ary 237 -> 204 MB, union 191 -> 184 MB (``benchmarks/startup.py``).

Arrow reads ``ARROW_DEFAULT_MEMORY_POOL`` once, when pyarrow is first imported (``pa.set_memory_pool`` changes only
the pool of pyarrow's own Python calls, not that of its readers), so the choice is made there or not at all: a
process that imported pyarrow earlier, or whose environment names a pool, keeps its pool.  The variable is set only
around that import, so the processes this one starts (Spark's, with their own long-lived readers) keep Arrow's
default.
"""
from __future__ import annotations

import os
import sys

_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def use_query_pool() -> None:
    """Import pyarrow with the system allocator as its default pool, unless pyarrow is loaded or a pool is named."""
    if "pyarrow" in sys.modules or os.environ.get(_VARIABLE):
        return
    os.environ[_VARIABLE] = "system"
    try:
        import pyarrow

        pyarrow.default_memory_pool()
    finally:
        del os.environ[_VARIABLE]
