"""Greedy decoding from a compressed context on a static cache (the inference hot path).

Why not the training-time passes: a decode step must cost what the plain LM's step
costs, or the KV that Nugget2D saves is eaten by overhead. So `StaticDecoder`

- preallocates one HF `StaticCache` of ``k + m + max_new`` slots (nuggets | packed
  prompt | generated tokens) and writes the nuggets' KV into it once;
- builds the additive attention mask ``[batch, 1, 1, slots]`` once (visibility and the
  nugget residual bias, `bias.nugget_attention_mask`); a step only opens its own slot,
  in place, at the cache's device-side length (no per-step mask rebuild, no host sync);
- keeps the step's inputs (token ids, positions, finished flags) in fixed buffers, so
  the whole step (forward, argmax, EOS bookkeeping) can be captured once as a CUDA graph
  and replayed: one launch per token instead of thousands;
- expects the adapter folded into the weights (`AdapterRouter.merged`), so a step runs
  no LoRA matmul.

The tokens equal those of the step-by-step `DynamicCache` reference
(`nugget_core.nugget2d.reference_generation`) on CPU fp32: masked slots get
``finfo.min``, which softmax turns into exact zeros.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers import PreTrainedModel, StaticCache
from transformers.cache_utils import StaticLayer

from ..modes import ResidualMode
from ..typed_access import checked
from .bias import nugget_attention_mask
from .context import CompressedContext, continuation_positions, decoder_visibility


def _pad_keys(values: torch.Tensor, slots: int, fill: float | bool) -> torch.Tensor:
    """``values [..., kv]`` right-padded with ``fill`` to ``[..., slots]``."""
    pad = values.new_full((*values.shape[:-1], slots - values.shape[-1]), fill)
    return torch.cat([values, pad], dim=-1)


def _emptied(states: torch.Tensor) -> torch.Tensor:
    """A fresh ``[batch, heads, 0, head_dim]`` tensor in place of ``states``: a ``[:0]``
    view would keep the whole storage alive."""
    return states.new_empty((*states.shape[:2], 0, states.shape[3]))


class StaticDecoder:
    """One greedy decode of a batch: prefill the packed prompt, then step (module doc).

    Args:
        lm: the causal LM, with the decoding adapter merged (or none wanted).
        context: the nuggets (or, for Full, every document token) to attend to.
        token_mask: ``[batch, m]`` mask of the packed prompt (real tokens first).
        max_new_tokens: generated tokens the cache must hold.
        residual: how nugget scores enter the attention logits.
        residual_scale: the factor on the scores there (`Nugget2DModel.residual_scale`).
        consume_context: free ``context.kv`` layer by layer as it is copied into the
            static cache (``context.kv`` is left empty), so the context's KV is never
            held twice: what lets a serving batch use the whole memory for the cache.
    """

    def __init__(
        self,
        lm: PreTrainedModel,
        context: CompressedContext,
        token_mask: torch.Tensor,
        max_new_tokens: int,
        residual: ResidualMode,
        consume_context: bool = False,
        residual_scale: float = 1.0,
    ) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.lm = lm
        self.context = context
        self.token_mask = token_mask
        self.residual, self.residual_scale = residual, residual_scale
        self.dtype = context.kv.keys[0].dtype
        batch, k = context.mask.shape
        m = token_mask.shape[1]
        self.slots = k + m + max_new_tokens
        self.cache = StaticCache(config=lm.config, max_cache_len=self.slots)
        kv = context.kv
        for layer in range(len(kv.keys)):
            self.cache.update(kv.keys[layer], kv.values[layer], layer)  # slots 0..k
            if consume_context:
                kv.keys[layer], kv.values[layer] = _emptied(kv.keys[layer]), _emptied(kv.values[layer])
        device = token_mask.device
        first = checked(self.cache.layers[0], StaticLayer, "a StaticCache layer")
        self._length = first.cumulative_length  # device-side, advanced by HF
        self.key_scores = _pad_keys(context.key_scores(m), self.slots, 0.0)
        keys_real = torch.cat([context.mask.bool(), token_mask.bool()], dim=1)
        self.step_mask = nugget_attention_mask(
            _pad_keys(keys_real, self.slots, False)[:, None, :], self.dtype, self.key_scores, residual,
            residual_scale,
        )  # [batch, 1, 1, slots]; generated slots open one per step
        self.n_real = token_mask.long().sum(dim=1)
        self.ids = torch.zeros(batch, 1, dtype=torch.long, device=device)
        self.positions = (context.lengths + self.n_real)[:, None].clone()
        self.finished = torch.zeros(batch, dtype=torch.bool, device=device)
        self.eos_token_id: int | None = None
        self.pad_token_id = 0

    # --- passes ----------------------------------------------------------------------

    def prefill(self, embeds: torch.Tensor) -> torch.Tensor:
        """Read the packed prompt ``embeds [batch, m, d]``; return each row's next-token
        logits ``[batch, vocab]`` (at its last real prompt token)."""
        visible = _pad_keys(decoder_visibility(self.context.mask, self.token_mask), self.slots, False)
        mask = nugget_attention_mask(visible, self.dtype, self.key_scores, self.residual, self.residual_scale)
        out = self.lm(
            inputs_embeds=embeds,
            attention_mask=mask,
            position_ids=continuation_positions(self.context, self.token_mask),
            past_key_values=self.cache,
            use_cache=True,
        )
        rows = torch.arange(embeds.shape[0], device=embeds.device)
        return out.logits[rows, self.n_real - 1]

    def _choose(self, logits: torch.Tensor) -> None:
        """Greedy pick into the ``ids`` buffer; pad once a row has finished."""
        token = logits.argmax(dim=-1).masked_fill(self.finished, self.pad_token_id)
        if self.eos_token_id is not None:
            self.finished |= token.eq(self.eos_token_id)
        self.ids.copy_(token[:, None])

    def step(self) -> None:
        """Feed ``ids`` at ``positions``; leave the next greedy token in ``ids``. Only
        in-place work on fixed buffers, so the step is CUDA-graph capturable."""
        self.step_mask.index_fill_(-1, self._length.view(1), 0.0)  # this token's own slot
        out = self.lm(
            input_ids=self.ids,
            attention_mask=self.step_mask,
            position_ids=self.positions,
            past_key_values=self.cache,
            use_cache=True,
        )
        self._choose(out.logits[:, -1])
        self.positions.add_(1)

    # --- the loop --------------------------------------------------------------------

    def generate(
        self,
        embeds: torch.Tensor,
        max_new_tokens: int,
        eos_token_id: int | None,
        pad_token_id: int,
        cuda_graph: bool,
    ) -> torch.Tensor:
        """Greedy tokens ``[batch, new]`` (``pad_token_id`` after EOS; stops once every
        row has finished). ``cuda_graph``: steps 1 and 2 run eagerly on a side stream
        (the warm-up capture needs), step 3 on is one CUDA graph replay each."""
        self.eos_token_id, self.pad_token_id = eos_token_id, pad_token_id
        self._choose(self.prefill(embeds))
        out = [self.ids[:, 0].clone()]
        side = torch.cuda.Stream() if cuda_graph else None
        run: Callable[[], None] = self.step
        for step in range(1, max_new_tokens):
            if bool(self.finished.all()):
                break
            if side is not None and step < 3:
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    self.step()
                torch.cuda.current_stream().wait_stream(side)
            else:
                if side is not None and step == 3:
                    run = self._capture()
                run()
            out.append(self.ids[:, 0].clone())
        return torch.stack(out, dim=1)

    def _capture(self) -> Callable[[], None]:
        """`step` captured as a CUDA graph. Capture records without running, so the
        returned replay is what performs the step it was captured at."""
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.step()
        return graph.replay
