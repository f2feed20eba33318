"""Load the pipeline configuration: schema <- group files <- profile <- CLI overrides.

Layout of ``conf/`` (Hydra-style groups, without Hydra):

- ``conf/profile/<name>.yaml``: a ``defaults`` mapping choosing one option per group
  (``model: bart_tiny``) followed by any top-level overrides;
- ``conf/<group>/<option>.yaml`` for group in :data:`GROUPS`: the content of that
  top-level section.

Overrides are ``key=value`` strings (OmegaConf dotlist). ``profile=NAME`` picks the
profile; ``<group>=OPTION`` (e.g. ``model=mbart50``) swaps a group option (a name of a
file in ``conf/<group>/``, not a path: `_group_file`); anything
else (``nugget.ratio=0.1``) sets a value. ``rehearsal=true`` adds
``conf/rehearsal/<profile>.yaml``, the profile at rehearsal sizes
(:mod:`stages.config.rehearsal`). Merge order, later wins: schema defaults, group options,
profile body, rehearsal overlay, overrides. Every error names the source and the full key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from stages.config import validate
from stages.config.precision import resolve_precisions
from stages.config.rehearsal import non_size_differences
from stages.config.schema import PipelineConfig
from stages.config.validate import ConfigError

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
GROUPS = ("model", "data", "train", "calibrate", "eval")
DEFAULT_PROFILE = "tiny"
# keys that moved (old -> new): a YAML or override using the old key is told the new one
MOVED_KEYS = {
    "eval.calibration": "calibrate.threshold",
    "eval.baselines.train": "train.baselines",
    "model.seq2seq.tiny.tokenizer_vocab_size": "model.seq2seq.tokenizer_vocab_size",
}


def _options(conf_dir: Path, group: str) -> list[str]:
    return sorted(p.stem for p in (conf_dir / group).glob("*.yaml"))


def _read_yaml(path: Path) -> DictConfig:
    try:
        loaded = OmegaConf.load(path)
    except (OSError, OmegaConfBaseException, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read YAML: {exc}") from exc
    if not isinstance(loaded, DictConfig):
        raise ConfigError(f"{path}: top level must be a mapping")
    return loaded


def _group_file(conf_dir: Path, group: str, option: str, origin: str) -> Path:
    """``conf/<group>/<option>.yaml``. An option is the plain name of a file of the group's
    folder, never a path: ``profile=../../elsewhere/x`` would otherwise read any YAML on the
    machine (and ``..`` may reach a file that exists), so a name holding a path separator,
    a leading dot or an absolute path is refused like an unknown one."""
    path = conf_dir / group / f"{option}.yaml"
    plain = bool(option) and Path(option).name == option and not option.startswith(".") and "\\" not in option
    if not plain or not path.is_file():
        why = "" if plain else f" (an option is a file name of conf/{group}/, not a path)"
        raise ConfigError(
            f"{origin}: {group}={option!r} is not an option{why}; available: {_options(conf_dir, group)}"
        )
    return path


def _split_overrides(overrides: list[str]) -> tuple[dict[str, str], list[str]]:
    """Separate group selections (``profile=``, ``model=``...) from value overrides."""
    selections: dict[str, str] = {}
    values: list[str] = []
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"command line: override {item!r} is not of the form key=value")
        if key in ("profile", "rehearsal") or key in GROUPS:
            selections[key] = value
        else:
            values.append(item)
    return selections, values


def _parse_overrides(values: list[str]) -> DictConfig:
    """The value overrides as one config; a value YAML cannot parse (``run.targets=[report``)
    is named with its key, not left to surface as a parser traceback."""
    try:
        return OmegaConf.from_dotlist(values)
    except (OmegaConfBaseException, yaml.YAMLError) as exc:
        for item in values:  # find the override that fails, to name its key
            key, _, value = item.partition("=")
            try:
                OmegaConf.from_dotlist([item])
            except (OmegaConfBaseException, yaml.YAMLError) as one:
                problem = getattr(one, "problem", None) or str(one).splitlines()[0]
                raise ConfigError(
                    f"{key}: cannot parse the value {value!r} given on the command line ({problem}); "
                    "a list is written [a,b] and a string holding YAML syntax is quoted ('\"...\"')"
                ) from one
        raise ConfigError(f"command line: cannot parse overrides {values}: {exc}") from exc


def _merged(base: DictConfig, *others: Any) -> DictConfig:
    """``others`` merged into ``base`` (OmegaConf.merge, which keeps a mapping a mapping)."""
    merged = OmegaConf.merge(base, *others)
    if not isinstance(merged, DictConfig):
        raise TypeError(f"merging into a mapping gave a {type(merged).__name__}")
    return merged


def _plain(cfg: DictConfig) -> dict[str, Any]:
    """``cfg`` as nested plain dicts (OmegaConf.to_container)."""
    plain = OmegaConf.to_container(cfg)
    if not isinstance(plain, dict):
        raise TypeError(f"a mapping's container is a {type(plain).__name__}")
    return {str(k): v for k, v in plain.items()}


def _merge(base: DictConfig, other: Any, origin: str) -> DictConfig:
    try:
        return _merged(base, other)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "?"
        msg = str(exc).splitlines()[0]
        for old, new in MOVED_KEYS.items():
            if key == old or key.startswith(old + "."):
                msg += f" ({old} moved to {new})"
        raise ConfigError(f"{origin}: {key}: {msg}") from exc


def _section(node: DictConfig, group: str) -> DictConfig:
    return OmegaConf.create({group: node})


def _rehearsal(selections: dict[str, str]) -> bool:
    value = selections.pop("rehearsal", "false").strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"command line: rehearsal={value!r}: true or false")
    return value == "true"


def _build(layers: list[tuple[str, Any]]) -> DictConfig:
    """The schema with every layer merged in order, resolved (not yet an object)."""
    try:  # one merge (each merge deep-copies the whole config) ...
        cfg = _merged(OmegaConf.structured(PipelineConfig), *(node for _, node in layers))
    except OmegaConfBaseException:  # ... and layer by layer only to name the one that fails
        cfg = OmegaConf.structured(PipelineConfig)
        for origin, node in layers:
            cfg = _merge(cfg, node, origin)
    try:
        OmegaConf.resolve(cfg)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "?"
        raise ConfigError(f"{key}: {str(exc).splitlines()[0]}") from exc
    return cfg


def load_config(overrides: list[str] | None = None, conf_dir: Path = CONF_DIR, check: bool = True) -> PipelineConfig:
    """Resolve, type-check and range-check the configuration.

    Raises :class:`ConfigError` (never anything else for bad input) with a message
    naming the file or the command line and the full key. ``check=False`` stops after
    the type check: the caller collects the range and relation errors itself
    (`validate.errors`), to report them with the problems found after (the CLI's
    preflight, `stages.framework.plan_checks`).
    """
    selections, values = _split_overrides(list(overrides or []))
    profile = selections.pop("profile", DEFAULT_PROFILE)
    rehearsal = _rehearsal(selections)
    profile_path = _group_file(conf_dir, "profile", profile, "command line")
    profile_cfg = _read_yaml(profile_path)

    defaults = profile_cfg.pop("defaults", OmegaConf.create({}))
    if not isinstance(defaults, DictConfig):
        raise ConfigError(f"{profile_path}: 'defaults' must map group -> option")
    unknown = sorted({str(k) for k in defaults.keys()} - set(GROUPS))
    if unknown:
        raise ConfigError(f"{profile_path}: defaults: unknown groups {unknown}; groups are {list(GROUPS)}")
    choices = {**{str(k): str(v) for k, v in defaults.items()}, **selections}

    layers: list[tuple[str, Any]] = [("command line", {"profile": profile})]  # (origin, content)
    for group in GROUPS:
        if group in choices:
            origin = "command line" if group in selections else str(profile_path)
            path = _group_file(conf_dir, group, choices[group], origin)
            layers.append((str(path), _section(_read_yaml(path), group)))
    layers.append((str(profile_path), profile_cfg))
    command_line = ("command line", _parse_overrides(values))

    if rehearsal:
        overlay_path = _group_file(conf_dir, "rehearsal", profile, "command line (rehearsal=true)")
        overlay = ("rehearsal", {"rehearsal": True})
        cfg = _build([*layers, (str(overlay_path), _read_yaml(overlay_path)), overlay, command_line])
        # the rehearsal runs the profile's code paths: any change beyond sizes is refused here
        changed = non_size_differences(_plain(_build([*layers, command_line])), _plain(cfg))
        if changed:
            raise ConfigError(f"{overlay_path}: a rehearsal changes sizes only (stages/config/rehearsal.py); "
                              "it changes " + "; ".join(changed))
    else:
        cfg = _build([*layers, command_line])

    try:
        obj = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "?"
        raise ConfigError(f"{key}: {str(exc).splitlines()[0]}") from exc
    assert isinstance(obj, PipelineConfig)
    resolve_precisions(obj)  # before any cache key: a key names the precision its stage computes in
    if check:
        validate.check(obj)
    return obj


def to_yaml(cfg: PipelineConfig) -> str:
    """The resolved configuration as YAML (logged with every pipeline run)."""
    return OmegaConf.to_yaml(OmegaConf.structured(cfg))
