"""The restorable-embeddings (RE) study: its data, training stages and tasks, and evaluation stages."""
