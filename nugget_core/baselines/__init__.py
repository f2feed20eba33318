"""Single-vector baselines of the Nugget evaluations (same HF seq2seq models, same data).

- TSDAE (Wang et al., 2021): the mean-pooled encoder states are the only thing the
  decoder's cross-attention sees; trained as a denoising autoencoder (60% deletion).
- RE, restorable embeddings (see docs/papers.md): the same single
  mean-pooled vector, decoded either with plain cross-attention ("cross decoder") or
  with the gating layer replacing each decoder cross-attention ("gating decoder", §3.3).
  `GatingLayer` is RE's and lives in `nugget_core.restorable` (the full RE model, with
  its own poolings and input decoder); it is re-exported here for the baseline.

Primary API::

    model = get_bottleneck_model(hf_bart, BottleneckConfig(decoder="gating"))
    loss = model(input_ids=..., attention_mask=..., labels=...).loss
    vectors = model.embed(input_ids, attention_mask)          # [batch, d]
    ids = model.generate(input_ids=..., attention_mask=..., num_beams=5)
"""

from ..restorable.gating import GatingLayer
from .config import BottleneckConfig, DecoderKind
from .model import BottleneckModel, get_bottleneck_model

__all__ = [
    "BottleneckConfig",
    "BottleneckModel",
    "DecoderKind",
    "GatingLayer",
    "get_bottleneck_model",
]
