"""DAG stages of nugget-pipeline: one module per stage plus the framework that runs them.

Each stage is a pure function of its declared config sections and upstream artifacts,
cached by content hash under ``run.artifact_root`` and recorded as an MLflow child run.
Dependency direction: ``pipelines -> stages -> nugget_core``.
"""
