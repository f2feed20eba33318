from __future__ import annotations

from tests.torch_threads import one_thread  # noqa: F401  (autouse in this package)
