"""The Nugget study (encoder-decoder Nugget): its data, training, sweep, baselines, evaluation and the
Nugget LM stages, with their tasks and recipes."""
