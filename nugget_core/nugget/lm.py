"""`NuggetLM`: an encoder-decoder used as a language model that reads its distant
history through a compressed memory (Nugget §6.2, fig. 10; table 3).

The decoder reads the current window of tokens causally (its self-attention) and the
*memory* through its cross-attention: the ``h`` previous segments, each encoded on its
own and compressed, concatenated oldest first. What the memory holds is the system:

==============  ==============================================================================
``nugget``      the nuggets of each segment (`NuggetModel.encode` at ``ratio``), their scores
                added to the cross-attention logits as in training (eq. 5)
``mean``        one mean-pooled vector per segment (TSDAE, a `BottleneckModel`'s ``embed``)
``chunk_mean``  the encoder states of the segment's text mean-pooled in chunks of
                ``chunk_tokens`` tokens: the Compressive Transformer's "mean pooling"
                compression (Rae et al., 2020); the special tokens wrapped around the
                segment (``segment_wrap``) are read by the encoder but not pooled, so
                ``s`` tokens make ``ceil(s / chunk_tokens)`` vectors
``none``        nothing: the plain Transformer LM (the paper's h = 0 baseline)
==============  ==============================================================================

A window with no history (the start of a document, or ``memory="none"``) gets one
masked zero slot: its cross-attention then averages zero vectors (HF's masks add the
dtype's minimum, not -inf, so an all-masked row is uniform, not NaN), a constant that
carries no information, the same for every system.

Primary API::

    lm = NuggetLM(nugget_model, NuggetLMConfig(memory="nugget", ratio=0.05))
    batch = collate_windows(docs, windows, segment, history, ...)   # lm_windows
    loss = lm(**batch).loss
    lm.save_pretrained(d); lm = NuggetLM.from_pretrained(d)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import AutoModelForSeq2SeqLM, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput, Seq2SeqLMOutput

from ..baselines import BottleneckModel
from ..checkpoint import require_model_folder
from ..config_io import JsonConfig
from ..nuggets import Nuggets
from ..remote_code import refuse_remote_code
from ..typed_access import input_embedding
from .model import NuggetModel

LM_CONFIG_NAME = "nugget_lm_config.json"


class MemoryKind(StrEnum):
    NUGGET = "nugget"
    MEAN = "mean"
    CHUNK_MEAN = "chunk_mean"
    NONE = "none"


@dataclass
class NuggetLMConfig(JsonConfig):
    """What the decoder's memory holds (see the module docstring)."""

    file_name = LM_CONFIG_NAME  # a class attribute, not a field

    memory: str = "nugget"
    ratio: float | None = None
    """``nugget``: the nugget ratio of the history segments (None = the model's own)."""
    chunk_tokens: int = 16
    """``chunk_mean``: tokens per pooled vector (paper: 512 tokens into 32 vectors)."""
    segment_wrap: tuple[int, int] = (0, 0)
    """``chunk_mean``: how many special tokens the encoder's input has before / after each
    history segment's text (mBART-50: the language code, ``</s>``; `SpecialTokens`), which
    the pooling leaves out."""

    def __post_init__(self) -> None:
        self.memory = MemoryKind(self.memory).value
        wrap = tuple(self.segment_wrap)
        if len(wrap) != 2 or any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in wrap):
            raise ValueError(f"NuggetLMConfig.segment_wrap={self.segment_wrap!r} must be two ints >= 0 "
                             "(special tokens before / after a segment)")
        self.segment_wrap = (wrap[0], wrap[1])
        if self.ratio is not None and not 0.0 < self.ratio <= 1.0:
            raise ValueError(f"NuggetLMConfig.ratio={self.ratio!r} must be in (0, 1]")
        if self.chunk_tokens < 1:
            raise ValueError(f"NuggetLMConfig.chunk_tokens={self.chunk_tokens!r} must be >= 1")


