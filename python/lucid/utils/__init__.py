"""Utilities that sit beside the engine: data loading (`lucid.utils.data`) and activation checkpointing
(`lucid.utils.checkpoint`)."""
from . import checkpoint, data, hooks  # noqa: F401
