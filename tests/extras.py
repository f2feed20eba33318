"""What the suite does where an optional extra is not installed (``make test`` passes with and
without them)."""

from __future__ import annotations

from stages.nugget2d.harness.run import harness_missing

# Without lm-evaluation-harness (no harness extra), a test that plans a whole profile plans it
# with eval_harness off: on, the preflight stops at the missing extra (docs/harness.md).
HARNESS_OFF: list[str] = ["eval.harness.enabled=false"] if harness_missing() else []
