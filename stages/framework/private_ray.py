"""Whether the pipeline runs on the private local Ray its CLI started.

`pipelines.cli` starts that Ray without a dashboard (``include_dashboard=False``: a
faster start, docs/environment-notes.md), and so without the state API some Ray
components assume. The CLI marks
its process (:func:`mark`), and every stage task gets the mark in its environment
(:func:`runtime_env_vars`, the executor's per-task runtime env, which the actors a stage
starts inherit), so code in a stage can tell (:func:`is_private`).
"""

from __future__ import annotations

import os

ENV = "NUGGET_PRIVATE_RAY"


def mark() -> None:
    """This process started the private Ray the pipeline runs on."""
    os.environ[ENV] = "1"


def is_private() -> bool:
    return os.environ.get(ENV, "0") == "1"


def runtime_env_vars() -> dict[str, str]:
    """The mark, for the environment of every stage task."""
    return {ENV: "1" if is_private() else "0"}
