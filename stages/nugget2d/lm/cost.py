"""Decoding cost, recorded for every system of every evaluation.

Per example: the KV positions (per layer) attended when producing each generated token,
averaged over its tokens; the bytes of keys/values held at the end of decoding (the
peak: caches only grow while a prompt is answered); the wall time per decoding step and
the time spent before the first step (document pass, compression or summarisation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass
class DecodeCost:
    generated_tokens: int
    attended_states: float  # mean KV positions per layer seen per generated token
    kv_bytes: float  # keys + values of all layers held at the end of decoding
    ms_per_token: float  # wall time per decoding step (one token per batch row)
    encode_ms: float  # per example, before decoding (doc pass / compression / summary)

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


COST_COLUMNS = ("attended_states", "kv_bytes", "ms_per_token", "encode_ms", "generated_tokens")


def mean_cost(costs: Sequence[DecodeCost]) -> dict[str, float]:
    """Means over examples; time per token is weighted by each example's token count."""
    if not costs:
        raise ValueError("no decoding costs to average")
    n = len(costs)
    tokens = sum(c.generated_tokens for c in costs)
    return {
        "attended_states": sum(c.attended_states * c.generated_tokens for c in costs) / max(tokens, 1),
        "kv_bytes": sum(c.kv_bytes for c in costs) / n,
        "ms_per_token": sum(c.ms_per_token * c.generated_tokens for c in costs) / max(tokens, 1),
        "encode_ms": sum(c.encode_ms for c in costs) / n,
        "generated_tokens": tokens / n,
    }
