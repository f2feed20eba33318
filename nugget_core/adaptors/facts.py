"""What differs between decoder-only families and decides whether Nugget2D's math holds.

Nugget2D drives an unmodified HF causal LM from outside: it feeds ``inputs_embeds``
(token rows, soft prompts, ICAE memory slots), builds every 4D additive mask itself
(nugget scores ride on it, eq. 5), and caches and re-rotates keys. Each fact below is a
place where a family could silently break one of those assumptions; a causal adaptor
reads them from the model (`CausalLMAdaptor.facts`) and `FamilyFacts.refuse_unsupported`
turns the unsupported ones into a clear error before any training or encoding runs.
docs/algorithms.md ("Porting Nugget2D to a new model family") is the checklist.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Per-layer attention kinds (``config.layer_types``) whose keys Nugget2D's masks can
#: describe; any other kind (chunked, linear, ...) attends by rules the mask cannot carry.
SUPPORTED_LAYER_TYPES = ("full_attention", "sliding_attention")


@dataclass(frozen=True)
class FamilyFacts:
    """Per-family facts of a decoder-only LM that Nugget2D depends on.

    Attributes:
        embedding_scale: the factor between the embedding table's rows and what layer 0
            receives for a token (LLaMA family 1.0; Gemma ``sqrt(hidden_size)``, which
            transformers applies inside the embedding module). Nugget2D feeds
            ``inputs_embeds`` built by that module (`Nugget2DModel.embed`: the joint and
            decoder passes, autoregressive mode, streams, ICAE) and requires the backbone
            to pass ``inputs_embeds`` to layer 0 unchanged, so learned input embeddings
            (soft prompt, ICAE memory slots) live at ``embedding_scale`` times the
            table's scale and are initialised there (`Nugget2DModel.random_embeddings`).
        attention_scale: the factor attention applies to ``q k^T`` before adding the
            mask (``1/sqrt(head_dim)``; Gemma 2/3 ``query_pre_attn_scalar ** -0.5``):
            eq. 5's residual is scaled by it (`Nugget2DModel.residual_scale`).
        attn_logit_softcapping: ``c`` of a ``c * tanh(q k^T / c)`` applied to the
            attention logits before the mask (Gemma 2), else None. Nugget scores are
            added through the mask after the cap, so the capped logits no longer are
            eq. 5's ``q k^T / sqrt(d) + s``: unsupported.
        sliding_window: the window of the model's sliding-window layers (Mistral
            ``sliding_window``; Qwen2 only with ``use_sliding_window``), else None.
            Nugget2D gives its own 4D masks, which HF uses as they are, so the window is
            not applied: supported only when it covers ``max_positions``.
        max_positions: ``max_position_embeddings``, the longest sequence the model is
            built for (what the sliding window must cover).
        layer_types: each layer's attention kind (``config.layer_types``; all
            ``"full_attention"`` where the config has none). Only `SUPPORTED_LAYER_TYPES`.
        rotary_fraction: the fraction of each head rotated by RoPE
            (``partial_rotary_factor``, 1.0 by default). The Compressive baseline
            un-rotates and re-rotates whole heads (`nugget2d.compressive.pool_chunks`):
            only 1.0 is supported.
        keys_cached_after_rotary: the KV cache holds keys already rotated at their
            positions (true of every HF family with ``Cache`` objects). Nugget2D gathers
            the nuggets' cached keys and reuses them at their original positions
            (`LayerKV`), which needs rotated keys in the cache.
        tied_embeddings: the LM head shares the embedding table
            (``tie_word_embeddings``). No requirement: Nugget2D freezes both and puts
            LoRA on the attention projections only; recorded for ports whose
            ``lora_target_modules`` would reach either.
        final_logit_softcapping: ``c`` of a ``c * tanh(logits / c)`` on the LM head's
            output (Gemma 2), else None. No requirement: every loss reads the HF
            forward's logits, so it applies as in the plain model.
    """

    embedding_scale: float
    attention_scale: float
    attn_logit_softcapping: float | None
    sliding_window: int | None
    max_positions: int
    layer_types: tuple[str, ...]
    rotary_fraction: float
    keys_cached_after_rotary: bool
    tied_embeddings: bool
    final_logit_softcapping: float | None

    def unsupported(self) -> list[tuple[str, object, str]]:
        """``(field, value, why)`` for every fact Nugget2D cannot work with."""
        found: list[tuple[str, object, str]] = []
        if self.attn_logit_softcapping is not None:
            found.append((
                "attn_logit_softcapping", self.attn_logit_softcapping,
                "the cap is applied to q k^T before the additive mask that carries the nugget "
                "scores, so the residual would no longer be eq. 5's",
            ))
        if self.sliding_window is not None and self.sliding_window < self.max_positions:
            found.append((
                "sliding_window", self.sliding_window,
                f"Nugget2D builds its own 4D masks, which the model uses as they are, so the "
                f"window is not applied and tokens would attend beyond it (up to "
                f"max_position_embeddings={self.max_positions})",
            ))
        other = sorted(set(self.layer_types) - set(SUPPORTED_LAYER_TYPES))
        if other:
            found.append((
                "layer_types", other,
                f"Nugget2D's masks describe only {', '.join(SUPPORTED_LAYER_TYPES)} layers",
            ))
        if self.rotary_fraction != 1.0:
            found.append((
                "rotary_fraction", self.rotary_fraction,
                "the Compressive baseline un-rotates and re-rotates whole heads",
            ))
        if not self.keys_cached_after_rotary:
            found.append((
                "keys_cached_after_rotary", False,
                "nuggets' cached keys are reused at their positions, so they must be cached rotated",
            ))
        return found

    def refuse_unsupported(self, model_type: str) -> None:
        """Raise ``ValueError`` naming each unsupported fact, ``model_type`` and the value."""
        found = self.unsupported()
        if found:
            raise ValueError(
                "; ".join(
                    f"Nugget2D does not support {name}={value!r} of model_type={model_type!r}: {why}"
                    for name, value, why in found
                )
            )
