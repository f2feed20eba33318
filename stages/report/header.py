"""The report's run header: which run produced it, so two reports are told apart.

Two kinds of facts, kept apart on purpose. What the report is a function of, and so its
cache key covers: the profile (``ReportConfig.profile``, a keyed section: another profile
is another report, never a stale name) and the report's own key. What the producing
pipeline run was (`stages.framework.tracking.RunFacts`, read from the stage's MLflow run
by the framework): the date, the commit, the whole run config's hash, the wall time so
far and the MLflow parent run; provenance shown, never keyed, so the header says "produced
by run X": a cached report shown again by a later run still names the run that wrote it.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass
from urllib.parse import urlparse

from stages.framework.tracking import RunFacts

# `make mlflow-ui` serves a local store (sqlite / file) here (Makefile's MLFLOW_PORT)
LOCAL_UI = "http://127.0.0.1:5000"


def mlflow_url(tracking_uri: str, experiment_id: str, run_id: str) -> str:
    """The MLflow UI page of a run: on the tracking server itself for an http(s) URI, else on
    the local UI `make mlflow-ui` starts for the store."""
    scheme = urlparse(tracking_uri).scheme
    ui = tracking_uri.rstrip("/") if scheme in ("http", "https") else LOCAL_UI
    return f"{ui}/#/experiments/{experiment_id}/runs/{run_id}"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


@dataclass(frozen=True)
class RunHeader:
    """The header's facts (see the module docstring for which are keyed)."""

    profile: str
    report_key: str
    produced_at: float  # epoch seconds: when this report was rendered
    run: RunFacts | None  # the producing MLflow runs; None where the stage ran without one

    @property
    def parent_run_id(self) -> str:
        return (self.run.parent_run_id or self.run.run_id) if self.run else ""

    @property
    def url(self) -> str:
        return mlflow_url(self.run.tracking_uri, self.run.experiment_id, self.parent_run_id) if self.run else ""

    def rows(self) -> list[tuple[str, str]]:
        """(label, text) per line of the header."""
        rows = [("profile", self.profile),
                ("report key", f"{self.report_key} (the cache key: covers the report's config and inputs)")]
        stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(self.produced_at))
        if self.run is None:
            return [*rows, ("produced", f"{stamp}, outside a tracked pipeline run")]
        tags = self.run.tags
        wall = _duration(self.produced_at - self.run.started) if self.run.started else "unknown"
        return [*rows,
                ("produced", f"{stamp} by MLflow run {self.parent_run_id} (provenance, not keyed: a cached report "
                             "shown again by a later run still names this run)"),
                ("commit", tags.get("git_commit", "unknown")),
                ("config hash", f"{tags.get('config_hash', 'unknown')} (of the whole run config)"),
                ("wall time", f"{wall} from the run's start to this report"),
                ("entry", tags.get("entry", "unknown")),
                ("MLflow", f"{self.url} (experiment {self.run.experiment_id}, run {self.parent_run_id})")]

    def markdown(self) -> list[str]:
        return [f"- **{label}:** " + (f"[{self.url}]({self.url}) (experiment {self.run.experiment_id}, run "
                                     f"`{self.parent_run_id}`)" if label == "MLflow" and self.run else text)
                for label, text in self.rows()]

    def html(self) -> str:
        cells = []
        for label, text in self.rows():
            body = html.escape(text)
            if label == "MLflow" and self.run:
                body = (f"<a href='{html.escape(self.url)}'>open the run in MLflow</a> (experiment "
                        f"{html.escape(self.run.experiment_id)}, run <code>{html.escape(self.parent_run_id)}</code>;"
                        f" <code>make mlflow-ui</code> serves a local store)")
            cells.append(f"<tr><td><b>{html.escape(label)}</b></td><td>{body}</td></tr>")
        return f"<div class='header'><table>{''.join(cells)}</table></div>"
