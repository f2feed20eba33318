"""Calibration group: the autoregressive threshold Lambda (Nugget2D §2.5)."""
