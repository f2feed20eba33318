"""Micro fixtures of the headline burst: a tiny BPE tokenizer, a data folder of its token ids,
a tiny LLaMA saved as an HF folder, and presets small enough for seconds on 2 cores. Importable
by the tests' subprocesses (``from tests.headline.micro import ...``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from benchmarks.headline.dataset import HeadlineData, Split
from benchmarks.headline.presets import CPU, AEPreset, LoopPreset, Nugget2DPreset

WORDS = ("light", "river", "stone", "house", "garden", "window", "morning", "letter", "market", "bridge",
         "winter", "story", "music", "forest", "harbor", "station", "doctor", "teacher", "mountain", "village")
LOOP = LoopPreset(batch_size=4, lr=3e-3, warmup_steps=1, min_lr_fraction=0.1, weight_decay=0.0, betas=(0.9, 0.98),
                  max_grad_norm=1.0, seconds=30.0, max_steps=3)
AE = dataclasses.replace(CPU.ae, d_model=16, layers=1, heads=2, ffn_dim=32, scorer_layer=1, loop=LOOP,
                         max_doc_tokens=16, test_docs=20, beams=2, eval_batch=20, token_stats_docs=20,
                         eval_seconds_estimate=1.0, build_seconds_estimate=0.5, ratios=(0.1, 0.05, 0.25))
N2D = dataclasses.replace(CPU.nugget2d, keep_layers=None, scorer_layer=1, lora_rank=2, lora_alpha=4, loop=LOOP,
                          icae_seconds_cap=30.0, max_doc_tokens=16, test_docs=20, eval_batch=20, extra_tokens=2,
                          eval_seconds_estimate=1.0, build_seconds_estimate=0.5, ratios=(0.1,))
assert isinstance(AE, AEPreset) and isinstance(N2D, Nugget2DPreset)


def texts(n: int, seed: int = 0) -> list[str]:
    """``n`` short English-like documents, different from each other."""
    out = []
    for i in range(n):
        a, b, c = WORDS[(i + seed) % 20], WORDS[(3 * i + 7) % 20], WORDS[(7 * i + 3) % 20]
        out.append(f"The {a} near the {b}, and a {c} in the {a}. Day {i} was long.")
    return out


def write_tiny_data(folder: Path) -> HeadlineData:
    """A data folder (train 40, dev 4, test 20 documents) in a 300-token byte-level BPE."""
    import tempfile

    from nugget_core import train_bpe_tokenizer

    tok = train_bpe_tokenizer(texts(200), vocab_size=300, min_frequency=2)
    with tempfile.TemporaryDirectory() as tmp:
        tok.save_pretrained(tmp)
        files = {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir()) if p.is_file()}
    docs = tok(texts(64, seed=5), add_special_tokens=False)["input_ids"]
    data = HeadlineData({"train": Split.of(docs[:40]), "dev": Split.of(docs[40:44]), "test": Split.of(docs[44:])},
                        files, {"size": "micro", "corpora": ["synthetic"]})
    data.write(folder)
    return data


def write_tiny_lm(folder: Path, vocab_size: int) -> Path:
    """A random 2-layer LLaMA over ``vocab_size`` tokens, saved as an HF folder."""
    from nugget_core.nugget2d import TinyCausalSpec, build_tiny_causal_lm

    model = build_tiny_causal_lm("llama", TinyCausalSpec(vocab_size=vocab_size, hidden_size=32, layers=2, heads=4,
                                                          kv_heads=2, intermediate_size=64, initializer_range=0.2))
    model.save_pretrained(folder)
    return folder
