"""Evaluation group: the evaluation stages; ``nugget/`` holds the helpers of the
encoder-decoder evaluations, ``lm/`` those of the Nugget2D (decoder-only) ones."""
