"""The short profile=gpu1 of a GPU check: sizes only, stage windows and their GPU memory peaks."""

from __future__ import annotations

import dataclasses
import time
from fnmatch import fnmatchcase

from benchmarks.gpu_check.gpu1 import overrides
from benchmarks.gpu_check.gpumem import GIB, Sampler, window_peak
from benchmarks.gpu_check.stagelog import StageLog
from stages.config import load_config
from stages.config.rehearsal import SIZE_FIELDS, flatten, non_size_differences

# what a rehearsal may shrink but a GPU check must keep: time and memory per step depend on them
SHAPE_FIELDS = {"model.seq2seq.tiny.d_model", "model.seq2seq.tiny.heads", "model.seq2seq.tiny.ffn_dim",
                "model.seq2seq.tokenizer_vocab_size", "model.lm.keep_layers"}


def test_the_short_overrides_load_and_change_sizes_only(tmp_path):
    common = [f"run.sources_dir={tmp_path}", f"run.artifact_root={tmp_path / 'art'}"]
    short = load_config(overrides(tmp_path, tmp_path / "art"))
    plain = load_config(["profile=gpu1", *common])
    assert short.model.lm == plain.model.lm  # the profile's own LM: the real SmolLM2 from the sources
    assert 10 <= short.train.nugget2d.max_steps <= 50 and short.train.re.max_steps == short.train.nugget.max_steps
    before, after = dataclasses.asdict(plain), dataclasses.asdict(short)
    assert non_size_differences(before, after) == []
    changed = {k for k, v in flatten(after).items() if flatten(before).get(k) != v}
    assert changed and not changed & SHAPE_FIELDS
    # batch sizes and generation lengths stay: per-step time and memory are the profile's
    assert not {k for k in changed if k.endswith(("batch_size", "max_new_tokens", "max_doc_tokens"))}
    assert all(any(fnmatchcase(k, p) for p in SIZE_FIELDS) or k == "train.sweep.ratios" for k in changed)


LINES = [
    "2026-12-01 10:00:00,000 INFO stages.framework.executor: [ 0/33 0s eta ?] build_lm               start  run key=ab (holds CPU 1)",
    "2026-12-01 10:00:01,000 INFO stages.framework.executor: [ 0/33 1s eta ?] tokenizer              cached key=cd",
    "2026-12-01 10:00:02,000 INFO stages.framework.executor: [ 0/33 2s eta ?] train_nugget           start  run key=ef (holds GPU 1)",
    "2026-12-01 10:00:05,000 INFO stages.framework.executor: [ 1/33 5s eta ?] build_lm               done   in 5s -> /a",
    "2026-12-01 10:00:09,000 ERROR stages.framework.executor: [ 2/33 9s eta ?] train_nugget           FAILED key=ef",
    "2026-12-01 10:00:09,500 INFO stages.framework.executor: [ 3/33 9s eta ?] eval_nugget            skipped: upstream failure: train_nugget",
    "some other line mentioning train_nugget done",
]


def test_stage_windows_from_the_log_lines_and_their_memory_peaks():
    log = StageLog()
    fed = [log.feed(line, now=t) for line, t in zip(LINES, [0, 1, 2, 5, 9, 9.5, 10], strict=True)]
    assert fed == [True] * 6 + [False]
    samples = [(0.5, 1 * GIB), (3.0, 8 * GIB), (4.0, 3 * GIB), (8.0, 5 * GIB), (12.0, 20 * GIB)]
    rows = {r["stage"]: r for r in log.table(samples, now=20)}
    assert rows["build_lm"] == {"stage": "build_lm", "status": "done", "seconds": 5.0, "peak_gib": 8.0,
                                "overlapped": ["train_nugget"]}
    assert rows["train_nugget"]["status"] == "failed" and rows["train_nugget"]["peak_gib"] == 8.0
    assert rows["tokenizer"]["status"] == "cached" and rows["tokenizer"]["seconds"] is None
    assert rows["eval_nugget"]["status"] == "skipped"
    assert window_peak(samples, 9, 11) is None


def test_the_sampler_writes_each_sample_as_it_goes(tmp_path):
    values = iter([GIB, None, 3 * GIB] + [2 * GIB] * 1000)
    sampler = Sampler(lambda: next(values), tmp_path / "mem.csv", interval=0.01).start()
    time.sleep(0.2)
    sampler.stop()
    used = [u for _, u in sampler.samples]
    assert used[:2] == [GIB, 3 * GIB] and max(used) == 3 * GIB
    lines = (tmp_path / "mem.csv").read_text().splitlines()
    assert lines[0] == "unix_time,used_bytes" and len(lines) == len(used) + 1
