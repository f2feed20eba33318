"""Fingerprints of the inputs a stage reads by path, from outside the artifact store.

A cache key covers a stage's config sections, code and upstream keys
(:mod:`stages.framework.keys`). An input read by path (a nugget-data folder, a local model,
a ParaBank file, the offline corpora under ``run.sources_dir``) would be covered by its
path string only, and a file replaced at the same path would be a stale hit. So the key
also takes a fingerprint of the content of every such input the stage declares
(`Stage.external_paths`, `Stage.external_models`, `Stage.offline_sources`):

- every file of the input (a folder: each file below it, recursively, symlinks followed; a
  glob: each match, with ``{split}`` matching any split), in sorted order of its path
  relative to the input, with its size and
  - for a small file (under `SMALL_FILE_BYTES`, 1 MiB: configs, ``task.jsonl``,
    ``tokenizer.json``, HTML pages), a sha256 of its bytes: an edit that keeps the size
    and the modification time still changes the key, and ``touch`` alone does not;
  - for a larger file (weights, wheels, archives), its modification time in ns, not its
    bytes: hashing gigabytes of weights at every plan would make planning slow. A large
    file replaced by one of the same size *and* the same mtime (a copy that preserves
    times) is not seen; a copy that does not preserve times (another machine's fetch,
    ``cp`` without ``-p``) is a miss, never a stale hit.
- File digests are cached per process by (path, inode, size, mtime_ns, ctime_ns): a second
  plan in the same process reads no file again, and any write since (which moves the
  ctime, whatever the mtime was set back to) reads it again.

A model field (`Stage.external_models`) whose value is not a local path, such as
``facebook/bart-large``, is a hub id: the config section already keys it by the id, and
hub repositories are taken as immutable enough (a revision, where a config field holds
one, is keyed as any config value).

What is missing is found before any key is computed: `missing_inputs` checks every
declared input of the stages to plan and returns them all at once (a path that does not
exist, a glob that matches nothing, a model value that looks like a path but is not there,
and, when the hub is switched off by ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``, a hub id
the local Hugging Face cache does not hold), each with the config field, the value and the
stages that read it (`stages.framework.dag.Dag.plan` refuses to plan then, and the CLI
reports them with everything else that would stop the run: `stages.framework.plan_checks`).
`input_fingerprint` still raises `ExternalInputError` for a path that is not there, for
callers that key one stage alone. A missing offline source is not an error here: its
fingerprint says ``absent``, so the stage plans as a miss, and the run reports the source
with the command that fetches it (`stages.framework.preflight`, `stages.sources.registry`).
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stages.config.depth import cached_hub_config
from stages.framework.resources import section_value
from stages.sources.registry import DebianPackages, get

if TYPE_CHECKING:
    from stages.framework.stage import Stage

SMALL_FILE_BYTES = 1 << 20  # smaller files are hashed; larger ones keyed by size and mtime
ABSENT = "absent"  # the fingerprint of an offline source that is not fetched
# what `from_pretrained` would take for a hub repository: "name" or "owner/name"
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# the switches that keep huggingface_hub / transformers off the network (either suffices)
OFFLINE_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


class ExternalInputError(FileNotFoundError):
    """A stage's declared external input is not where its config field says."""


@cache
def _content(path: str, inode: int, size: int, mtime_ns: int, ctime_ns: int) -> str:
    """A file's entry of a fingerprint. Cached by its stat: a file written since (its ctime
    moves, even where the writer sets the mtime back) is read again."""
    if size >= SMALL_FILE_BYTES:
        return f"mtime:{mtime_ns}"
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def _files(root: Path) -> Iterator[tuple[str, Path]]:
    """(posix path relative to ``root``, path) of every file at or below ``root``,
    following symlinks (a folder reached twice through links is walked once)."""
    if not root.is_dir():
        yield ".", root
        return
    seen: set[tuple[int, int]] = set()
    for here, dirs, names in os.walk(root, followlinks=True):
        st = os.stat(here)
        if (st.st_dev, st.st_ino) in seen:
            dirs.clear()
            continue
        seen.add((st.st_dev, st.st_ino))
        for name in names:
            path = Path(here) / name
            yield path.relative_to(root).as_posix(), path


