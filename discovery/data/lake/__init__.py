"""Reading the lake: the listing decides what a table is (a file, or a Delta / Iceberg / partitioned / part-file
folder), each format has its reader behind one interface, and the stages and queries only ever see a lake table."""
from .listing import LakeTable, Listing, list_lake, locate
from .profile import infer_type, profile_table
from .reader import read_lake_table, table_version
from .table import LakeFileError, ParsedTable

__all__ = ["LakeTable", "Listing", "list_lake", "locate", "infer_type", "profile_table", "LakeFileError", "ParsedTable",
           "read_lake_table", "table_version"]
