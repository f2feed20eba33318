"""The compressor objectives' loss in one pass of the LM (``Nugget2DConfig.training_pass``).

The two-pass form (`Nugget2DModel.compress`, then `Nugget2DModel.answer_loss`) runs the
layer stack twice: phi over the document, keeping every layer's KV, then theta over the
packed decoder tokens (``[soft prompt] prompt answer``) attending to the gathered
nuggets. The second pass holds a few dozen tokens, so on a GPU its time is set by kernel
launches, not by its FLOPs, and a training step costs about two forwards' worth of
launches for one forward's worth of work (``benchmarks/nugget2d_train_overhead.py``
counts the ops).

The same computation fits in one forward over ``[document | decoder tokens]``:

- document tokens run with phi (per-token adapter gates, as in the autoregressive mode)
  and attend causally to the real document tokens: what the compressor pass computes;
- decoder tokens run with theta, at the positions after the document, and attend to the
  selected document tokens (with their scores' residual) and causally to the real decoder
  tokens: what the decoder pass computes.

A document token's keys and values at every layer are the same tensors either way (they
depend only on the document and phi), so the loss and every gradient equal the two-pass
form's (``tests/nugget_core/test_nugget2d_joint.py``). The pass has no KV cache, so HF's
per-layer activation checkpointing applies to all of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .context import decoder_visibility, pack_answer_inputs, positions_after


@dataclass
class JointPass:
    """The inputs of the one forward (``L = n + m``: document, then decoder tokens).

    Attributes:
        inputs_embeds: ``[batch, L, d]``.
        attention_mask: ``[batch, 1, L, L]`` additive float mask (visibility + residual).
        position_ids: ``[batch, L]``.
        gates: phi's and theta's per-token gates, each ``[batch, L, 1]`` (1 = on).
        labels: ``[batch, m]`` of the decoder tokens (-100 where no loss).
    """

    inputs_embeds: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    gates: tuple[torch.Tensor, torch.Tensor]
    labels: torch.Tensor

    @property
    def decoder_tokens(self) -> int:
        """``m``: the trailing tokens whose logits the loss reads."""
        return int(self.labels.shape[1])


def joint_visibility(doc_mask: torch.Tensor, selected: torch.Tensor, token_mask: torch.Tensor) -> torch.Tensor:
    """``[batch, n + m, n + m]`` bool of the joint pass.

    Document row ``i`` sees real document keys ``j <= i`` (a padding row sees the whole
    real document, as HF's causal padding mask lets it); decoder row ``i`` sees the
    ``selected`` document keys and the real decoder keys up to itself (a padding row sees
    the nuggets, so no row is empty). No document row sees a decoder key.
    """
    n, m = doc_mask.shape[1], token_mask.shape[1]
    device = doc_mask.device
    doc_rows = torch.cat([
        torch.ones(n, n, dtype=torch.bool, device=device).tril()[None] & doc_mask.bool()[:, None, :],
        torch.zeros(doc_mask.shape[0], n, m, dtype=torch.bool, device=device),
    ], dim=2)
    return torch.cat([doc_rows, decoder_visibility(selected, token_mask)], dim=1)


def joint_pass(
    embed: Callable[[torch.Tensor], torch.Tensor],
    attention_mask: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor],
    doc_ids: torch.Tensor,
    doc_mask: torch.Tensor,
    selected: torch.Tensor,
    scores: torch.Tensor,
    soft_prompt: torch.Tensor | None,
    prompt_ids: torch.Tensor | None,
    prompt_mask: torch.Tensor | None,
    answer_ids: torch.Tensor,
    answer_mask: torch.Tensor,
) -> JointPass:
    """Build the joint forward's inputs (module docstring).

    Args:
        embed: token ids -> embeddings (`Nugget2DModel.embed`).
        attention_mask: `Nugget2DModel.attention_mask` (visibility ``[batch, q, kv]`` and
            optional key scores ``[batch, kv]`` -> the model's additive mask).
        doc_ids, doc_mask: right-padded documents ``[batch, n]``.
        selected: ``[batch, n]`` bool, the nuggets (real tokens only).
        scores: ``[batch, n]`` scorer logits (-inf at padding), with gradient.
        soft_prompt, prompt_*, answer_*: as `Nugget2DModel.answer_loss`.
    """
    embeds, token_mask, labels = pack_answer_inputs(embed, soft_prompt, prompt_ids, prompt_mask, answer_ids,
                                                    answer_mask)
    batch, n = doc_ids.shape
    m = token_mask.shape[1]
    visible = joint_visibility(doc_mask, selected, token_mask)
    # the residual reaches the decoder rows only: the compressor pass has none
    doc_part = attention_mask(visible[:, :n], None)
    # where, not a product: a padding score is -inf and -inf * 0 is nan
    key_scores = torch.cat([torch.where(selected, scores, 0.0), scores.new_zeros(batch, m)], dim=1)
    decoder_part = attention_mask(visible[:, n:], key_scores)
    positions = torch.cat([torch.arange(n, device=doc_ids.device).expand(batch, -1),
                           positions_after(doc_mask.ne(0).sum(dim=1), token_mask)], dim=1)
    is_doc = (torch.arange(n + m, device=doc_ids.device) < n).expand(batch, -1)[..., None]
    dtype = embeds.dtype
    return JointPass(
        inputs_embeds=torch.cat([embed(doc_ids), embeds], dim=1),
        attention_mask=torch.cat([doc_part, decoder_part], dim=2),
        position_ids=positions,
        gates=(is_doc.to(dtype), (~is_doc).to(dtype)),
        labels=labels,
    )
