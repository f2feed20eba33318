"""Checks of the places a run needs, after the config loads and before Ray starts.

A bad place would otherwise fail minutes in, deep in a library, with a message that names
neither the key nor the path (an unwritable artifact root, an MLflow server that does not
answer, an unknown tracking URI scheme, a missing offline-sources folder; docs/reliability.md).
Each check here costs at most a file write or one short HTTP request, names the config
key and the value, and says what to do. `preflight` returns every problem found; the CLI
reports them with the config errors and missing inputs (`stages.framework.plan_checks`)
and exits with `exit_code` (`CONFIG`: 2 before `MISSING`: 3), so a ``--dry-run`` runs
them too.

- ``run.artifact_root`` (local): its folder, or the closest existing parent, accepts a file.
- ``run.tracking_uri``: a sqlite file in a writable folder; an ``http(s)`` server answers
  within `PROBE_SECONDS` and takes the credentials (`stages.framework.tracking_auth`).
  (Its scheme, and sqlite only with a local root, are checked at config load:
  `stages.config.uris`.)
- ``run.sources_dir``: present when the plan runs a stage that reads it (`reads_sources`).
"""

from __future__ import annotations

import ast
import inspect
import os
import tempfile
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from stages.config.uris import shown, sqlite_file, tracking_scheme
from stages.framework.tracking_auth import (
    PASSWORD_ENV,
    USER_ENV,
    auth_headers,
    credentials_user,
    split_userinfo,
)

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig
    from stages.framework.stage import Stage
    from stages.framework.store import ArtifactStore

CONFIG, MISSING = 2, 3  # the CLI's exit codes (pipelines.cli): bad configuration, missing input
PROBE_SECONDS = 4.0  # one HTTP request to the tracking server; MLflow itself retries for minutes
SOURCES_FETCH = "make sources"


@dataclass(frozen=True)
class Problem:
    """One thing that would make the run fail: the exit code, a message naming the
    config key and its value, and the heading it is listed under in a report of many
    (`stages.framework.plan_checks.report`; '' = a message of its own)."""

    code: int
    message: str
    heading: str = ""


