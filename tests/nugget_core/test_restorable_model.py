"""RestorableModel on tiny BART (the pipeline's, untied embeddings) and tiny T5 (tied):
poolings, freezing, extra layers, the three decoders, cached decoding, generation and
persistence."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn
from transformers import T5Config, T5ForConditionalGeneration
from transformers.modeling_outputs import BaseModelOutput
from transformers.models.bart.modeling_bart import BartAttention
from transformers.models.t5.modeling_t5 import T5LayerCrossAttention

from nugget_core import TinyBartSpec, build_tiny_bart, train_bpe_tokenizer
from nugget_core.restorable import (
    DecoderKind,
    GatingLayer,
    RestorableConfig,
    RestorableModel,
    get_restorable_model,
)
from nugget_core.restorable.generate import beam_search

TEXTS = ["the cat sat on the mat.", "a dog ran, and the cat sat on a red rug.", "red mat, blue rug."] * 20
FAMILIES = ("bart", "t5")
# Tiny matmuls on shared cores: thread hand-offs dominate (see conftest's one_thread).
pytestmark = pytest.mark.usefixtures("one_thread")
DECODERS = tuple(kind.value for kind in DecoderKind)


@pytest.fixture(scope="module")
def tok():
    return train_bpe_tokenizer(TEXTS, vocab_size=300)


def build_base(family: str, tok, tied: bool = False):
    """Dropout-free tiny models; T5 always shares one embedding table (encoder, decoder, head)."""
    if family == "bart":
        spec = TinyBartSpec(d_model=32, layers=2, heads=4, ffn_dim=64, dropout=0.0, tie_embeddings=tied)
        return build_tiny_bart(tok, spec, seed=0)
    torch.manual_seed(0)
    config = T5Config(
        d_model=32, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4, d_kv=8, vocab_size=len(tok),
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, decoder_start_token_id=tok.pad_token_id,
        dropout_rate=0.0,
    )
    return T5ForConditionalGeneration(config)


def build(family: str, tok, **config) -> RestorableModel:
    torch.manual_seed(0)
    return get_restorable_model(build_base(family, tok), RestorableConfig(**config))


def batch(tok, texts=TEXTS[:2]):
    """Right-padded passages (lengths differ) and their targets padded with -100."""
    enc = tok(list(texts), return_tensors="pt", padding=True)
    labels = enc.input_ids.masked_fill(enc.attention_mask == 0, -100)
    assert (enc.attention_mask == 0).any()
    return enc.input_ids, enc.attention_mask, labels


# --- encoder: poolings, extra layers, freezing ---------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_cls_pooling_is_w_h_at_a_prepended_learned_vector(tok, family):
    model = build(family, tok, pooling="cls").eval()
    ids, mask, _ = batch(tok)
    seen = {}
    hook = model.encoder.backbone.register_forward_hook(lambda m, a, kw, out: seen.update(kw), with_kwargs=True)
    e_repr = model.embed(ids, mask)
    hook.remove()
    token_embeddings = model.encoder.backbone.get_input_embeddings()(ids)  # BART: with its embed_scale
    fed = seen["inputs_embeds"]
    torch.testing.assert_close(fed[:, 0], model.encoder.cls.expand(2, -1))
    torch.testing.assert_close(fed[:, 1:], token_embeddings)
    assert seen["attention_mask"][:, 0].tolist() == [1, 1] and torch.equal(seen["attention_mask"][:, 1:], mask)
    hidden, _ = model.encoder.contextualize(ids, mask)
    torch.testing.assert_close(e_repr, model.encoder.proj(hidden[:, 0]))
    assert e_repr.shape == (2, 32)


@pytest.mark.parametrize("family", FAMILIES)
def test_mean_pooling_divides_the_sum_by_sqrt_t(tok, family):
    model = build(family, tok, pooling="mean").eval()
    ids, mask, _ = batch(tok)
    hidden, _ = model.encoder.contextualize(ids, mask)
    e_repr = model.embed(ids, mask)
    for row in range(2):
        t = int(mask[row].sum())
        expected = model.encoder.proj(hidden[row, :t].sum(dim=0) / math.sqrt(t))
        torch.testing.assert_close(e_repr[row], expected)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_padded_batch_equals_examples_one_by_one(tok, family, pooling):
    model = build(family, tok, pooling=pooling, extra_layers=2).eval()
    ids, mask, _ = batch(tok)
    with torch.no_grad():
        together = model.embed(ids, mask)
        for row in range(2):
            t = int(mask[row].sum())
            alone = model.embed(ids[row : row + 1, :t], mask[row : row + 1, :t])
            torch.testing.assert_close(together[row : row + 1], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_extra_layers_are_new_transformer_layers_that_change_the_output(tok, family):
    plain = build(family, tok, extra_layers=0).eval()
    extra = build(family, tok, extra_layers=3).eval()
    layers = extra.encoder.extra_layers
    assert len(layers) == 3 and all(isinstance(layer, nn.TransformerEncoderLayer) for layer in layers)
    settings = {"bart": (4, 64), "t5": (4, 64)}[family]  # heads, ffn of the base encoder
    assert (layers[0].self_attn.num_heads, layers[0].linear1.out_features) == settings
    extra.encoder.proj.load_state_dict(plain.encoder.proj.state_dict())
    ids, mask, _ = batch(tok)
    with torch.no_grad():
        assert not torch.allclose(plain.embed(ids, mask), extra.embed(ids, mask), atol=1e-3)
    assert len(plain.encoder.extra_layers) == 0


def _encoder_names(model: RestorableModel) -> set[str]:
    """Names (as ``named_parameters`` reports them) of the pretrained encoder's parameters."""
    backbone = {id(p) for p in model.encoder.backbone.parameters()}
    return {name for name, p in model.named_parameters() if id(p) in backbone}


