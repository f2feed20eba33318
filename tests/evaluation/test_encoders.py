"""Batched encoding / decoding of a system returns each text's result in input order,
whatever the length-sorted batches (`stages.evaluate.nugget.encoders`)."""

from __future__ import annotations

import torch
from transformers import AutoTokenizer

from stages.evaluate.nugget.encoders import length_batches, load_system
from stages.evaluate.nugget.systems import System
from tests.evaluation.fixtures import _nugget
from tests.training.fixtures import make_mt_artifacts

TEXTS = ["a big red dog ran on the mat and it was small.", "the cat.", "one two mat rug.",
         "it was a dog.", "red blue big small a one two and it was the cat dog sat ran on mat rug."]


def test_length_batches_cover_every_index_shortest_first():
    chunks = list(length_batches(TEXTS, 2))
    assert sorted(i for c in chunks for i in c) == list(range(len(TEXTS)))
    assert chunks[0] == [1, 3] and [len(c) for c in chunks] == [2, 2, 1]


def test_vectors_and_decodes_come_back_in_input_order(tmp_path):
    _, tok_dir = make_mt_artifacts(tmp_path)
    _nugget(AutoTokenizer.from_pretrained(tok_dir), 0.5, 1, 0, tmp_path / "model")
    system = System(name="n", kind="nugget", model_dir=tmp_path / "model", objective="ae", source="test",
                    ratio=0.5, scorer_layer=1, selector="topk", feedback=True)
    loaded = load_system(system)
    batched = loaded.vectors(TEXTS, batch_size=2)
    for text, vec in zip(TEXTS, batched, strict=True):
        torch.testing.assert_close(vec, loaded.vectors([text], batch_size=1)[0], atol=1e-5, rtol=1e-4)
    decoded = loaded.decode(TEXTS, batch_size=2, num_beams=1, max_new_tokens=6)
    assert decoded == [loaded.decode([t], batch_size=1, num_beams=1, max_new_tokens=6)[0] for t in TEXTS]
