"""The report folder as a whole that travels: every file the report links lives inside it.

The report is copied, mailed and opened from MLflow's artifact view (the stage logs the
folder as its run's artifacts), where the upstream artifact folders are not beside it; a
link out of the folder (``../<stage>/<key>/...``) breaks there. So `Bundle` copies each
per-example file a table links into ``samples/<stage>/<file>`` and each figure into
``figures/<stage>-<file>``, and hands back the link relative to the report folder; the
HTML page carries PNG figures inside itself as ``data:`` URIs (`data_uri`). A per-example
file above `GZIP_ABOVE` bytes is copied gzipped (``<file>.gz``): every evaluation keeps every
example with its whole input, which for the paper profile's QA is hundreds of MB of JSON lines
(about a tenth of that gzipped), and the folder is copied again into MLflow.
"""

from __future__ import annotations

import base64
import gzip
import mimetypes
import shutil
from collections.abc import Mapping
from pathlib import Path

SAMPLES, FIGURES = "samples", "figures"
GZIP_ABOVE = 8 * 2**20


def data_uri(path: Path) -> str:
    """The file as a ``data:`` URI (base64), for a page that carries its images inside."""
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{kind};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


class Bundle:
    """Copies upstream files into the report folder ``base``, once each; ``stages`` maps an
    upstream artifact folder to its stage's name (the copies are named by stage)."""

    def __init__(self, base: Path, stages: Mapping[Path, str]) -> None:
        self.base = base
        self.stages = dict(stages)
        self.copied: dict[Path, str] = {}  # source -> its link relative to base

    def stage_of(self, path: Path) -> str:
        """The stage whose artifact holds ``path`` (its folder's name when not known)."""
        for folder in (path.parent, *path.parents):
            if folder in self.stages:
                return self.stages[folder]
        return path.parent.name

    def _copy(self, source: Path, relative: str, compress: bool = False) -> str:
        if source in self.copied:
            return self.copied[source]
        target, i = self.base / relative, 2
        while target.exists():  # two sources of one name: keep both
            target, i = target.with_name(f"{Path(relative).stem}-{i}{Path(relative).suffix}"), i + 1
        target.parent.mkdir(parents=True, exist_ok=True)
        if compress:
            target = target.with_name(target.name + ".gz")
            with source.open("rb") as raw, gzip.open(target, "wb") as packed:
                shutil.copyfileobj(raw, packed)
        else:
            shutil.copyfile(source, target)
        self.copied[source] = target.relative_to(self.base).as_posix()
        return self.copied[source]

    def sample(self, source: Path) -> str:
        """``source`` (a per-example output) copied to ``samples/<stage>/<name>`` (gzipped,
        ``<name>.gz``, above `GZIP_ABOVE` bytes); its link."""
        return self._copy(source, f"{SAMPLES}/{self.stage_of(source)}/{source.name}",
                          compress=source.stat().st_size > GZIP_ABOVE)

    def figure(self, source: Path, stage: str | None = None) -> str:
        """``source`` (a figure) copied to ``figures/<stage>-<name>``; its link. A figure the
        report drew itself (already under ``figures/``) stays where it is."""
        if source.parent == self.base / FIGURES:
            return source.relative_to(self.base).as_posix()
        return self._copy(source, f"{FIGURES}/{stage or self.stage_of(source)}-{source.name}")