@pytest.mark.parametrize(
    ("family", "tied", "freeze_embedding", "embedding_frozen"),
    [("bart", False, True, True), ("bart", False, False, True),  # untied: frozen either way
     ("bart", True, True, True), ("t5", True, True, True),  # tied: the encoder's own frozen copy
     ("bart", True, False, False), ("t5", True, False, False)],  # tied, shared: it trains with the decoder
)
@pytest.mark.parametrize("extra_layers", [0, 3])  # table 1 (b) and (d)
def test_freezing_stops_exactly_the_pretrained_encoder(tok, family, tied, freeze_embedding, embedding_frozen,
                                                       extra_layers):
    torch.manual_seed(0)
    base = build_base(family, tok, tied=tied)
    model = get_restorable_model(base, RestorableConfig(pooling="cls", extra_layers=extra_layers,
                                                        freeze_pretrained=True,
                                                        freeze_encoder_embedding=freeze_embedding))
    frozen = {name for name, p in model.named_parameters() if not p.requires_grad}
    encoder = _encoder_names(model)
    embedding = {name for name in encoder if "embed_tokens" in name or name.endswith("shared.weight")}
    assert len(embedding) == 1  # one table, reported under one name
    assert frozen == (encoder if embedding_frozen else encoder - embedding)
    # layers, norms and (BART) learned positions are among the frozen ones
    assert any(".layers.0." in n or ".block.0." in n for n in frozen)
    assert any("layer_norm" in n or "layernorm" in n for n in frozen)
    assert family != "bart" or any("embed_positions" in n for n in frozen)
    new = [n for n, _ in model.named_parameters() if n.startswith(("encoder.cls", "encoder.proj", "encoder.extra"))]
    assert len(new) == 2 + 12 * extra_layers and not frozen & set(new)
    unfrozen = get_restorable_model(build_base(family, tok, tied=tied), RestorableConfig())
    assert all(p.requires_grad for p in unfrozen.parameters())


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("extra_layers", [0, 3])  # table 1 (b) and (d)
def test_a_frozen_encoder_reads_the_same_input_embeddings_after_training(tok, family, extra_layers, tmp_path):
    """RE §4.2: in (b) only the projection can change the embedding. With a tied table
    (T5-small, as in the paper) the decoder's updates used to reach the encoder's inputs;
    the decoder side still trains, and a reload keeps the two tables apart."""
    torch.manual_seed(0)
    model = get_restorable_model(build_base(family, tok, tied=True),
                                 RestorableConfig(pooling="mean", decoder="cross", extra_layers=extra_layers,
                                                  freeze_pretrained=True))
    encoder_table = model.encoder.backbone.get_input_embeddings().weight
    decoder_table = model.base_model.get_decoder().get_input_embeddings().weight
    before = (encoder_table.detach().clone(), decoder_table.detach().clone())
    torch.testing.assert_close(before[0], before[1])  # a copy of the pretrained table
    _train(model, tok, steps=2)
    assert torch.equal(encoder_table, before[0])
    assert not torch.equal(decoder_table, before[1])
    model.save_pretrained(tmp_path / "m")
    reloaded = RestorableModel.from_pretrained(tmp_path / "m")
    assert torch.equal(reloaded.encoder.backbone.get_input_embeddings().weight, before[0])
    assert torch.equal(reloaded.base_model.get_decoder().get_input_embeddings().weight, decoder_table)


