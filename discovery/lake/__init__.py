"""Reading the lake: listing table files, parsing them within bounds, profiling their columns."""
from .listing import LakeFile, list_lake
from .profile import infer_type, profile_table
from .reader import LakeFileError, ParsedTable, content_hash, read_lake_table

__all__ = ["LakeFile", "list_lake", "infer_type", "profile_table", "LakeFileError", "ParsedTable", "content_hash",
           "read_lake_table"]
