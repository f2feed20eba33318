"""Hub models and hub datasets the planned stages would download: checked before Ray starts
(`stages.framework.plan_checks`).

A hub model id (``model.*.name_or_path``) or a dataset loaded by name (``data.*`` with an
empty local-copy field) on a machine without network would fail inside a stage after
retries, with a traceback that does not name the config field (docs/reliability.md). Here, for
every such read of a stage to run that the local Hugging Face cache cannot serve:

- the hub switched off (models: ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``, which
  `stages.framework.external.missing_inputs` already reports; datasets: ``HF_DATASETS_OFFLINE``
  / ``HF_HUB_OFFLINE``): a missing input naming the field and the dataset;
- otherwise one request to the hub (``$HF_ENDPOINT``, default https://huggingface.co),
  bounded by `PROBE_SECONDS` in all (DNS included: it runs in a thread that is waited for at
  most that long); when nothing answers, a missing input per read naming the field, its
  value, that it is not a local path, and the endpoint.

What counts as cached: a model whose ``config.json`` the hub cache holds
(`stages.config.depth.cached_hub_config`); a dataset with a folder of its name in the
``datasets`` cache (``$HF_DATASETS_CACHE``, default ``$HF_HOME/datasets``: ``<owner>___<name>``
or ``<name>``) or in the hub cache (``datasets--<owner>--<name>``). A cache that holds only
some splits or configs still counts: the stage then names what it lacks.
"""

from __future__ import annotations

import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stages.config.data import HF_NAMES, HUB_READS
from stages.config.depth import cached_hub_config
from stages.framework.external import is_hub_id, offline_switch
from stages.framework.keys import stage_sections
from stages.framework.preflight import MISSING, PROBE_SECONDS, Problem
from stages.framework.resources import section_value

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig
    from stages.framework.stage import Stage

DEFAULT_ENDPOINT = "https://huggingface.co"
MODEL_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")  # as `stages.framework.external`
DATASET_SWITCHES = ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")  # what the datasets library reads


@dataclass(frozen=True)
class HubRead:
    """A config field whose value makes a stage download from the hub: ``repo`` (a model
    id or a dataset name), ``kind`` ('model' or 'dataset'), ``why`` (how the value reads
    it) and every stage to run that reads it."""

    field: str
    value: str
    repo: str
    kind: str
    why: str
    stages: tuple[str, ...]


def hub_reads(cfg: PipelineConfig, running: Iterable[type[Stage]]) -> list[HubRead]:
    """Every hub model and dataset the stages to run (classes) read, once per field."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for stage in running:
        sections = stage_sections(stage, cfg)
        for field in stage.external_models:
            value = str(section_value(sections, field) or "")
            if value and is_hub_id(value):
                found.setdefault((field, value), {"repo": value, "kind": "model", "stages": [],
                                                  "why": "is not a local folder: a hub model id"})["stages"].append(stage.name)
        for field in stage.external_paths:
            if field not in HUB_READS or section_value(sections, field):
                continue
            section = field.rsplit(".", 1)[0]
            source = section_value(sections, section).source
            if source in HUB_READS[field]:
                repo = HF_NAMES[HUB_READS[field][source]][0]
                found.setdefault((field, ""), {"repo": repo, "kind": "dataset", "stages": [],
                                               "why": f"(empty, with {section}.source={source!r}) loads the hub "
                                                      f"dataset {repo!r} by name"})["stages"].append(stage.name)
    return [HubRead(field, value, r["repo"], r["kind"], r["why"], tuple(r["stages"]))
            for (field, value), r in found.items()]


def _datasets_cache() -> Path:
    home = Path(os.environ.get("HF_HOME") or Path("~/.cache/huggingface").expanduser()).expanduser()
    return Path(os.environ.get("HF_DATASETS_CACHE") or home / "datasets").expanduser()


def _hub_cache() -> Path | None:
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:
        return None
    return Path(HF_HUB_CACHE)


def dataset_cached(repo: str) -> bool:
    """Whether a local cache holds something of hub dataset ``repo`` (module docstring)."""
    owner, _, name = repo.rpartition("/")
    folders = [_datasets_cache() / f"{owner}___{name}" if owner else _datasets_cache() / name]
    if not owner:
        folders += list(_datasets_cache().glob(f"*___{name}"))  # a canonical name moved under an owner
    hub = _hub_cache()
    if hub is not None:
        folders.append(hub / f"datasets--{repo.replace('/', '--')}")
        if not owner:
            folders += list(hub.glob(f"datasets--*--{name}"))
    return any(f.is_dir() for f in folders)


def cached(read: HubRead) -> bool:
    return cached_hub_config(read.repo) is not None if read.kind == "model" else dataset_cached(read.repo)


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_unreachable(url: str, timeout: float = PROBE_SECONDS) -> str:
    """'' if an HTTP server answers at ``url`` (any status) within ``timeout`` seconds in
    all, else why not. The request runs in a daemon thread waited for ``timeout``: name
    resolution, which the socket timeout does not bound, is bounded too."""
    outcome: list[str] = []

    def ask() -> None:
        try:
            with urllib.request.urlopen(url, timeout=timeout):  # noqa: S310 (the hub's endpoint)
                outcome.append("")
        except urllib.error.HTTPError:
            outcome.append("")  # it answered
        except (urllib.error.URLError, OSError, ValueError) as exc:
            outcome.append(str(getattr(exc, "reason", None) or exc))

    thread = threading.Thread(target=ask, name="nugget-hub-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    return outcome[0] if outcome else f"no answer within {timeout:g} s"


def _line(read: HubRead, what: str) -> str:
    return f"{read.field}={read.value!r} {read.why}, {what} (read by {', '.join(read.stages)})"


def hub_problems(cfg: PipelineConfig, running: Iterable[type[Stage]], probe: bool = True, heading: str = "") -> list[Problem]:
    """A missing input (exit 3, listed under ``heading``) per hub read of the stages to run
    that neither the local cache nor the hub can serve; ``probe``: whether to ask the hub
    (one request, at most `PROBE_SECONDS`)."""
    reads = [r for r in hub_reads(cfg, running) if not cached(r)]
    found, online = [], []
    for read in reads:
        switch = offline_switch(MODEL_SWITCHES if read.kind == "model" else DATASET_SWITCHES)
        if switch and read.kind == "dataset":
            found.append(Problem(MISSING, _line(read, f"which the local cache does not hold, and {switch} forbids "
                                                       "downloading it; give a local copy in the field"), heading))
        elif not switch:  # a model under a switch: `external.missing_inputs` reports it
            online.append(read)
    if online and probe:
        url = endpoint()
        reason = hub_unreachable(url)
        if reason:
            found += [Problem(MISSING, _line(read, f"not in the local Hugging Face cache, and the hub at {url} does "
                                                   f"not answer ({reason}); give a local "
                                                   f"{'folder' if read.kind == 'model' else 'copy in the field'} or "
                                                   "run where the hub answers"), heading) for read in online]
    return found
