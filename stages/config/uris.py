"""What the config can tell about ``run.artifact_root`` and ``run.tracking_uri`` without
touching them: the URI scheme, local or remote, and credentials kept out of messages.

Checked at config load (`RunSection.cross_field_errors`); what needs a file write or a
request (a writable root, a server that answers) is `stages.framework.preflight`'s.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

# what MLflow 3.x's tracking store registry accepts (mlflow.tracking._tracking_service.utils
# ._tracking_store_registry; tests/framework/test_bad_input.py compares); a URI without a
# scheme is a local path, i.e. file
TRACKING_SCHEMES = ("http", "https", "sqlite", "file", "databricks", "databricks-uc", "uc",
                    "postgresql", "mysql", "mssql")
_BARE_SCHEMES = ("databricks", "databricks-uc", "uc")  # a profile name, not scheme://...
LOCAL_ROOT_SCHEMES = ("", "file", "local")  # fsspec's local file system


def tracking_scheme(uri: str) -> str:
    """The scheme MLflow picks the store by (``postgresql+psycopg2`` -> ``postgresql``)."""
    if uri in _BARE_SCHEMES:
        return uri
    return urlsplit(uri).scheme.split("+", 1)[0].lower() or "file"


def sqlite_file(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` tracking URI (``sqlite:////abs/file.db``,
    ``sqlite:///relative.db``); None for any other store and for an in-memory one."""
    prefix = "sqlite:///"
    path = tracking_uri[len(prefix):] if tracking_uri.startswith(prefix) else ""
    return Path(path) if path and path != ":memory:" else None


def is_remote_root(root: str) -> bool:
    """Whether ``run.artifact_root`` names an object store (s3://, gs://...), not a folder."""
    return urlsplit(root).scheme.lower() not in LOCAL_ROOT_SCHEMES


def shown(uri: str) -> str:
    """``uri`` without the password of its user part, for messages."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    netloc = f"{parts.username}:***@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def run_uri_errors(artifact_root: str, tracking_uri: str) -> list[str]:
    """``run.tracking_uri`` against MLflow's schemes and the artifact root (messages start
    with the key relative to ``run``)."""
    remote = is_remote_root(artifact_root)
    if not tracking_uri:
        if remote:
            return [f"tracking_uri: must be set (e.g. http://head:5000) when run.artifact_root={shown(artifact_root)} "
                    "is not a local directory"]
        return []
    scheme = tracking_scheme(tracking_uri)
    if scheme not in TRACKING_SCHEMES:
        return [f"tracking_uri: {shown(tracking_uri)!r} has the scheme {scheme!r}, which MLflow cannot track to; "
                f"supported: {', '.join(TRACKING_SCHEMES)}"]
    if scheme == "sqlite" and remote:
        return [f"tracking_uri: {shown(tracking_uri)!r} is a sqlite file, but run.artifact_root="
                f"{shown(artifact_root)} is remote: workers on other nodes cannot share one sqlite file; "
                "use an MLflow server (http://HOST:PORT)"]
    return []
