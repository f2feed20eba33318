"""The training runtime every training stage uses (Ray Train):

- ``task``: the `TrainingTask` protocol a study's task implements;
- ``batches``: deterministic, resumable batching of tokenised examples per rank;
- ``engine``: DDP or DeepSpeed ZeRO-2 behind one interface (``deepspeed_checkpoints``);
- ``loop``: the per-worker loop: steps, LR schedule, eval, early stopping, checkpoints,
  MLflow logging from rank 0;
- ``launch``: builds and fits a ``TorchTrainer`` for a task (``ray_trainer``,
  ``process_group``: the fit's torch process group, on the node address only);
- ``sequence``: several models in one fit; ``storage``: run storage; ``model_card``
  (``model_card_usage``; ``mlflow_model``: the pyfunc wrapper of a model folder).
"""