# -- artifact root -------------------------------------------------------------------------
def closest_existing(path: Path) -> Path:
    """``path`` or, when it does not exist yet, its closest existing parent (where it
    would be created)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def writable_problem(folder: Path, key: str, shown_as: str | None = None) -> Problem | None:
    """None if ``folder`` (or, when it does not exist yet, its closest existing parent,
    where it would be created) accepts a new file; the probe file is removed at once."""
    target = closest_existing(folder)
    what = shown_as or str(folder)
    if not target.is_dir():
        return Problem(CONFIG, f"{key}: {what} cannot be created: {target} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".nugget-preflight-", dir=target)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        where = "" if target == folder else f" (its parent {target}, where it would be created)"
        return Problem(CONFIG, f"{key}: {what} is not writable{where}: {exc.strerror or exc}")
    return None


def artifact_root_problems(root: str, local: bool, base: str) -> list[Problem]:
    """A local root must be writable; a remote one is left to the store (a cheap write
    there needs credentials and network the check cannot bound)."""
    if not local:
        return []
    found = writable_problem(Path(base), "run.artifact_root", root)
    return [found] if found else []


# -- tracking URI ----------------------------------------------------------------------------
def http_problem(uri: str, timeout: float = PROBE_SECONDS) -> Problem | None:
    """None if an MLflow server answers at ``uri`` and takes the credentials (user info of
    ``uri``, else MLflow's environment variables): one authenticated request (``/health``
    answers without them). Any status but 401 passes: a proxy is still a server, and MLflow
    reports what it then refuses."""
    bare, headers = split_userinfo(uri)[0], auth_headers(uri)
    url = bare.rstrip("/") + "/api/2.0/mlflow/experiments/search?max_results=1"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout):  # noqa: S310
            return None
    except urllib.error.HTTPError as exc:
        if exc.code != 401:
            return None  # it answered
        if not headers:
            return Problem(CONFIG, f"run.tracking_uri: the MLflow server at {bare} asks for credentials (HTTP 401); "
                                   f"export {USER_ENV} and {PASSWORD_ENV} (or give http://USER:PASSWORD@host)")
        return Problem(CONFIG, f"run.tracking_uri: the MLflow server at {bare} refused the credentials (HTTP 401) "
                               f"of user {credentials_user(uri) or '(token)'!r}; check the user name and "
                               f"password ({USER_ENV} / {PASSWORD_ENV}, or the user info of the URI)")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return Problem(CONFIG, f"run.tracking_uri: no MLflow server answers at {shown(uri)} within {timeout:g} s "
                               f"({reason}); start one (make mlflow-ui runs one on 127.0.0.1:5000) or fix the URI")


def tracking_problems(uri: str, probe: bool = True) -> list[Problem]:
    """``run.tracking_uri`` as configured ('' = the default sqlite beside a local root,
    covered by the root's check); its scheme was checked at config load."""
    scheme = tracking_scheme(uri) if uri else ""
    db = sqlite_file(uri)
    if db is not None:
        found = writable_problem(db.parent, "run.tracking_uri", f"{uri} (its folder)")
        return [found] if found else []
    if scheme in ("http", "https") and probe:
        found = http_problem(uri)
        return [found] if found else []
    return []


# -- sources -------------------------------------------------------------------------------
@cache
def reads_sources(stage_class: type[Stage]) -> bool:
    """Whether the stage's code reads ``ctx.sources_dir`` (the offline corpora): derived
    from its source with `ast`, as the cache keys derive a stage's code closure, so no
    list is kept by hand."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(stage_class)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(isinstance(node, ast.Attribute) and node.attr == "sources_dir" for node in ast.walk(tree))


def sources_problems(cfg: PipelineConfig, running: Iterable[type[Stage]]) -> list[Problem]:
    """``run.sources_dir`` must exist when a stage to run (``running``: stage classes)
    reads it. Which sources a stage needs inside it is the stage's to check (its message
    names the package and the fetch command): the folder is what is missing when the
    sources were never fetched, or ``run.sources_dir`` points elsewhere."""
    # mypy does not see a class object as Hashable (a known mypy bug; it is, by identity)
    readers = [s.name for s in running if reads_sources(s)]  # type: ignore[arg-type]
    folder = Path(os.path.expanduser(cfg.run.sources_dir))
    if not readers or folder.is_dir():
        return []
    verb = "reads" if len(readers) == 1 else "read"
    return [Problem(MISSING, f"run.sources_dir: {folder} does not exist; {', '.join(readers)} {verb} the offline "
                             f"corpora from it. Fetch them with: {SOURCES_FETCH} (or: python -m stages.sources "
                             f"fetch --dir {folder}), or set run.sources_dir / $NUGGET_SOURCES_DIR to where "
                             "they are")]


def preflight(cfg: PipelineConfig, store: ArtifactStore, running: Iterable[type[Stage]], probe: bool = True
              ) -> list[Problem]:
    """Every problem of the places the run needs (see the module docstring); ``store``:
    the run's `ArtifactStore`; ``running``: the stages the plan will run; ``probe``:
    whether to ask an HTTP tracking server (one request)."""
    found = artifact_root_problems(cfg.run.artifact_root, store.local, store.base)
    found += tracking_problems(cfg.run.tracking_uri, probe=probe)
    found += sources_problems(cfg, running)
    return found


def exit_code(problems: list[Problem]) -> int:
    """What the CLI exits with: configuration (2) before missing inputs (3), as a config
    fix may change which inputs are needed; 0 when there is none."""
    codes = {p.code for p in problems}
    return CONFIG if CONFIG in codes else min(codes, default=0)


def setup_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that creating the tracker or reading the store raise for a bad place
    (not a bug of ours): the CLI turns them into one line and exit code 2, no traceback."""
    found: list[type[BaseException]] = [OSError]
    try:
        from mlflow.exceptions import MlflowException

        found.append(MlflowException)
    except ImportError:
        pass
    try:
        from sqlalchemy.exc import SQLAlchemyError

        found.append(SQLAlchemyError)
    except ImportError:
        pass
    try:
        from botocore.exceptions import BotoCoreError, ClientError

        found += [BotoCoreError, ClientError]
    except ImportError:
        pass
    return tuple(found)
