"""The search kinds, in one registry that the Python API, the CLI, query batches, the page and its JSON API read.

A kind is a :class:`SearchKind` (:mod:`.kind`): its parameters and their checks, its methods (the default first),
its defaults and the plan that routes a query to the service that answers it.  Adding a kind is one module of this
package defining one, and one entry of :data:`SEARCHES`: the API's :meth:`~discovery.api.Lakescout.search`, batch
specs (and so ``lakescout batch`` and the ``query_batch`` DAG), the page's form and ``POST /api/search/{kind}`` take
it from there.  ``lakescout union``, ``join`` and ``nary`` are commands of their own for their printed tables.
"""
from __future__ import annotations

from ...query.params import ParameterError, shown
from .join import JOIN
from .kind import Plan, SearchKind, limits
from .nary import NARY
from .union import UNION

#: Every search kind by name, in the order the page and messages list them.
SEARCHES: dict[str, SearchKind] = {k.name: k for k in (UNION, JOIN, NARY)}


def search_kind(name) -> SearchKind:
    """The kind named ``name``, or :class:`ParameterError` naming the kinds there are."""
    if not isinstance(name, str) or name not in SEARCHES:
        raise ParameterError("kind", f"kind must be one of {', '.join(SEARCHES)}, got {shown(name)}")
    return SEARCHES[name]


__all__ = ["SEARCHES", "Plan", "SearchKind", "limits", "search_kind"]
