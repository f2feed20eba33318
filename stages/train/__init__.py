"""Distributed training on Ray Train shared by the training stages and the Tune sweep.

- :mod:`.batches`   deterministic, resumable batching of tokenised examples per rank
- :mod:`.engine`    DDP or DeepSpeed ZeRO-2 behind one interface (step, save, load)
- :mod:`.loop`      the per-worker loop: steps, LR schedule, eval, early stopping,
                    checkpoints, MLflow logging from rank 0
- :mod:`.launch`    builds and fits a ``TorchTrainer`` for a task
- :mod:`.process_group` the fit's torch process group, listening on the node address only
- :mod:`.nugget_task` the Nugget encoder-decoder task (model, batches, loss, export)
"""
