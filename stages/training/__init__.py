"""The training runtime every training stage uses: the task protocol, the Ray Train loop, launch,
checkpoints, model cards."""
