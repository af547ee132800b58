"""Acting on answers: the union or join an answer describes, written as a table with its provenance.

:mod:`.actions` is the front door (``stack``, ``augment``, ``pairs``, behind the API's methods of the same names and
the CLI); :mod:`.sources` turns answers into the lake tables of a plan, pinned to their indexed versions, with their
alignments or value mappings; :mod:`.execute` makes the plan and runs it here; :mod:`.plan` is the plan whole (saved
as a folder for a Spark job); :mod:`.union` and :mod:`.augment` are the row transforms; :mod:`.coerce` types
columns; :mod:`.output` writes atomically. A text join's values are paired by the two-table matcher
(:mod:`discovery.transforms.match`) unless the search's own pairs are asked for.
"""
from .augment import FanOut, FanOutError
from .execute import METADATA_KEY, Materialized
from .output import FORMATS, OutputError
from .sources import PlanError

__all__ = ["FanOut", "FanOutError", "FORMATS", "OutputError", "PlanError", "METADATA_KEY", "Materialized"]
