"""``nugget eval``: score a trained checkpoint with the evaluation stages' own recipes, on the
pipeline's data or a JSONL file, with 95% intervals, per-example rows and degenerate-output
flags (docs/nugget_eval.md)."""