# --- decoders -------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("decoder", DECODERS)
def test_loss_and_gradients_reach_every_part(tok, family, decoder):
    model = build(family, tok, pooling="cls", decoder=decoder, extra_layers=1)
    ids, mask, labels = batch(tok)
    out = model(ids, mask, labels=labels)
    assert torch.isfinite(out.loss) and out.logits.shape == (*labels.shape, len(tok))
    expected = nn.functional.cross_entropy(out.logits[labels != -100], labels[labels != -100])
    torch.testing.assert_close(out.loss, expected)
    out.loss.backward()
    decoder_side = [model.base_model.get_decoder(), model.base_model.get_output_embeddings()]
    for module in [model.encoder, *decoder_side]:
        for name, p in module.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, name  # DDP: no unused parameters
    gating = [m for m in model.modules() if isinstance(m, GatingLayer)]
    assert len(gating) == (2 if decoder == "gating" else 0)


@pytest.mark.parametrize("family", FAMILIES)
def test_input_decoder_has_no_cross_attention(tok, family):
    model = build(family, tok, decoder="input")
    stack = model.base_model.get_decoder()
    names = [name for name, _ in stack.named_parameters()]
    assert not [n for n in names if "encoder_attn" in n or "EncDecAttention" in n]
    if family == "bart":
        assert all(not hasattr(layer, "encoder_attn") for layer in stack.layers)
        assert sum(isinstance(m, BartAttention) for m in stack.modules()) == len(stack.layers)  # self-attention only
    else:
        assert all(len(block.layer) == 2 for block in stack.block)
        assert not any(isinstance(m, T5LayerCrossAttention) for m in stack.modules())


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("decoder", ["cross", "gating"])
def test_cross_and_gating_logits_are_the_hf_models_over_one_vector(tok, family, decoder):
    """The same decoder inputs (HF's shift-right of the labels) and LM head as the HF forward."""
    model = build(family, tok, decoder=decoder).eval()
    if family == "bart":  # zero at init: make the LM head's bias count
        model.base_model.final_logits_bias.normal_()
    ids, mask, labels = batch(tok)
    with torch.no_grad():
        ours = model(ids, mask, labels=labels).logits
        e_repr = model.embed(ids, mask)
        hf = model.base_model(
            encoder_outputs=BaseModelOutput(last_hidden_state=e_repr[:, None]),
            attention_mask=torch.ones(2, 1, dtype=torch.long),
            labels=labels,
        ).logits
    real = labels != -100  # HF attends to padded decoder inputs, we mask them; real positions agree
    torch.testing.assert_close(ours[real], hf[real], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("decoder", "repr_dim"), [("input", None), ("cross", None), ("gating", None),
                                                   ("gating", 16)])
def test_cached_decoding_equals_the_full_forward(tok, family, decoder, repr_dim):
    model = build(family, tok, decoder=decoder, repr_dim=repr_dim).eval()
    ids, mask, labels = batch(tok)
    with torch.no_grad():
        full = model(ids, mask, labels=labels).logits
        e_repr = model.embed(ids, mask)
        assert e_repr.shape[-1] == (repr_dim or 32)
        session = model.decoder_side.session(e_repr)
        previous = labels.masked_fill(labels == -100, tok.pad_token_id)
        steps = [session.start()] + [session.step(previous[:, t - 1]) for t in range(1, labels.shape[1])]
    real = labels != -100
    torch.testing.assert_close(torch.stack(steps, dim=1)[real], full[real], atol=1e-5, rtol=1e-5)


