"""Credentials out of what is logged: ``scheme://user:secret@host`` and secret query
parameters (``?token=...``, ``X-Amz-Signature=...``) become ``***``.

Applied to every param, tag and text the pipeline sends to MLflow, so a URI such as
``run.tracking_uri=https://user:pw@mlflow`` or a presigned ``run.artifact_root`` is
recorded without its secret. The config itself is not changed: the processes still use
the real values.
"""

from __future__ import annotations

import re

REDACTED = "***"
# user:password@ (or a lone token@) right after a URI scheme
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<info>[^/\s@:]*(?::[^/\s@]*)?)@")
_SECRET_PARAM = re.compile(
    r"(?P<name>[?&;](?:[^=&\s]*(?:token|secret|password|passwd|signature|credential|apikey|api_key|"
    r"access_key|sig|key))=)(?P<value>[^&\s#]*)",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """``text`` with URI credentials and secret query values replaced by ``***``."""
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    return _SECRET_PARAM.sub(lambda m: f"{m['name']}{REDACTED}", text)
