"""What a search kind is: its parameters with their checks, its methods (default first), its defaults, and the plan
that routes one checked query to the service answering it.

A plan is made once per search: the API, a batch and the page check the parameters (:meth:`SearchKind.check`),
resolve the query table their own way, then ask the kind for a :class:`Plan` (:meth:`SearchKind.plan`), which checks
the parameters against the table's columns, decides where the search goes (a join: text or numbers) and fills the
defaults that depend on it; running the plan answers from a snapshot.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import cast
from collections.abc import Callable

from ...config import Config
from ...query.params import DEFAULT_K, Param, ParameterError
from ...query.resolve import QueryTable


@dataclass
class Plan:
    """One search ready to run: the resolved query, the parameters it runs with, the query columns it reads and the
    service that answers it (``answer(snapshot, table, **params)``)."""

    kind: str
    table: QueryTable
    params: dict
    answer: Callable[..., dict]
    ordinals: list[int] = field(default_factory=list)
    #: Where the kind sent it, when it has more than one service (a join: ``text`` or ``numeric``).
    route: str = ""

    def run(self, snapshot) -> dict:
        return self.answer(snapshot, self.table, **self.params)


@dataclass(eq=False)
class SearchKind:
    """One kind of search.  ``parameters`` and ``methods`` are loaded from the searches' own modules on first use,
    so naming a kind (the CLI's parser, the page) imports no index code."""

    name: str
    load_parameters: Callable[[], dict[str, Param]]
    load_methods: Callable[[], tuple[str, ...]]
    #: ``make_plan(checked, table, config) -> Plan``: the checks against the query's columns, the route and its
    #: defaults (those the configuration sets read from ``config``).
    make_plan: Callable[[dict, QueryTable, Config], Plan]
    #: Checks across parameters (``T`` with ``top_k``, ``phi_r`` below ``k``), on the checked values.
    cross_check: Callable[[dict], None] = lambda checked: None

    @cached_property
    def parameters(self) -> dict[str, Param]:
        """The parameters the search takes after the query, by name."""
        return self.load_parameters()

    @cached_property
    def methods(self) -> tuple[str, ...]:
        """The ``method`` names it accepts, the default first."""
        return tuple(self.load_methods())

    @property
    def default_method(self) -> str:
        return self.methods[0]

    def check(self, params: dict, limits: dict[str, int] | None = None) -> dict:
        """``params`` checked: the values to search with, or :class:`ParameterError` naming the parameter.

        ``limits``: how many "tables" and "columns" the snapshot indexes; a count above its limit is capped at it,
        which answers the same (a top-k over n items with k > n is all n)."""
        spec = self.parameters
        for name in params:
            if name not in spec:
                raise ParameterError(name, f"{name!r} is not a parameter of {self.name} search (parameters: "
                                           f"{', '.join(spec)})")
        for name, p in spec.items():
            if p.required and params.get(name) is None:
                raise ParameterError(name, f"{name} is required for {self.name} search")
        out = {name: spec[name].check(name, value) for name, value in params.items()}
        self.cross_check(out)
        for name, value in out.items():
            unit = spec[name].capped
            if unit and value is not None and limits and unit in limits:
                out[name] = min(cast(int, value), max(int(limits[unit]), 1))
        return out

    def plan(self, checked: dict, table: QueryTable, config: Config) -> Plan:
        """The search of checked parameters on the resolved ``table``: :class:`ParameterError` (or
        :class:`~discovery.query.resolve.QueryError` for a column no search of this kind takes) when they do not fit it.
        ``config``: where the defaults come from, the caller's session's (a Spark batch passes the driver's, so
        every executor answers as the driver would)."""
        return self.make_plan(checked, table, config)


def at_least_k(checked: dict, names: tuple[str, ...] = ("phi_ref", "phi_r")) -> None:
    """Candidate counts below the number of results cannot hold the top-k."""
    k = checked.get("k", DEFAULT_K)
    for name in names:
        if checked.get(name) is not None and checked[name] < k:
            raise ParameterError(name, f"{name} must be at least k ({k}), got {checked[name]}")


def limits(snapshot) -> dict[str, int]:
    """How many tables and columns ``snapshot`` indexes (what counts of results are capped at)."""
    counts = snapshot.counts
    out = {"tables": counts.get("tables_ok"), "columns": counts.get("rows_columns")}
    for unit, table in (("tables", "catalog"), ("columns", "columns")):
        if out[unit] is None:
            out[unit] = snapshot.read(table, columns=["table_id"]).num_rows
    return out
