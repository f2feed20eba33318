"""`Nugget2DModel`: a LLaMA-family LM with a scorer and the adapters phi and theta.

Compressor mode (paper 2.4)::

    model = Nugget2DModel.from_lm("path/to/hf_folder", Nugget2DConfig(ratio=0.1))
    ctx = model.compress(doc_ids, doc_mask)            # k = ceil(r n) positions per layer
    out = model(doc_ids, doc_mask, prompt_ids, prompt_mask, answer_ids, answer_mask)
    out.loss.backward()

Evaluation helpers that need no knowledge of the adapters' routing::

    full = model.encode_full(doc_ids, doc_mask)        # Full baseline: every token's KV
    logits = model.lm_forward(input_ids=ids).logits    # the plain base LM (adapters off)

The base LM is never copied or subclassed: peft injects the two LoRA adapters, an
`AdapterRouter` gates them per pass (or per token), and each pass is a plain HF forward
given a cache object, position ids and a 4D float mask (`nugget_core.nugget2d.context`).
Training's `forward` runs the document and the decoder tokens in one such pass
(`nugget_core.nugget2d.joint`; ``Nugget2DConfig.training_pass``).
Autoregressive mode lives in `nugget_core.nugget2d.autoregressive`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.utils.checkpoint
from peft import PeftModel
from torch import nn
from transformers import AutoModelForCausalLM, DynamicCache, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from ..adaptors import get_causal_adaptor
from ..nuggets import gather_tokens, selection_to_indices
from ..remote_code import refuse_remote_code
from ..scorer import NuggetScorer
from ..selectors import TopKSelector
from ..typed_access import checked, logits_of
from .adapters import AdapterRouter, attach_adapters
from .bias import nugget_attention_mask
from .checkpointing import enable_routed_checkpointing, without_layer_checkpointing
from .config import COMPRESSOR, DECODER, Nugget2DConfig, TrainingPass
from .context import (
    CompressedContext,
    continuation_positions,
    decoder_visibility,
    pack_answer_inputs,
)
from .features import FrozenFeatures
from .joint import joint_pass
from .kv import LayerKV


@dataclass
class Nugget2DOutput:
    """``loss`` (mean NLL of the answer tokens), ``logits [batch, m, vocab]`` of the packed
    decoder tokens, ``labels [batch, m]`` (-100 where no loss), ``nugget_counts [batch]``
    (nuggets each row's decoder tokens read) and the ``context`` read: the nuggets' KV
    where a pass kept it (`Nugget2DModel.answer_loss`, the two-pass `forward`); None
    from the joint `forward`, which keeps no KV."""

    loss: torch.Tensor
    logits: torch.Tensor
    labels: torch.Tensor
    nugget_counts: torch.Tensor
    context: CompressedContext | None


class Nugget2DModel(nn.Module):
    """Nugget2D on a LLaMA / Mistral / Qwen2 causal LM (see module docstring).

    Passes: `compress` (phi, nuggets only), `encode_full` (every token, Full baseline),
    `encode_kv` (every layer's KV of a pass under any adapter),
    `decoder_pass` / `forward` (theta on a context), `lm_forward` / `backbone_forward`
    (any HF forward with an adapter or per-token gates routed), `merged_adapter`
    (inference with an adapter folded into the weights), `score` / `select`,
    `embed`, `rotary`; ``facts`` is the LM family's `FamilyFacts` (checked when the model
    is built). ``router`` and ``adaptor`` are internals: callers outside `nugget_core` use
    these methods instead.
    """

    def __init__(
        self,
        base_model: PreTrainedModel,
        config: Nugget2DConfig,
        peft_model: PeftModel | None = None,
    ) -> None:
        super().__init__()
        self.adaptor = get_causal_adaptor(base_model)  # refuses unsupported family facts
        self.facts = self.adaptor.facts(base_model)
        config.check_depth(len(self.adaptor.layers(base_model)))
        self.config = config
        for p in base_model.parameters():
            p.requires_grad_(False)  # only adapters, scorer and soft prompt ever train
        self.peft = peft_model if peft_model is not None else attach_adapters(base_model, config)
        self.lm = checked(self.peft.get_base_model(), PreTrainedModel, "the PeftModel's base model")
        self._checkpoint_compressor = False  # enable_activation_checkpointing
        # how a trained model reads its inputs (`persistence.Nugget2DUsage`; set by
        # load_nugget2d from the folder, or by the trainer before saving)
        self.usage: Any = None
        self.router = AdapterRouter(self.peft)
        self.features = FrozenFeatures(
            self.adaptor.layers(self.lm), self.embed, self.backbone_forward, config.scorer_layer
        )
        d = self.adaptor.hidden_size(self.lm)
        param = next(self.lm.parameters())
        self.scorer = NuggetScorer(d, config.scorer_config()).to(param.device, param.dtype)
        self.soft_prompt = nn.Parameter(self.random_embeddings(config.soft_prompt_tokens))
        self._selector = TopKSelector()

    def random_embeddings(self, n: int) -> torch.Tensor:
        """``[n, d]`` Gaussian vectors at the scale of the LM's token embeddings, on its device
        and in its dtype: the initialisation of learned input embeddings (the soft prompt,
        ICAE's memory slots). Token embeddings reach layer 0 as the table's rows times
        the family's ``embedding_scale`` (Gemma: ``sqrt(d)``), so the table's spread is
        scaled by it."""
        table = self.adaptor.embed_tokens(self.lm).weight
        scale = float(table.std()) * self.facts.embedding_scale
        return torch.randn(n, table.shape[1], device=table.device, dtype=table.dtype) * scale

    @classmethod
    def from_lm(
        cls, name_or_path: str | Path, config: Nugget2DConfig | None = None, **hf_kwargs: Any
    ) -> Nugget2DModel:
        """Load the base LM with ``AutoModelForCausalLM.from_pretrained`` (a local folder,
        or a hub name for users with hub access) and attach fresh Nugget2D parts."""
        base = AutoModelForCausalLM.from_pretrained(str(name_or_path), **refuse_remote_code(hf_kwargs))
        return cls(base, config or Nugget2DConfig())

    @property
    def dtype(self) -> torch.dtype:
        return self.soft_prompt.dtype

    @property
    def device(self) -> torch.device:
        """Where the model's parameters live (inputs must be built there)."""
        return self.soft_prompt.device

    @property
    def residual_scale(self) -> float:
        """The factor on nugget scores in the attention logits: the LM's attention scale
        (``facts.attention_scale``, ``1/sqrt(d_head)``) with ``config.scale_residual``
        (eq. 5), else 1."""
        return self.facts.attention_scale if self.config.scale_residual else 1.0

    def attention_mask(self, visible: torch.Tensor, key_scores: torch.Tensor | None = None) -> torch.Tensor:
        """`nugget_attention_mask` of ``visible [batch, q, kv]`` with this model's dtype,
        residual mode and scale (``key_scores [batch, kv]``: 0 on non-nugget keys)."""
        return nugget_attention_mask(visible, self.dtype, key_scores, self.config.residual, self.residual_scale)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Token embeddings ``[batch, n, d]`` of ``input_ids [batch, n]`` (frozen table)."""
        return self.adaptor.embed_tokens(self.lm)(input_ids)

    def rotary(self, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The LM's rotary ``(cos, sin)``, each ``[batch, n, head_dim]``, at
        ``position_ids [batch, n]``."""
        probe = self.embed(torch.zeros(1, 1, dtype=torch.long, device=position_ids.device))
        return self.adaptor.rotary(self.lm)(probe, position_ids)

    def lm_forward(
        self,
        adapter: str | None = None,
        *,
        gates: tuple[torch.Tensor, torch.Tensor] | None = None,
        **hf_kwargs: Any,
    ) -> CausalLMOutputWithPast:
        """One HF forward of the causal LM (``input_ids`` or ``inputs_embeds``, masks,
        ``position_ids``, caches: whatever ``*ForCausalLM.forward`` takes).

        ``adapter`` is routed for the whole pass: ``"compressor"`` (phi), ``"decoder"``
        (theta) or None (the plain base LM, every adapter off). ``gates`` instead routes
        per token: ``(phi, theta)`` gates ``[batch, seq, 1]`` (1 = on, 0 = off).
        """
        routing = self.router.route(*gates) if gates is not None else self.router.use(adapter)
        with routing:
            return self.lm(**hf_kwargs)

    def enable_activation_checkpointing(self) -> None:
        """Recompute activations in backward instead of keeping them (less memory for
        about one more forward of compute), in the two forms the passes allow:

        - passes without a KV cache (the compressor objectives' joint pass, autoregressive,
          Full / Compressive baselines) use HF's per-layer checkpointing, each layer
          recomputed under the routing and attention function of its forward
          (`nugget_core.nugget2d.checkpointing` says why);
        - in ``training_pass=two_pass`` the compressor pass (document -> the nuggets' KV)
          runs as one checkpointed function: only its inputs and the gathered nugget KV are
          kept, the pass is rerun in backward (it builds its own cache, so the rerun is the
          same computation). Its decoder pass on the nuggets, through a KV cache, is not
          checkpointed: HF drops a cache under layer checkpointing, and a rerun would
          extend it twice."""
        enable_routed_checkpointing(self.lm, self.router)
        self._checkpoint_compressor = True

    def _cached_pass(self) -> AbstractContextManager[None]:
        """A pass through a KV cache: HF's per-layer checkpointing off for its duration."""
        return without_layer_checkpointing(self.adaptor.layers(self.lm))

    def merged_adapter(self, adapter: str | None) -> AbstractContextManager[None]:
        """Inference block in which ``adapter`` is folded into the LM's weights and no
        adapter is computed (`AdapterRouter.merged`): ``self.lm`` is then a plain HF LM
        with phi or theta baked in; ``None`` turns every adapter off."""
        return self.router.merged(adapter)

    def backbone_forward(self, adapter: str | None = None, **hf_kwargs: Any) -> Any:
        """`lm_forward` without the LM head: the decoder stack's HF forward (hidden states
        and caches only) with ``adapter`` routed for the whole pass."""
        with self.router.use(adapter):
            return self.adaptor.backbone(self.lm)(**hf_kwargs)

    def encode_kv(
        self, input_ids: torch.Tensor | None, attention_mask: torch.Tensor, adapter: str | None, **hf_kwargs: Any
    ) -> LayerKV:
        """Every layer's KV ``[batch, kv_heads, n, head_dim]`` of right-padded
        ``input_ids [batch, n]`` (None with ``inputs_embeds`` in ``hf_kwargs``) under
        ``adapter`` (the backbone only: no LM head);
        ``hf_kwargs`` reach the attention functions (e.g. a probe's state)."""
        cache = DynamicCache()
        with self._cached_pass():
            self.backbone_forward(
                adapter,
                input_ids=input_ids,
                attention_mask=attention_mask,
                past_key_values=cache,
                use_cache=True,
                **hf_kwargs,
            )
        return LayerKV.from_cache(cache)

    # --- scoring and selection ---------------------------------------------------

    def score(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        **feature_kwargs: Any,
    ) -> torch.Tensor:
        """Scorer logits ``[batch, n]`` (-inf at padding) from frozen layer-l features;
        with gradient to the scorer FFN only."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        features = self.features(input_ids, attention_mask, **feature_kwargs)
        return self.scorer.score(features.to(self.dtype), attention_mask)

    def select(
        self, scores: torch.Tensor, attention_mask: torch.Tensor, ratio: float | None = None
    ) -> torch.Tensor:
        """``[batch, n]`` bool: top ``ceil(r n)`` by detached score, always with the last
        real token (causal attention gives the others no view of it)."""
        lengths = attention_mask.ne(0).sum(dim=1)
        last = torch.zeros_like(attention_mask, dtype=torch.bool)
        last[torch.arange(len(lengths), device=lengths.device), (lengths - 1).clamp(min=0)] = True
        forced = scores.detach().masked_fill(last, float("inf"))
        return self._selector(forced, attention_mask, ratio or self.config.ratio)

    # --- compressor mode -----------------------------------------------------------

    def _nuggets(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, ratio: float | None,
                 selected: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores ``[batch, n]`` and the nuggets ``[batch, n]`` bool (``selected``, else the
        scorer's top ``ceil(r n)``), real tokens only: what both training passes select."""
        scores = self.score(input_ids, attention_mask)
        if selected is None:
            selected = self.select(scores, attention_mask, ratio)
        return scores, selected & attention_mask.bool()

    def compress(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        ratio: float | None = None,
        selected: torch.Tensor | None = None,
        adapter: str | None = COMPRESSOR,
    ) -> CompressedContext:
        """Encode documents ``[batch, n]`` (right-padded) with phi and keep the nuggets'
        KV at every layer. ``selected [batch, n]`` bool overrides the scorer's choice;
        ``adapter=None`` encodes with the plain base LM (baselines)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        scores, selected = self._nuggets(input_ids, attention_mask, ratio, selected)
        indices, mask = selection_to_indices(selected)
        if self._checkpoint_compressor and self.training and torch.is_grad_enabled():
            flat = torch.utils.checkpoint.checkpoint(
                self._gathered_kv, input_ids, attention_mask, indices, adapter, use_reentrant=False)
            half = len(flat) // 2
            nuggets = LayerKV(list(flat[:half]), list(flat[half:]))
        else:
            nuggets = self.encode_kv(input_ids, attention_mask, adapter).gather(indices)
        return CompressedContext(
            kv=nuggets,
            mask=mask,
            scores=gather_tokens(scores, indices, mask),
            positions=indices,
            lengths=attention_mask.ne(0).sum(dim=1),
        )

    def _gathered_kv(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, indices: torch.Tensor, adapter: str | None
    ) -> tuple[torch.Tensor, ...]:
        """The compressor pass as one function of tensors (checkpointable): every layer's
        keys, then values, at ``indices``."""
        kv = self.encode_kv(input_ids, attention_mask, adapter).gather(indices)
        return (*kv.keys, *kv.values)

    def encode_full(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        adapter: str | None = None,
    ) -> CompressedContext:
        """Every real token's KV of right-padded ``input_ids [batch, n]`` as a
        `CompressedContext` (the Full baseline: nothing dropped, no scorer run).

        ``adapter=None`` encodes with the plain base LM. Scores are 0, so even the
        ``direct`` residual leaves the decoder's attention unchanged; ``kv`` holds
        ``[batch, kv_heads, n, head_dim]`` per layer, padding columns masked by ``mask``.
        """
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        batch, n = input_ids.shape
        return CompressedContext(
            kv=self.encode_kv(input_ids, attention_mask, adapter),
            mask=attention_mask.long(),
            scores=torch.zeros(batch, n, dtype=self.dtype, device=input_ids.device),
            positions=torch.arange(n, device=input_ids.device).expand(batch, -1),
            lengths=attention_mask.ne(0).sum(dim=1),
        )

    def decoder_pass(
        self,
        context: CompressedContext,
        inputs_embeds: torch.Tensor,
        token_mask: torch.Tensor,
        adapter: str | None = DECODER,
    ) -> tuple[torch.Tensor, DynamicCache]:
        """Run theta on packed tokens ``[batch, m, d]`` attending to the nuggets and to
        themselves. Returns logits ``[batch, m, vocab]`` and the cache (nuggets + tokens)."""
        mask = self.attention_mask(
            decoder_visibility(context.mask, token_mask), context.key_scores(inputs_embeds.shape[1])
        )
        cache = context.kv.to_cache()
        with self._cached_pass():
            out = self.lm_forward(
                adapter,
                inputs_embeds=inputs_embeds,
                attention_mask=mask,
                position_ids=continuation_positions(context, token_mask),
                past_key_values=cache,
                use_cache=True,
            )
        return logits_of(out), cache

    def forward(
        self,
        doc_ids: torch.Tensor,
        doc_mask: torch.Tensor,
        prompt_ids: torch.Tensor | None,
        prompt_mask: torch.Tensor | None,
        answer_ids: torch.Tensor,
        answer_mask: torch.Tensor,
        soft_prompt: bool = False,
        ratio: float | None = None,
    ) -> Nugget2DOutput:
        """Paper eq. 7: ``-log p(answer | nuggets(doc), [soft prompt], prompt)``.

        All inputs are right-padded ``[batch, n_i]``; the decoder sequence is packed per
        row as ``[soft prompt] prompt answer`` so rows of different lengths line up.
        ``config.training_pass``: one joint forward (`nugget2d.joint`) or `compress` then
        `answer_loss`; the same loss and gradients.
        """
        if self.config.training_pass == TrainingPass.TWO_PASS:  # a StrEnum: "two_pass" set later matches too
            context = self.compress(doc_ids, doc_mask, ratio=ratio)
            return self.answer_loss(context, prompt_ids, prompt_mask, answer_ids, answer_mask, soft_prompt)
        scores, selected = self._nuggets(doc_ids, doc_mask, ratio)
        inputs = joint_pass(self.embed, self.attention_mask, doc_ids, doc_mask, selected, scores,
                            self.soft_prompt if soft_prompt else None, prompt_ids, prompt_mask, answer_ids, answer_mask)
        out = self.lm_forward(
            gates=inputs.gates, inputs_embeds=inputs.inputs_embeds, attention_mask=inputs.attention_mask,
            position_ids=inputs.position_ids, use_cache=False, logits_to_keep=inputs.decoder_tokens,
        )
        return self._answer_output(logits_of(out), inputs.labels, selected.sum(dim=1), None)

    def answer_loss(
        self,
        context: CompressedContext,
        prompt_ids: torch.Tensor | None,
        prompt_mask: torch.Tensor | None,
        answer_ids: torch.Tensor,
        answer_mask: torch.Tensor,
        soft_prompt: bool = False,
    ) -> Nugget2DOutput:
        """``-log p(answer | context, [soft prompt], prompt)`` with theta, for any
        ``context`` (Nugget2D's nuggets, or another compressor's memory)."""
        embeds, token_mask, packed_labels = pack_answer_inputs(
            self.embed, self.soft_prompt if soft_prompt else None, prompt_ids, prompt_mask, answer_ids, answer_mask
        )
        logits, _ = self.decoder_pass(context, embeds, token_mask)
        return self._answer_output(logits, packed_labels, context.counts, context)

    @staticmethod
    def _answer_output(logits: torch.Tensor, labels: torch.Tensor, counts: torch.Tensor,
                       context: CompressedContext | None) -> Nugget2DOutput:
        """The next-token loss of packed decoder ``logits [batch, m, vocab]`` on ``labels``."""
        loss = nn.functional.cross_entropy(
            logits[:, :-1].flatten(0, 1).float(), labels[:, 1:].flatten(), ignore_index=-100
        )
        return Nugget2DOutput(loss, logits, labels, counts, context)
