"""Typed, composable configuration: schemas, the YAML/CLI loader and validation.

The package's names are loaded on first use (PEP 562): each study keeps its config sections
in its own folder (``stages/<study>/config.py``), importing the section helpers of this
package (`stages.config.validate`, `stages.config.job`), while the schema imports those
study modules to place each section at its path. An eager ``import stages.config`` would
load the schema first and close that circle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stages.config.loader import CONF_DIR, GROUPS, load_config, to_yaml
    from stages.config.schema import PipelineConfig
    from stages.config.validate import ConfigError

_FROM = {"CONF_DIR": "loader", "GROUPS": "loader", "load_config": "loader", "to_yaml": "loader",
         "PipelineConfig": "schema", "ConfigError": "validate"}
__all__ = ["CONF_DIR", "GROUPS", "ConfigError", "PipelineConfig", "load_config", "to_yaml"]


def __getattr__(name: str) -> Any:
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_FROM[name]}"), name)
