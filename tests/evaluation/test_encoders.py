"""Batched encoding / decoding of a system returns each text's result in input order,
whatever the length-sorted batches (`stages.nugget.encoders`)."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer

from stages.nugget.encoders import length_batches, load_system
from stages.nugget.systems import System
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

    from stages.nugget.eval_similarity import colbart_source

    stand_in = _stand_in_with_feedback(tmp_path)
    pretrained = SimpleNamespace(source="pretrained", name_or_path=str(tmp_path / "pretrained"))
    pretrained_dir = tmp_path / "pretrained"
    load_system(stand_in, "colbart").model.save_pretrained(pretrained_dir)
    AutoTokenizer.from_pretrained(stand_in.model_dir).save_pretrained(pretrained_dir)
    chosen = colbart_source([stand_in], pretrained)
    assert (chosen.kind, chosen.name) == ("pretrained", f"pretrained:{tmp_path / 'pretrained'}")
    assert len(load_system(chosen, "colbart").vectors(TEXTS[:1], batch_size=1)[0]) > 3  # one per token
    assert colbart_source([stand_in], SimpleNamespace(source="tiny_random", name_or_path="")) is stand_in


def _mbart_system(tmp_path, objective: str, codes: tuple[str, str], bottleneck: bool) -> System:
    """A random tiny mBART saved as train_nugget / train_baselines save one: the tokenizer
    beside it carries the codes it was trained with."""
    from transformers import MBartConfig, MBartForConditionalGeneration

    from nugget_core import NuggetConfig, get_nugget_model
    from nugget_core.baselines import BottleneckConfig, get_bottleneck_model
    from stages.common.languages import set_language_codes
    from tests.training.fixtures import make_mbart50_tokenizer

    tok = AutoTokenizer.from_pretrained(make_mbart50_tokenizer(tmp_path / "tok"))
    set_language_codes(tok, *codes)
    torch.manual_seed(0)
    base = MBartForConditionalGeneration(MBartConfig(
        vocab_size=len(tok), d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
        pad_token_id=tok.pad_token_id, bos_token_id=0, eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.eos_token_id, forced_eos_token_id=None, dropout=0.0))
    model = (get_bottleneck_model(base, BottleneckConfig(decoder="cross")) if bottleneck
             else get_nugget_model(base, NuggetConfig(ratio=0.5, scorer_layer=0)))
    model.save_pretrained(tmp_path / "model")
    tok.save_pretrained(tmp_path / "model")
    if bottleneck:
        return System(name="b", kind="bottleneck", model_dir=tmp_path / "model", objective=objective, source="test",
                      decoder="cross")
    return System(name="n", kind="nugget", model_dir=tmp_path / "model", objective=objective, source="test",
                  ratio=0.5, scorer_layer=0, selector="topk", feedback=True)


@pytest.mark.parametrize(("objective", "codes"), [("ae", ("en_XX", "en_XX")), ("mt", ("en_XX", "zh_CN"))])
@pytest.mark.parametrize("bottleneck", [False, True])
def test_decoding_starts_with_the_code_the_model_was_trained_to_write(tmp_path, objective, codes, bottleneck):
    """eval_reconstruction's beam search writes, after the decoder start, the target code
    of the model's training labels (mBART-50: `NuggetTask.language_codes`): an untrained
    decoder left to itself starts with any token."""
    loaded = load_system(_mbart_system(tmp_path, objective, codes, bottleneck))
    generated = []
    generate = loaded.model.generate

    def recording(*args, **kwargs):
        generated.append(generate(*args, **kwargs))
        return generated[-1]

    loaded.model.generate = recording
    loaded.decode(TEXTS[:3], batch_size=2, num_beams=2, max_new_tokens=4)
    code = loaded.tokenizer.convert_tokens_to_ids(codes[1])
    for ids in generated:
        assert ids[:, 0].eq(loaded.tokenizer.eos_token_id).all()  # mBART's decoder start
        assert ids[:, 1].eq(code).all(), loaded.tokenizer.convert_ids_to_tokens(ids[:, 1])
