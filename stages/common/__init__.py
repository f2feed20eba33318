"""Helpers shared by several DAG groups (data, training, evaluation): prompt cutting,
task-record reading, progress lines and table rendering. Nothing here is a stage."""
