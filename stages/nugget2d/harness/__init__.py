"""Nugget2D and the KV presses under EleutherAI's lm-evaluation-harness: the model class
(``lm.py``, the one module importing lm_eval) and what ``eval_harness`` builds on it (its local
tasks, its runs and its table). docs/harness.md."""
