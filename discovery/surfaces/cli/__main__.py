"""``python -m discovery.surfaces.cli``: the console script's entry point."""
from .main import entry

entry()
