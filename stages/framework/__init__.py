"""The stage framework: contract, cache keys, artifact store, MLflow tracking, executor."""
