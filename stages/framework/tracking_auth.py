"""Credentials of an MLflow tracking server, held where MLflow reads them and nowhere else.

MLflow's HTTP client reads ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD`` (or
``MLFLOW_TRACKING_TOKEN``) from the environment at every request; that is the supported
way. ``run.tracking_uri=http://user:pw@host:port`` is accepted too: `use_credentials` (the
CLI right after the config loads, and every `Tracker`) moves the user info into those
variables of this process and leaves the bare URI, so nothing downstream holds the
password: not the preflight's messages, not MLflow's "View run ... at" lines (built from
the URI it is handed), not the run's params or ``config.yaml``, not the arguments of a Ray
task (which carry the config).

Ray: the private local Ray the CLI starts inherits the driver's environment, so every stage
task, Ray Train worker and Tune trial has the variables. They are never put into a
``runtime_env`` (Ray keeps runtime envs in its job and task tables, shown on the
dashboard) nor into a file. On a cluster the pipeline attaches to, they must be in the
environment of every node (exported before ``ray start``), as for any MLflow client; a
worker without them stops with a message saying so (`check_worker_credentials`).
"""

from __future__ import annotations

import base64
import os
from urllib.parse import unquote, urlsplit, urlunsplit

USER_ENV, PASSWORD_ENV, TOKEN_ENV = "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"


def split_userinfo(uri: str) -> tuple[str, str | None, str | None]:
    """``(uri without user info, user, password)``; user and password percent-decoded
    (as a browser or ``requests`` reads them), None where absent."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or "@" not in parts.netloc:
        return uri, None, None
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return urlunsplit(parts._replace(netloc=netloc)), user, password


def use_credentials(uri: str) -> str:
    """``uri`` without its user info, which goes into this process's environment as
    MLflow's credential variables (overriding any set there: the config is explicit)."""
    bare, user, password = split_userinfo(uri)
    if user:
        os.environ[USER_ENV] = user
    if password is not None:
        os.environ[PASSWORD_ENV] = password
    return bare


def has_credentials() -> bool:
    """Whether this process's environment holds MLflow credentials."""
    return bool(os.environ.get(USER_ENV) or os.environ.get(TOKEN_ENV))


def credentials_user(uri: str = "") -> str | None:
    """Whose credentials a request to ``uri`` carries: its user info's, else the
    environment's (None for a token or none)."""
    return split_userinfo(uri)[1] or os.environ.get(USER_ENV) or None


def auth_headers(uri: str = "") -> dict[str, str]:
    """The ``Authorization`` header MLflow would send to ``uri``: basic for the user
    info of ``uri``, else for the environment's user and password, else bearer for its
    token (for a request of our own, such as the preflight's probe)."""
    _, user, password = split_userinfo(uri)
    if not user:
        user, password = os.environ.get(USER_ENV), os.environ.get(PASSWORD_ENV)
    if user:
        pair = f"{user}:{password or ''}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode()}
    token = os.environ.get(TOKEN_ENV)
    return {"Authorization": f"Bearer {token}"} if token else {}


class MissingCredentials(RuntimeError):
    """A Ray worker must talk to a tracking server that needs credentials, and its
    environment has none."""


def check_worker_credentials(tracking_uri: str, needed: bool) -> None:
    """Raise `MissingCredentials` when the driver had credentials (``needed``) and this
    process has not: a worker on a cluster whose nodes were started without them."""
    if needed and not has_credentials():
        raise MissingCredentials(
            f"the MLflow server {tracking_uri} needs credentials, which the driver has but this Ray worker's "
            f"environment has not: export {USER_ENV} and {PASSWORD_ENV} on every Ray node before `ray start` "
            "(not in a job's runtime_env: Ray records it)"
        )
