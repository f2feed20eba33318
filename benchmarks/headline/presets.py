"""The burst's sizes in one place: ``--size gpu`` (the real recipe) and ``--size cpu`` (a
rehearsal that proves the code end to end on 2 cores in seconds).

Nothing was tuned on a GPU: none was available while these were written (2026-11-28). The
gpu numbers come from (a) the one H100 measurement in docs/profiles.md ("profile=gpu1": the
same from-scratch BART, d 512, 6 + 6 layers, ~43k English documents of <= 128 subwords,
batch 64, bf16 autocast: BLEU 85.8 at r = 0.25 and 38.8 at r = 0.1 after 180 s each, loss
still falling), (b) FLOP arithmetic for those shapes and (c) this package's CPU rehearsals.
Each choice's reason is in `WHY`, which every result JSON carries with its recipe.

Time budgets (the lent GPU's call plan): ``ae`` ~270 s of wall time for its three ratios
including model builds and beam search; ``nugget2d`` ~180 s for both systems including the
LM load (the GGUF dequantise is timed separately and printed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

MIB = 1024 * 1024


@dataclass(frozen=True)
class DataPreset:
    """What `benchmarks.headline.build_data` writes."""

    max_doc_tokens: int  # SmolLM2 subwords per document, specials excluded (Nugget §5.1: 128)
    test_docs: int  # held-out documents every score is computed on
    dev_docs: int  # held-out documents for a loss check
    train_docs: int  # 0 = every remaining document that fits `max_bytes`
    max_bytes: int  # the whole folder (it shares a 64 MiB transfer with half the GGUF and the repo)
    corpora: tuple[str, ...] = ()  # English corpora read (stages.corpora.corpora); () = every one


@dataclass(frozen=True)
class LoopPreset:
    """A time-budgeted training run (`benchmarks.headline.loop`)."""

    batch_size: int
    lr: float  # peak
    warmup_steps: int
    min_lr_fraction: float  # the cosine ends at lr x this
    weight_decay: float
    betas: tuple[float, float]
    max_grad_norm: float
    seconds: float  # wall-clock training budget per model (with --max-seconds: the most it may get)
    max_steps: int  # a cap; the time budget normally ends the run first
    min_seconds: float = 1.0  # the least a shared budget gives a model (`budget.share_seconds`)


@dataclass(frozen=True)
class AEPreset:
    """Nugget autoencoding (Nugget §5.1, fig. 4 / 5) on a from-scratch BART."""

    d_model: int
    layers: int  # encoder and decoder each
    heads: int
    ffn_dim: int
    dropout: float
    scorer_layer: int  # the encoder layer the scorer reads (paper: 3 of 12)
    loop: LoopPreset
    max_doc_tokens: int  # documents cut to this many subwords (the data's own limit or less)
    test_docs: int  # scored documents (at most the data's test split)
    beams: int
    eval_batch: int  # documents per generate call
    eval_seconds_estimate: float  # a ratio's scoring time before one was measured
    build_seconds_estimate: float
    token_stats_docs: int  # fig. 5 counts (paper: 128 documents)
    ratios: tuple[float, ...]  # in run order: the headline ratio first


@dataclass(frozen=True)
class Nugget2DPreset:
    """Nugget2D vs ICAE autoencoding (Nugget2D §4) on SmolLM2-135M-Instruct."""

    keep_layers: int | None  # None: all 30 layers
    scorer_layer: int
    lora_rank: int
    lora_alpha: int
    loop: LoopPreset  # Nugget2D's; ICAE trains the same number of steps on the same batches
    icae_step_cost: float  # ICAE's step time in Nugget2D's (its compress: an encoder and a re-encoding pass)
    icae_seconds_cap: float  # ICAE's wall-clock cap
    max_doc_tokens: int
    test_docs: int
    eval_batch: int
    extra_tokens: int  # greedy decoding stops at EOS or the document's length + this
    eval_seconds_estimate: float
    build_seconds_estimate: float
    ratios: tuple[float, ...]


@dataclass(frozen=True)
class Preset:
    data: DataPreset
    ae: AEPreset
    nugget2d: Nugget2DPreset


GPU = Preset(
    data=DataPreset(max_doc_tokens=128, test_docs=300, dev_docs=256, train_docs=0, max_bytes=8 * MIB),
    ae=AEPreset(
        d_model=512, layers=6, heads=8, ffn_dim=2048, dropout=0.0, scorer_layer=2,
        loop=LoopPreset(batch_size=128, lr=7e-4, warmup_steps=100, min_lr_fraction=0.1, weight_decay=0.01,
                        betas=(0.9, 0.98), max_grad_norm=1.0, seconds=70.0, max_steps=20_000, min_seconds=20.0),
        max_doc_tokens=128, test_docs=300, beams=4, eval_batch=100, eval_seconds_estimate=15.0,
        build_seconds_estimate=3.0, token_stats_docs=128, ratios=(0.1, 0.05, 0.25),
    ),
    nugget2d=Nugget2DPreset(
        keep_layers=None, scorer_layer=3, lora_rank=32, lora_alpha=32,
        loop=LoopPreset(batch_size=32, lr=3e-4, warmup_steps=30, min_lr_fraction=0.1, weight_decay=0.1,
                        betas=(0.9, 0.95), max_grad_norm=1.0, seconds=60.0, max_steps=5_000, min_seconds=15.0),
        icae_step_cost=1.4, icae_seconds_cap=120.0, max_doc_tokens=128, test_docs=300, eval_batch=150,
        extra_tokens=8, eval_seconds_estimate=12.0, build_seconds_estimate=4.0, ratios=(0.1, 0.05),
    ),
)

CPU = Preset(
    data=DataPreset(max_doc_tokens=48, test_docs=24, dev_docs=16, train_docs=320, max_bytes=8 * MIB,
                    corpora=("gensim_lee",)),
    ae=AEPreset(
        d_model=64, layers=2, heads=4, ffn_dim=128, dropout=0.0, scorer_layer=1,
        loop=LoopPreset(batch_size=16, lr=3e-3, warmup_steps=10, min_lr_fraction=0.1, weight_decay=0.01,
                        betas=(0.9, 0.98), max_grad_norm=1.0, seconds=4.0, max_steps=400),
        max_doc_tokens=32, test_docs=24, beams=2, eval_batch=24, eval_seconds_estimate=3.0,
        build_seconds_estimate=1.0, token_stats_docs=24, ratios=(0.1, 0.05, 0.25),
    ),
    nugget2d=Nugget2DPreset(
        keep_layers=8, scorer_layer=3, lora_rank=8, lora_alpha=16,
        loop=LoopPreset(batch_size=4, lr=1e-3, warmup_steps=2, min_lr_fraction=0.1, weight_decay=0.1,
                        betas=(0.9, 0.95), max_grad_norm=1.0, seconds=4.0, max_steps=200),
        icae_step_cost=1.4, icae_seconds_cap=8.0, max_doc_tokens=24, test_docs=24, eval_batch=24, extra_tokens=4,
        eval_seconds_estimate=4.0, build_seconds_estimate=1.0, ratios=(0.1,),
    ),
)

PRESETS = {"gpu": GPU, "cpu": CPU}

WHY: dict[str, str] = {
    "data.max_doc_tokens": "Nugget §5.1 documents of at most 128 subwords; the profiles.md H100 guide used the same",
    "data.test_docs": "300 held-out documents: well above the 20 units an interval needs (docs/report.md) and above "
                      "the paper's 128 documents of fig. 5, while beam search over them stays ~10 s on an H100",
    "data.train_docs": "every packed document of the offline English corpora: the folder stays under its 8 MiB "
                       "limit with all of them (build_data prints the size), and an H100 is expected to see each "
                       "~8-13 times in a ratio's minute, so fewer documents would only mean more repetition",
    "ae.model": "the guide's shape (d 512, 6 + 6 layers, FFN 2048; BART-base widths) with SmolLM2's 49k "
                "vocabulary; dropout 0 because a one-minute run is far from overfitting a copying task",
    "ae.scorer_layer": "profile gpu1's l = 2 for 6 encoder layers (the paper's l = 3 is for 12)",
    "ae.batch": "128 documents (~14k tokens per side per step): still far below a small model's critical "
                "batch early in training, so loss per token seen is about that of the guide's 64, while the "
                "GPU gets more work per launch: ~5.5 TFLOP of matmuls per step (6 x 63.5M trained matmul "
                "parameters, the 49k-vocabulary head's 25M included, x 14k tokens, + the frozen layers' "
                "forward), i.e. ~15-25 ms at 250-350 TFLOP/s, where at 64 the ~1,000 kernel launches and "
                "HF's Python per step weigh as much as the math; expect ~1,500-2,500 steps (~8-13 epochs) in "
                "55-65 s",
    "ae.lr": "7e-4 = the pipeline's 5e-4 (gpu1, batch 64) x sqrt(2) for the doubled batch; 100 warm-up steps "
             "(BART is post-LN); cosine to 10% over the time budget, so the run ends annealed whenever it stops",
    "ae.seconds": "every ratio trains equally long: with --max-seconds, an equal share of what is left after "
                  "start-up once each ratio's build (3 s), beam search (15 s guessed until measured) and a 3 s "
                  "margin are set aside, at most 70 s: ~53 s at --max-seconds 235 (the GPU check's part: 265 s "
                  "less 30 s of grace), ~65 s at 270; the guide's 180 s got 38.8 BLEU at r = 0.1, so expect less",
    "ae.beams": "4 (the paper decodes with 5): one fewer beam keeps scoring inside its slot",
    "ae.ratios": "0.1 first (the paper's headline: BLEU > 99 from r = 0.1), then 0.05 and 0.25 for fig. 4's trend",
    "nugget2d.model": "SmolLM2-135M-Instruct, all 30 layers, LoRA rank 32 / alpha 32 on q, k, v, o (Nugget2D §3), "
                      "scorer on layer 3 (profile gpu1)",
    "nugget2d.batch": "32 documents of <= 128 tokens (+ their reconstruction: ~7k tokens per joint pass): the "
                      "30 small layers with two routed LoRA adapters are launch-bound, so a larger batch than "
                      "gpu1's 16 is nearly free throughput",
    "nugget2d.lr": "3e-4 (gpu1: 2e-4 over 1000 steps; a few hundred steps here), LLaMA-2's AdamW betas "
                   "(0.9, 0.95) and weight decay 0.1 as gpu1, cosine to 10% by the time budget",
    "nugget2d.seconds": "ICAE trains the same number of steps as Nugget2D on the same batches (equal examples: "
                        "the comparison is of methods); its steps are taken to cost 1.4x Nugget2D's (1.32x measured "
                        "on CPU: its compress runs an encoder pass and a re-encoding pass before decoding). So with "
                        "--max-seconds Nugget2D gets (what is left after the LM load - 2 x (4 s build + 12 s "
                        "greedy decoding + 3 s margin)) / 2.4, at most 60 s: ~40 s at --max-seconds 160 (the "
                        "GPU check's part: 190 s less 30 s of grace) after ~25 s of start-up and GGUF load",
    "nugget2d.ratios": "0.1 (the report's Nugget2D-vs-ICAE finding); 0.05 (the paper's 20x) only if time is left",
    "cpu": "a rehearsal: tiny shapes and seconds-long budgets; measured on 2 idle cores: `ae` ~20 s (all three "
           "ratios) and `nugget2d` ~27 s (both systems, ~11.5 s of it the SmolLM2 GGUF load); its numbers show "
           "that the code runs end to end, not findings (4 s of training moves a 49k-vocabulary model little)",
    "nugget2d.cpu.keep_layers": "--size cpu only: the bottom 8 of SmolLM2's 30 layers (profile tiny's cut). The GGUF "
                                "load costs the same at any depth (~11.5 s), but the 30-layer model's first training "
                                "step took 5-48 s here (first touch of the copied weights on this VM) and 0.7-1.0 s "
                                "per step after, its 24-document greedy decode ~3.5 s per system: over the 45 s",
}


def recipe(preset: Any) -> dict[str, Any]:
    """A preset as plain JSON data (what a result records as its recipe)."""
    return asdict(preset)
