"""Typed, composable configuration: schemas, the YAML/CLI loader and validation."""

from stages.config.loader import CONF_DIR, GROUPS, load_config, to_yaml
from stages.config.schema import PipelineConfig
from stages.config.validate import ConfigError

__all__ = ["CONF_DIR", "GROUPS", "ConfigError", "PipelineConfig", "load_config", "to_yaml"]
