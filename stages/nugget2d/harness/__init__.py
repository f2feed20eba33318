"""Nugget2D and the training-free KV presses as an lm-evaluation-harness model
(docs/harness.md): `settings` (the model arguments, checked, and how a request's context
is split), `scoring` (the three request types on token ids), `lm` (the ``nugget2d`` model
registered with lm_eval; the only module that imports lm_eval at import time); and what the
``eval_harness`` stage builds on it: `tasks` (its local tasks), `run` (its calls of
lm_eval, imported inside them), `results` (its table and sample rows)."""