def chunk_mean(
    hidden: torch.Tensor, mask: torch.Tensor, chunk: int, wrap: tuple[int, int] = (0, 0)
) -> tuple[torch.Tensor, torch.Tensor]:
    """``hidden [N, n, d]`` mean-pooled over the real tokens (``mask [N, n]``) of each run of
    ``chunk`` positions -> ``([N, ceil((n - wrap[0]) / chunk), d], mask [N, same])``; a chunk
    with no real token is a masked zero vector. ``wrap``: the first ``wrap[0]`` and last
    ``wrap[1]`` real positions of each row (its real tokens come first, padding after, as
    `collate_windows` lays a segment out) are special tokens, left out; chunks start
    after the leading ones."""
    if any(wrap):
        lengths = mask.ne(0).sum(dim=-1, keepdim=True)
        positions = torch.arange(mask.shape[1], device=mask.device)
        text = mask.ne(0) & (positions >= wrap[0]) & (positions < lengths - wrap[1])
        hidden, mask = hidden[:, wrap[0] :], text[:, wrap[0] :].long()
    n, d = hidden.shape[1], hidden.shape[2]
    pad = -n % chunk
    weights = nn.functional.pad(mask.to(hidden.dtype), (0, pad)).view(hidden.shape[0], -1, chunk, 1)
    states = nn.functional.pad(hidden, (0, 0, 0, pad)).view(hidden.shape[0], -1, chunk, d)
    counts = weights.sum(dim=2)
    pooled = (states * weights).sum(dim=2) / counts.clamp(min=1.0)
    return pooled, counts.squeeze(-1).gt(0).long()


