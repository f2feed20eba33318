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


def _stand_in_with_feedback(tmp_path):
    """A saved Nugget model whose type embeddings are non-zero (a trained one's are)."""
    from nugget_core import NuggetModel

    _, tok_dir = make_mt_artifacts(tmp_path)
    _nugget(AutoTokenizer.from_pretrained(tok_dir), 0.5, 1, 0, tmp_path / "model")
    model = NuggetModel.from_pretrained(tmp_path / "model")
    with torch.no_grad():
        model.scorer.type_embeddings.weight.normal_(std=1.0)
    model.save_pretrained(tmp_path / "model")
    return System(name="n", kind="nugget", model_dir=tmp_path / "model", objective="mt", source="test",
                  ratio=0.5, scorer_layer=1, selector="topk", feedback=True)


def test_colbart_reads_a_plain_encoder_not_the_nugget_pass(tmp_path):
    """Nugget §6.1.2: ColBART is the encoder's last hidden states. The stand-in (no
    pretrained encoder offline) reads the Nugget model's HF weights without its type
    embeddings; the old code ran the Nugget pass at ratio 1, feedback on every token."""
    from transformers import AutoModelForSeq2SeqLM

    system = _stand_in_with_feedback(tmp_path)
    vectors = load_system(system, "colbart").vectors(TEXTS[:2], batch_size=2)
    plain = AutoModelForSeq2SeqLM.from_pretrained(system.model_dir).eval()
    tok = AutoTokenizer.from_pretrained(system.model_dir)
    for text, vec in zip(TEXTS[:2], vectors, strict=True):
        with torch.no_grad():
            expected = plain.get_encoder()(**tok([text], return_tensors="pt")).last_hidden_state[0]
        torch.testing.assert_close(vec, expected)


def test_colbart_is_the_pretrained_encoder_when_there_is_one(tmp_path):
    from types import SimpleNamespace

    from stages.evaluate.eval_similarity import colbart_source

    stand_in = _stand_in_with_feedback(tmp_path)
    pretrained = SimpleNamespace(source="pretrained", name_or_path=str(tmp_path / "pretrained"))
    pretrained_dir = tmp_path / "pretrained"
    load_system(stand_in, "colbart").model.save_pretrained(pretrained_dir)
    AutoTokenizer.from_pretrained(stand_in.model_dir).save_pretrained(pretrained_dir)
    chosen = colbart_source([stand_in], pretrained)
    assert (chosen.kind, chosen.name) == ("pretrained", f"pretrained:{tmp_path / 'pretrained'}")
    assert len(load_system(chosen, "colbart").vectors(TEXTS[:1], batch_size=1)[0]) > 3  # one per token
    assert colbart_source([stand_in], SimpleNamespace(source="tiny_random", name_or_path="")) is stand_in