def _train(model: RestorableModel, tok, steps: int = 40) -> RestorableModel:
    """A few steps on the batch, so that generation meets EOS (and the greedy test sees it)."""
    ids, mask, labels = batch(tok, TEXTS[:3])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        loss = model(ids, mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def _greedy_by_full_forward(model, ids, mask, max_new_tokens, eos, pad) -> list[list[int]]:
    """Argmax of a full teacher-forced forward over the tokens so far, one example at a time."""
    rows = []
    for row in range(ids.shape[0]):
        t = int(mask[row].sum())
        source = ids[row : row + 1, :t]
        tokens: list[int] = []
        for _ in range(max_new_tokens):
            labels = torch.tensor([tokens + [pad]])  # the last label is only predicted, never read
            tokens.append(int(model(source, torch.ones_like(source), labels=labels).logits[0, -1].argmax()))
            if tokens[-1] == eos:
                break
        rows.append(tokens)
    width = max(len(r) for r in rows)
    return [r + [pad] * (width - len(r)) for r in rows]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("decoder", DECODERS)
def test_greedy_generate_is_the_argmax_loop_and_beams_run(tok, family, decoder):
    model = _train(build(family, tok, decoder=decoder), tok)
    ids, mask, _ = batch(tok)
    eos, pad = tok.eos_token_id, tok.pad_token_id
    with torch.no_grad():
        greedy = model.generate(ids, mask, num_beams=1, max_new_tokens=20)
        expected = _greedy_by_full_forward(model, ids, mask, 20, eos, pad)
        beams = model.generate(ids, mask, num_beams=4, max_new_tokens=20)
    assert greedy.tolist() == expected
    assert any(eos in row for row in expected)  # the EOS / padding path was exercised
    assert beams.shape[0] == 2 and beams.dtype == torch.long and 0 < beams.shape[1] <= 20
    assert all(row[-1] in (eos, pad) or len(row) == 20 for row in beams.tolist())


class FullForwardDecoder:
    """`StepDecoder` without a cache: every step re-runs the teacher-forced forward on the
    row's whole prefix (beam search's reordering then only permutes plain lists)."""

    def __init__(self, model: RestorableModel, e_repr: torch.Tensor, pad: int) -> None:
        self.model, self.e_repr, self.pad = model, e_repr, pad
        self.prefixes: list[list[int]] = [[] for _ in range(e_repr.shape[0])]

    def _logits(self) -> torch.Tensor:
        labels = torch.tensor([prefix + [self.pad] for prefix in self.prefixes])
        return self.model.decoder_side.teacher_forced(self.e_repr, labels)[:, -1]

    def start(self) -> torch.Tensor:
        return self._logits()

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        self.prefixes = [prefix + [int(t)] for prefix, t in zip(self.prefixes, tokens, strict=True)]
        return self._logits()

    def reorder(self, rows: torch.Tensor) -> None:
        self.prefixes = [list(self.prefixes[r]) for r in rows.tolist()]
        self.e_repr = self.e_repr.index_select(0, rows)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("decoder", DECODERS)
def test_beam_search_over_the_cache_equals_beam_search_without_it(tok, family, decoder):
    """Beam reordering of the KV cache (and of the gating layers' running sums) is exact."""
    model = build(family, tok, decoder=decoder).eval()
    with torch.no_grad():  # an untrained model's argmax hardly depends on e_repr: stress the decoder side
        for p in model.base_model.get_decoder().parameters():
            p.mul_(3.0)
    ids, mask, _ = batch(tok)
    kwargs = dict(batch_size=2, num_beams=4, max_new_tokens=12, eos_token_id=tok.eos_token_id,
                  pad_token_id=tok.pad_token_id)
    with torch.no_grad():
        e_repr = model.embed(ids, mask).repeat_interleave(4, dim=0)
        cached = beam_search(model.decoder_side.session(e_repr), **kwargs)
        uncached = beam_search(FullForwardDecoder(model, e_repr, tok.pad_token_id), **kwargs)
        assert torch.equal(model.generate(ids, mask, num_beams=4, max_new_tokens=12), cached)
    assert torch.equal(cached, uncached)


# --- configuration errors, persistence ------------------------------------------------


@pytest.mark.parametrize("decoder", ["input", "cross"])
def test_repr_dim_other_than_d_model_needs_the_gating_decoder(tok, decoder):
    with pytest.raises(ValueError, match="repr_dim=16 != d_model=32"):
        build("bart", tok, decoder=decoder, repr_dim=16)


def test_unsupported_model_is_refused():
    from transformers import GPT2Config, GPT2LMHeadModel

    with pytest.raises(ValueError, match="model_type"):
        get_restorable_model(GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50)))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("decoder", DECODERS)
def test_save_and_reload_reproduce_logits_and_the_encoder(tok, family, decoder, tmp_path):
    pooling = "mean" if decoder == "cross" else "cls"
    model = build(family, tok, pooling=pooling, decoder=decoder, extra_layers=1).eval()
    ids, mask, labels = batch(tok)
    model.save_pretrained(tmp_path)
    again = RestorableModel.from_pretrained(tmp_path)
    assert not again.training and again.config == model.config
    encoder = RestorableModel.encoder_from_pretrained(tmp_path)
    tower = copy.deepcopy(model.encoder)  # the retrieval stage's DPR towers
    assert not any("decoder" in name for name, _ in tower.named_modules())
    with torch.no_grad():
        assert torch.equal(again(ids, mask, labels=labels).logits, model(ids, mask, labels=labels).logits)
        assert torch.equal(encoder(ids, mask), model.embed(ids, mask))
        assert torch.equal(tower(ids, mask), model.embed(ids, mask))


def test_from_pretrained_names_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="restorable.safetensors"):
        RestorableModel.from_pretrained(tmp_path)