def _entry(path: Path) -> str:
    """A file's size and content entry (`_content`); a dangling symlink (unpacked packages
    hold some that point outside their tree) by its target, as nothing can read through it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not os.path.islink(path):
            raise
        return f"0\0link:{os.readlink(path)}"
    return f"{st.st_size}\0{_content(str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)}"


def fingerprint(entries: Mapping[str, Path]) -> str:
    """sha256 over (name, size, content entry) of each file of ``entries`` (name -> file),
    in sorted order of name (see the module docstring)."""
    digest = hashlib.sha256()
    for name in sorted(entries):
        digest.update(f"{name}\0{_entry(entries[name])}\n".encode())
    return digest.hexdigest()


def path_fingerprint(path: Path) -> str:
    """The fingerprint of a file, or of a folder and every file below it."""
    return fingerprint(dict(_files(path)))


def _glob_matches(pattern: str) -> list[str]:
    return sorted(glob.glob(os.path.expanduser(pattern.replace("{split}", "*")), recursive=True))


def is_hub_id(value: str) -> bool:
    """Whether a model value names a hub repository rather than a local folder: it is not
    an existing path and reads as ``name`` or ``owner/name``."""
    return not Path(value).expanduser().exists() and bool(HUB_ID.match(value)) and ".." not in value


def offline_switch(names: Iterable[str] = OFFLINE_SWITCHES) -> str:
    """``NAME=value`` of the switch (``names``, default `OFFLINE_SWITCHES`, read as
    huggingface_hub reads them: 1 / true / yes / on) that tells the hub libraries not to
    download; '' if none."""
    for name in names:
        value = os.environ.get(name, "").strip()
        if value.upper() in ("1", "TRUE", "YES", "ON"):
            return f"{name}={value}"
    return ""


def _is_glob(value: str) -> bool:
    return glob.has_magic(value) or "{split}" in value


def input_problem(value: str, model: bool = False) -> str | None:
    """What is wrong with the input a config field names, as words following the value
    ("does not exist", "matches no file", ...); None when it can be read. A hub id
    (``model`` fields only) is a problem only when the hub is switched off
    (`offline_switch`) and the local Hugging Face cache does not hold its config.json."""
    if model and is_hub_id(value):
        switch = offline_switch()
        if switch and cached_hub_config(value) is None:
            return f"is a hub id the local Hugging Face cache does not hold, and {switch} forbids downloading it"
        return None
    if _is_glob(value):
        return None if _glob_matches(value) else "matches no file"
    return None if Path(value).expanduser().exists() else "does not exist"


def input_fingerprint(stage: str, field: str, value: str, model: bool = False) -> str | None:
    """The fingerprint of the path in config field ``field`` of ``stage``; None for a hub
    id (``model`` fields only: the config keys it). Raises `ExternalInputError` if nothing
    is there."""
    if model and is_hub_id(value):
        return None
    what = input_problem(value)
    if what:
        raise ExternalInputError(f"stage {stage!r} reads {field}={value!r}, which {what} (a path its cache key "
                                 f"fingerprints); fix the path or the config field {field}")
    if _is_glob(value):
        return fingerprint({f"{m}/{rel}": p for m in _glob_matches(value) for rel, p in _files(Path(m))})
    return path_fingerprint(Path(value).expanduser())


@dataclass(frozen=True)
class MissingInput:
    """A declared external input that cannot be read: its config field, the value there,
    what is wrong (`input_problem`) and every planned stage that reads it."""

    field: str
    value: str
    what: str
    stages: tuple[str, ...]

    def line(self) -> str:
        """One line of a report: ``field=value what (read by stage, ...)``."""
        return f"{self.field}={self.value!r} {self.what} (read by {', '.join(self.stages)})"


def missing_inputs(stages: Iterable[tuple[type[Stage], Mapping[str, Any]]]) -> list[MissingInput]:
    """Every declared input (`Stage.external_paths`, `Stage.external_models`) of
    ``stages`` (each a stage class with its declared config sections) that cannot be read,
    once per field and value, in the order first read. Empty fields are not read."""
    problems: dict[tuple[str, str], str | None] = {}  # (field, value) -> input_problem, each checked once
    readers: dict[tuple[str, str], list[str]] = {}
    for stage_cls, sections in stages:
        for fields, model in ((stage_cls.external_paths, False), (stage_cls.external_models, True)):
            for field in fields:
                value = section_value(sections, field)
                if value:
                    key = (field, str(value))
                    if key not in problems:
                        problems[key] = input_problem(key[1], model=model)
                    readers.setdefault(key, []).append(stage_cls.name)
    return [MissingInput(field, value, what, tuple(readers[field, value]))
            for (field, value), what in problems.items() if what is not None]


def source_fingerprint(sources_dir: Path, name: str) -> str:
    """The fingerprint of offline source ``name`` under ``sources_dir`` (every file of its
    wheels or unpacked package trees), or `ABSENT` when it is not fetched (complete)."""
    src = get(name)
    entries: dict[str, Path] = {}
    if isinstance(src, DebianPackages):
        for package, _ in src.packages:
            root = sources_dir / src.folder(package)
            if not (root / ".complete").exists():  # the marker a fetch writes last
                return ABSENT
            entries.update({f"{src.folder(package)}/{rel}": p for rel, p in _files(root)})
    else:
        entries = {f"{src.folder}/{p.name}": p for p in sorted((sources_dir / src.folder).glob(src.wheel_glob))}
    return fingerprint(entries) if entries else ABSENT


def external_fingerprints(stage_cls: type[Stage], sections: Mapping[str, Any], sources_dir: Path) -> dict[str, str]:
    """Per external input of ``stage_cls`` (given its declared config ``sections``), its
    fingerprint: ``{field: digest}`` for `Stage.external_paths` / `Stage.external_models`
    fields that hold a local path, ``{"sources/<name>": digest}`` per offline source.
    Empty fields and hub ids are left out (the config already keys them)."""
    found: dict[str, str] = {}
    for fields, model in ((stage_cls.external_paths, False), (stage_cls.external_models, True)):
        for field in fields:
            value = section_value(sections, field)
            if value:
                digest = input_fingerprint(stage_cls.name, field, str(value), model=model)
                if digest is not None:
                    found[field] = digest
    for name in stage_cls.offline_sources(dict(sections)):
        found[f"sources/{name}"] = source_fingerprint(sources_dir, name)
    return found
