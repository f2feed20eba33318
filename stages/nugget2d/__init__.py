"""The Nugget2D study (decoder-only Nugget2D): its LM data, training stages and tasks, the threshold
calibration and the evaluation stages."""
