"""Configuration: defaults in code, overridden by a TOML file.

The file is ``$LAKESCOUT_CONFIG`` when set, else ``lakescout.toml`` in the working directory when present.  Sections
mirror the dataclasses below (``[limits]``, ``[profile]``, ``[spark]``, ``[refresh]``); unknown keys are an error so a
typo never silently falls back to a default.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path


@dataclass(frozen=True)
class Limits:
    """Bounds on lake input.  Hitting one is reported in the catalog (warning or error), never silent."""

    max_file_bytes: int = 512 * 1024 * 1024   # larger files are marked error
    max_columns: int = 1000                   # wider tables are marked error
    max_rows: int = 2_000_000                 # rows past this are dropped, with a warning
    max_cell_chars: int = 65_536              # a longer cell marks the table error (names row and column)
    max_ragged_fraction: float = 0.01         # more rows with a wrong field count than this: error (lines named)


@dataclass(frozen=True)
class ProfileConfig:
    type_agreement: float = 0.95   # share of non-null values that must parse as a type for it to be inferred
    key_min_rows: int = 2          # a key candidate needs at least this many non-null values


@dataclass(frozen=True)
class SparkConfig:
    master: str = "local[*]"
    tables_per_task: int = 16      # lake tables handled by one Spark task (bounds task memory and file count)


@dataclass(frozen=True)
class RefreshConfig:
    schedule: str = "@daily"


@dataclass(frozen=True)
class Config:
    limits: Limits = field(default_factory=Limits)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    refresh: RefreshConfig = field(default_factory=RefreshConfig)

    def to_dict(self) -> dict:
        return {f.name: {g.name: getattr(getattr(self, f.name), g.name) for g in fields(getattr(self, f.name))}
                for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict) -> "Config":
        cfg = cls()
        for section, values in data.items():
            if section not in {f.name for f in fields(cls)}:
                raise ValueError(f"unknown configuration section [{section}]")
            current = getattr(cfg, section)
            known = {f.name for f in fields(current)}
            unknown = set(values) - known
            if unknown:
                raise ValueError(f"unknown configuration key(s) in [{section}]: {', '.join(sorted(unknown))}")
            cfg = replace(cfg, **{section: replace(current, **values)})
        return cfg


def load_config(path: str | os.PathLike | None = None) -> Config:
    """Configuration from ``path``, ``$LAKESCOUT_CONFIG``, ``./lakescout.toml``, or the defaults, in that order."""
    candidate = path or os.environ.get("LAKESCOUT_CONFIG")
    if candidate is None and Path("lakescout.toml").is_file():
        candidate = "lakescout.toml"
    if candidate is None:
        return Config()
    p = Path(candidate)
    if not p.is_file():
        raise FileNotFoundError(f"configuration file {str(p)!r} does not exist")
    with p.open("rb") as fh:
        try:
            data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"configuration file {str(p)!r} is not valid TOML: {exc}") from None
    return Config.from_dict(data)
