"""Texts -> vectors and texts -> decoded texts, for every kind of evaluated system.

- ``nugget``: the nuggets (``Nuggets.encoding``, after the value projection), one vector
  per selected token; rule-based selectors get their flags from the tokens (chunking:
  commas and periods, §7.1; sentence: sentence-final punctuation, as PI/RR documents carry no
  sentence lists);
- ``colbart``: every last-layer state of a plain encoder (ColBART, Nugget §6.1.2: "the
  last hidden states of the encoder"): the pretrained model of ``model.seq2seq``
  (``kind="pretrained"``), or, where there is none (``tiny_random``), a trained Nugget
  model's HF weights with the Nugget parts unloaded (no type embeddings, no selection);
- ``bottleneck``: the one mean-pooled vector (TSDAE, RE).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from stages.common.device import place_model, to_device
from stages.common.languages import target_code_id
from stages.nugget.systems import System

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

SENTENCE_END = set(".!?。！？")


def batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def length_batches(texts: Sequence[str], size: int) -> Iterator[list[int]]:
    """Indices of ``texts`` in batches of ``size``, shortest texts first: a batch pads to
    its longest text, so grouping similar lengths saves the padded positions' work
    (results go back to the input order by index)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    yield from (list(chunk) for chunk in batches(order, size))


@dataclass
class LoadedSystem:
    """A system's model and tokenizer, ready for `vectors` / `decode`."""

    system: System
    mode: str  # nugget | colbart | bottleneck
    model: Any
    tokenizer: PreTrainedTokenizerBase
    max_length: int
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    _flags: dict[str, set[int]] = field(default_factory=dict)

    def tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Padded ids and mask of ``texts``, on the model's device."""
        return self.padded(self.token_ids(texts))

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids of each text, truncated to ``max_length`` (one tokenizer call for them all)."""
        return list(self.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"])

    def padded(self, ids: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        """``ids`` padded as the tokenizer pads a batch (its side and pad id), on the model's device."""
        enc = self.tokenizer.pad({"input_ids": [list(i) for i in ids]}, return_tensors="pt", padding=True)
        return to_device({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}, self.device)

    def _boundary_mask(self, input_ids: torch.Tensor) -> torch.Tensor | None:
        from nugget_core import chunk_token_ids, punctuation_token_ids, token_flags

        selector = self.system.selector
        if self.mode != "nugget" or selector == "topk":
            return None
        if selector not in self._flags:
            self._flags[selector] = (punctuation_token_ids(self.tokenizer, SENTENCE_END) if selector == "sentence"
                                     else chunk_token_ids(self.tokenizer))
        return token_flags(input_ids, self._flags[selector])

    @torch.no_grad()
    def encode(self, texts: Sequence[str], ids: Sequence[Sequence[int]] | None = None
               ) -> tuple[Any, dict[str, torch.Tensor]]:
        """Raw encoder result of one batch: `Nuggets`, hidden states, or vectors (``ids``: the
        texts' ids when tokenised already, `token_ids`)."""
        enc = self.tokenize(texts) if ids is None else self.padded(ids)
        if self.mode == "bottleneck":
            return self.model.embed(**enc), enc
        if self.mode == "colbart":  # a plain HF encoder-decoder (load_system)
            return self.model.get_encoder()(**enc).last_hidden_state, enc
        return self.model.encode(**enc, boundary_mask=self._boundary_mask(enc["input_ids"])), enc

    def vectors(self, texts: Sequence[str], batch_size: int) -> list[torch.Tensor]:
        """One ``[k_i, d]`` fp32 CPU tensor per text (k_i = 1 for single-vector systems):
        the scoring of every candidate against a query happens there."""
        out: list[torch.Tensor] = [torch.empty(0, device="cpu")] * len(texts)
        ids = self.token_ids(texts)  # one tokenizer call: per batch, its fixed cost dominated the encoding
        for chunk in length_batches(texts, batch_size):
            result, enc = self.encode([texts[i] for i in chunk], [ids[i] for i in chunk])
            if self.mode == "bottleneck":
                found = [v[None, :] for v in result]
            elif self.mode == "colbart":
                found = [h[m.bool()] for h, m in zip(result, enc["attention_mask"], strict=True)]
            else:
                found = [e[m.bool()] for e, m in zip(result.encoding, result.mask, strict=True)]
            for i, v in zip(chunk, to_device(found, "cpu"), strict=True):
                out[i] = v.float()
        return out

    @torch.no_grad()
    def decode(self, texts: Sequence[str], batch_size: int, num_beams: int, max_new_tokens: int) -> list[str]:
        """Texts generated from each text's encoding with beam search. With a multilingual
        tokenizer (mBART-50) the first token written is the code the model's labels started
        with in training (its saved tokenizer's ``tgt_lang``, `stages.common.languages`)."""
        if self.mode == "colbart":
            raise ValueError("ColBART is a similarity system only: it has no decoder of its own")
        out: list[str] = [""] * len(texts)
        code = target_code_id(self.tokenizer)
        for chunk in length_batches(texts, batch_size):
            enc = self.tokenize([texts[i] for i in chunk])
            kwargs: dict[str, Any] = {"num_beams": num_beams, "max_new_tokens": max_new_tokens}
            if code is not None:
                kwargs["forced_bos_token_id"] = code
            if self.mode == "nugget":
                kwargs["boundary_mask"] = self._boundary_mask(enc["input_ids"])
            ids = self.model.generate(**enc, **kwargs)
            for i, text in zip(chunk, self.tokenizer.batch_decode(ids, skip_special_tokens=True), strict=True):
                out[i] = text.strip()
        return out


def load_system(system: System, mode: str | None = None, device: str = "cpu", precision: str = "fp32") -> LoadedSystem:
    """Load ``system`` (``mode="colbart"`` to use a Nugget model's full encoder) on
    ``device`` with its weights in ``precision`` (``eval.dtype``)."""
    from transformers import AutoTokenizer

    mode = mode or system.kind
    if mode == "colbart" and system.kind not in ("nugget", "pretrained"):
        raise ValueError(f"ColBART reads a pretrained or a Nugget model's encoder, not a {system.kind}")
    if system.kind == "pretrained":  # hub name or local folder (model.seq2seq)
        from transformers import AutoModelForSeq2SeqLM

        model = AutoModelForSeq2SeqLM.from_pretrained(str(system.model_dir), trust_remote_code=False)
    elif system.kind == "bottleneck":
        from nugget_core.baselines import BottleneckModel

        model = BottleneckModel.from_pretrained(system.model_dir)
    else:
        from nugget_core import NuggetModel

        model = NuggetModel.from_pretrained(system.model_dir)
        if mode == "colbart":
            model = model.unload()  # the plain HF model: no type embeddings, no selection
    tokenizer = AutoTokenizer.from_pretrained(str(system.model_dir), trust_remote_code=False)
    config = getattr(model, "base_model", model).config
    max_length = int(getattr(config, "max_position_embeddings", 1024))
    return LoadedSystem(system, mode, place_model(model, device, precision), tokenizer, max_length,
                        torch.device(device))