class NuggetLM(nn.Module):
    """An HF seq2seq model (bare or inside `NuggetModel` / `BottleneckModel`) as an LM
    with a compressed memory of its history (see the module docstring)."""

    def __init__(self, model: NuggetModel | BottleneckModel | PreTrainedModel, config: NuggetLMConfig) -> None:
        super().__init__()
        kind = MemoryKind(config.memory)
        wants = {MemoryKind.NUGGET: NuggetModel, MemoryKind.MEAN: BottleneckModel}.get(kind, PreTrainedModel)
        if not isinstance(model, wants):
            raise TypeError(f"NuggetLM memory={kind.value!r} needs a {wants.__name__}, got {type(model).__name__}")
        # from here the model's class is the memory's: NuggetModel for nugget, BottleneckModel
        # for mean, an HF model (neither of the two: both wrap one) for the others
        if isinstance(model, BottleneckModel) and model.config.decoder != "cross":
            raise ValueError("NuggetLM memory='mean' needs a cross-attention decoder (TSDAE), not "
                             f"{model.config.decoder!r}: the gating decoder reads exactly one vector")
        self.config = config
        self.model = model
        self.seq2seq: PreTrainedModel = model if isinstance(model, PreTrainedModel) else model.base_model

    @property
    def device(self) -> torch.device:
        return self.seq2seq.device

    # --- memory -------------------------------------------------------------------

    def _encode_segments(self, ids: torch.Tensor, mask: torch.Tensor) -> Nuggets:
        """``ids / mask [N, S]`` (real segments) -> per-segment memory ``[N, m, d]``."""
        model = self.model  # its class is the memory's (__init__)
        if isinstance(model, NuggetModel):
            return model.encode(ids, mask, ratio=self.config.ratio)
        if isinstance(model, BottleneckModel):
            vectors = model.embed(ids, mask)[:, None, :]
            ones = torch.ones(vectors.shape[:2], dtype=torch.long, device=ids.device)
            return Nuggets(vectors, ones, torch.zeros(ones.shape, dtype=vectors.dtype, device=ids.device), ones * 0)
        hidden = self.seq2seq.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
        pooled, keep = chunk_mean(hidden, mask, self.config.chunk_tokens, self.config.segment_wrap)
        return Nuggets(pooled, keep, torch.zeros(keep.shape, dtype=pooled.dtype, device=ids.device), keep * 0)

    def memory(self, history_ids: torch.Tensor, history_mask: torch.Tensor) -> Nuggets:
        """The memory of each row of a batch: ``history_ids / history_mask [B, h, S]``
        (a segment with no real token is absent) -> `Nuggets` ``[B, h * m, d]`` (oldest
        segment first; ``scores`` only for ``nugget``, else zeros)."""
        rows, h = history_ids.shape[:2]
        if MemoryKind(self.config.memory) is MemoryKind.NONE:
            return self._empty(rows)
        present = history_mask.ne(0).any(dim=-1)  # [B, h]
        if not bool(present.any()):
            return self._empty(rows)
        # encode only the real segments, then scatter them back to their [B, h] slots
        enc = self._encode_segments(history_ids[present], history_mask[present])
        m, d = enc.encoding.shape[1], enc.encoding.shape[2]
        encoding = enc.encoding.new_zeros(rows, h, m, d)
        mask = enc.mask.new_zeros(rows, h, m)
        scores = enc.scores.new_zeros(rows, h, m)
        encoding[present], mask[present], scores[present] = enc.encoding, enc.mask, enc.scores
        return Nuggets(encoding.view(rows, h * m, d), mask.view(rows, h * m), scores.view(rows, h * m),
                       mask.new_zeros(rows, h * m))

    def _empty(self, rows: int) -> Nuggets:
        d = self.seq2seq.config.d_model
        dtype = input_embedding(self.seq2seq).weight.dtype
        zeros = torch.zeros(rows, 1, dtype=torch.long, device=self.device)
        return Nuggets(torch.zeros(rows, 1, d, dtype=dtype, device=self.device), zeros,
                       torch.zeros(rows, 1, dtype=dtype, device=self.device), zeros)

    # --- the LM -------------------------------------------------------------------

    def forward(
        self,
        decoder_input_ids: torch.Tensor,
        labels: torch.Tensor | None = None,
        history_ids: torch.Tensor | None = None,
        history_mask: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> Seq2SeqLMOutput:
        """Logits of the window ``decoder_input_ids [B, T]`` reading the memory of
        ``history_ids`` (loss with ``labels [B, T]``, -100 = not scored); any other
        keyword goes to the HF model."""
        if history_ids is None:
            memory = self._empty(decoder_input_ids.shape[0])
        elif history_mask is None:
            raise ValueError("pass history_mask with history_ids")
        else:
            memory = self.memory(history_ids, history_mask)
        call = dict(decoder_input_ids=decoder_input_ids, encoder_outputs=BaseModelOutput(last_hidden_state=memory.encoding),
                    attention_mask=memory.mask, labels=labels, **kwargs)
        if isinstance(self.model, NuggetModel):  # memory='nugget' (__init__)
            with self.model.score_context(memory):
                return self.seq2seq(**call)
        return self.seq2seq(**call)

    # --- persistence ----------------------------------------------------------------

    def save_pretrained(self, directory: str | Path) -> None:
        """The wrapped model's own ``save_pretrained`` and this config, in one folder."""
        directory = Path(directory)
        self.model.save_pretrained(directory)
        self.config.save(directory)

    @classmethod
    def from_pretrained(cls, directory: str | Path, **kwargs: Any) -> NuggetLM:
        """Load what `save_pretrained` wrote; ``kwargs`` go to the HF loader. A folder that
        is not a Nugget LM folder (e.g. a pipeline stage's output) gets an error naming the
        ones inside it."""
        directory = require_model_folder(directory, NuggetLMConfig.file_name, "Nugget LM")
        config = NuggetLMConfig.load(directory)
        kind = MemoryKind(config.memory)
        if kind is MemoryKind.NUGGET:
            model: NuggetModel | BottleneckModel | PreTrainedModel = NuggetModel.from_pretrained(directory, **kwargs)
        elif kind is MemoryKind.MEAN:
            model = BottleneckModel.from_pretrained(directory, **kwargs)
        else:
            model = AutoModelForSeq2SeqLM.from_pretrained(directory, **refuse_remote_code(kwargs))
        return cls(model, config)
