"""What the end-of-fit input-use check costs (`stages.training.input_use`), against one dev pass.

Builds, in-process (no Ray), the tiny profile's Nugget AE (conf/model/tiny.yaml's random-init
BART, documents of ~128 subwords as build_mt_docs caps them, the ~100 dev documents of
data=tiny's 5% dev split, train.nugget's batch of 8) and its Nugget LM (the same BART, 32-token
windows reading 8 history segments, train.nugget_lm's 64 dev windows in batches of 16), and times
one batched dev evaluation (`stages.training.loop.evaluate`: what the loop pays at each
evaluation) and the check (`measure_input_use`: two passes, one example per forward), median of
``--repeats``. The models are untrained: the cost does not depend on the weights.

    python benchmarks/input_use_cost.py [--repeats 3]

Writes benchmarks/results/input_use_cost.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RESULTS = REPO / "benchmarks" / "results"


def _documents(n: int, words: int, seed: int) -> list[dict]:
    from tests.training.fixtures import WORDS

    rng = random.Random(seed)
    rows = []
    for i in range(n):
        sents = [" ".join(rng.choices(WORDS, k=12)) + "." for _ in range(words // 12)]
        text = " ".join(sents)
        rows.append({"doc_id": f"d{seed}-{i}", "source": text, "target": text.upper(), "source_sentences": sents,
                     "target_sentences": [s.upper() for s in sents], "n_source_tokens": 0, "n_target_tokens": 0})
    return rows


def _timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _cost(task, model, dev, batch_size: int, repeats: int) -> dict:
    import torch

    from stages.config.job import TrainJob
    from stages.training.engine import make_engine
    from stages.training.input_use import measure_input_use
    from stages.training.loop import evaluate

    job = TrainJob(batch_size=batch_size)
    engine = make_engine(model, job, task.find_unused_parameters, torch.device("cpu"))
    use, note = measure_input_use(task, model, dev, batch_size, torch.device("cpu"), nullcontext)  # warm-up
    dev_pass = _timed(lambda: evaluate(engine, task, dev, 0, 1, job), repeats)
    check = _timed(lambda: measure_input_use(task, model, dev, batch_size, torch.device("cpu"), nullcontext), repeats)
    return {"dev_examples": len(dev), "batch_size": batch_size, "dev_pass_s": round(dev_pass, 3),
            "check_s": round(check, 3), "check_over_dev_pass": round(check / dev_pass, 1),
            "measured": use is not None, "note": note}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch

    from nugget_core import (
        NuggetConfig,
        TinyBartSpec,
        build_tiny_bart,
        get_nugget_model,
        train_bpe_tokenizer,
    )
    from stages.config import load_config
    from stages.nugget.artifacts.data import MtDocuments, NuggetLMCorpus
    from stages.nugget.artifacts.models import decoder_token_ids
    from stages.nugget.nugget_lm_task import NuggetLMTask
    from stages.nugget.nugget_task import NuggetTask

    torch.set_num_threads(1)  # as one Ray Train worker of the tiny profile
    cfg = load_config([])
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        splits = {"train": _documents(8, 96, 1), "dev": _documents(100, 96, 2)}
        (root / "mt").mkdir()
        for name, rows in splits.items():
            pq.write_table(pa.Table.from_pylist(rows), root / "mt" / f"{name}.parquet")
        texts = [r[k] for rows in splits.values() for r in rows for k in ("source", "target")]
        tok = train_bpe_tokenizer(texts, vocab_size=cfg.model.seq2seq.tokenizer_vocab_size)
        tok.save_pretrained(root / "tok")
        task = NuggetTask(MtDocuments(root / "mt"), str(root / "tok"), "ae", cfg.nugget, cfg.model.seq2seq)
        results["nugget_ae"] = _cost(task, task.build_model(None), task.load_split("dev"),
                                     cfg.train.nugget.batch_size, args.repeats)

        from dataclasses import asdict

        ae = root / "ae"
        base = build_tiny_bart(tok, TinyBartSpec(**asdict(cfg.model.seq2seq.tiny)), seed=0)
        get_nugget_model(base, NuggetConfig(ratio=0.1, scorer_layer=cfg.nugget.scorer_layer)).save_pretrained(ae)
        tok.save_pretrained(ae)
        corpus = root / "corpus"
        corpus.mkdir()
        for split in ("train", "dev", "test"):
            ids = tok(" ".join(r["source"] for r in splits["dev"][:30]), add_special_tokens=False)["input_ids"]
            pq.write_table(pa.Table.from_pylist([{"ids": ids, "word_start": [True] * len(ids), "oov": [False] * len(ids)}]),
                           NuggetLMCorpus.split_file(corpus, split))
        (corpus / "stats.json").write_text(json.dumps({"source": "synthetic", "stand_in": "benchmark"}))
        lm_cfg = cfg.train.nugget_lm
        start, pad = decoder_token_ids(ae)
        lm = NuggetLMTask(NuggetLMCorpus.read(corpus), str(root / "tok"), str(ae), memory="nugget", ratio=0.1,
                          chunk_tokens=lm_cfg.compressive_chunk, segment_tokens=lm_cfg.segment_tokens,
                          histories=list(lm_cfg.histories), decoder_start_id=start, pad_id=pad,
                          dev_examples=lm_cfg.dev_examples)
        results["nugget_lm"] = _cost(lm, lm.build_model(None), lm.load_split("dev"), lm_cfg.batch_size, args.repeats)
    out = {"machine": platform.processor() or platform.machine(), "torch_threads": 1, "repeats": args.repeats,
           "results": results}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "input_use_cost.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
