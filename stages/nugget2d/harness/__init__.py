"""Nugget2D and the training-free KV presses as an lm-evaluation-harness model
(docs/harness.md): `settings` (the model arguments, checked, and how a request's context
is split), `scoring` (the three request types on token ids), `lm` (the ``nugget2d`` model
registered with lm_eval; the only module that imports lm_eval)."""
