"""Utilities that sit beside the engine: data loading (`lucid.utils.data`)."""
from . import data  # noqa: F401
