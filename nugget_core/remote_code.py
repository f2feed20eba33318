"""Custom code in model folders: refused, never asked about.

A model or tokenizer folder whose ``config.json`` / ``tokenizer_config.json`` has an
``auto_map`` names Python files that transformers' ``Auto*`` loaders import. With
``trust_remote_code`` unset they *ask* on stdin ("Do you wish to run the custom code?
[y/N]", 15 s): inside a pipeline stage or a training worker nobody can answer, and the
prompt lands in a log. Every ``Auto*`` load of this project passes ``trust_remote_code``
explicitly, False unless the caller of a library function passes True itself.
"""

from __future__ import annotations

from typing import Any


def refuse_remote_code(hf_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``hf_kwargs`` for a transformers ``Auto*`` load, with ``trust_remote_code=False``
    unless the caller set it: a folder with custom code is refused, not asked about."""
    return {"trust_remote_code": False, **hf_kwargs}
