"""PEP 562 lazy exports: a package's public names resolve on first access.

``import nugget_core`` (or ``from nugget_core import NuggetConfig``) then imports only the
module that defines the requested name, so light names (configs, specs) do not pull in
torch / transformers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, table: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` exporting ``name -> .module`` of ``table``.

    Module paths are relative to ``package`` (``".nugget.config"``). A resolved name is
    cached in the package namespace, so each lookup happens once.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        importlib.import_module(package).__dict__[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*importlib.import_module(package).__dict__, *table})

    return __getattr__, __dir__
