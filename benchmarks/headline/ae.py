"""``python -m benchmarks.headline ae``: Nugget autoencoding, the paper's fig. 4 (and fig. 5).

Per ratio of ``--ratios`` (headline ratio first): a fresh from-scratch Nugget BART
(`benchmarks.headline.nugget_ae`) trains for the preset's seconds on the training documents,
then beam-searches every held-out test document back from its nuggets; corpus BLEU with its
interval over documents (`benchmarks.headline.scoring`). The r = 0.1 model also counts which
tokens its scorer selects (fig. 5). ``ae-r<ratio>.json`` is written as soon as its ratio is
trained (status "trained; scoring not finished") and again when scored; ``ae.json`` (every
ratio's status and BLEU so far) after each ratio. A ratio whose estimated time (build +
training + scoring) exceeds what ``--max-seconds`` leaves is not started: its file says
"not run: no time".
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.headline import nugget_ae
from benchmarks.headline.budget import MARGIN_S, NO_TIME, Deadline, scoring_estimate, share_seconds
from benchmarks.headline.dataset import HeadlineData
from benchmarks.headline.environment import RunDevice, release, versions
from benchmarks.headline.loop import epoch_sampler, train
from benchmarks.headline.presets import WHY, AEPreset, recipe
from benchmarks.headline.records import (
    DONE,
    SCHEMA,
    SCORING,
    fig5_reference,
    nugget_reference,
    result_header,
    write_json,
)
from benchmarks.headline.scoring import bleu_result, cell
from stages.common.device import place_model

EXPERIMENT = "nugget_autoencoding"
SYSTEM = "nugget_ae"
FIG5_RATIO = 0.1  # the paper counts the tokens of its r = 0.1 AE model


def result_name(ratio: float) -> str:
    return f"ae-r{ratio:g}.json"


class AERun:
    """One ``ae`` command: the data, the device, the budget, and what was measured so far."""

    def __init__(self, data_dir: Path, out: Path, preset: AEPreset, run: RunDevice, deadline: Deadline,
                 seed: int = 0, size: str = "gpu", fixed_seconds: bool = False) -> None:
        self.out, self.preset, self.run, self.deadline, self.seed = out, preset, run, deadline, seed
        self.fixed_seconds, self.seconds = fixed_seconds, preset.loop.seconds
        data = HeadlineData.read(data_dir)
        self.tok = data.tokenizer()
        self.train_docs, self.test_docs, self.test_ids = data.train_and_test(preset.max_doc_tokens, preset.test_docs)
        self.references = nugget_ae.references(self.tok, self.test_docs)
        self.header = {**run.describe(), "versions": versions()}
        self.recipe = {"size": size, "seed": seed, "preset": recipe(preset),
                       "why": {k: v for k, v in WHY.items() if k.startswith(("ae.", "data.")) or k == size},
                       "data": {"folder": str(data_dir), "train_documents": len(self.train_docs),
                                "test_documents": len(self.test_docs), **data.meta}}
        self.scoring_seconds: list[float] = []
        self.summary: dict[str, Any] = {"schema": SCHEMA, "experiment": EXPERIMENT, **self.header,
                                        "order": list(preset.ratios),
                                        "ratios": {}}

    def plan_seconds(self) -> float:
        """Training seconds per ratio: ``--seconds-per-ratio`` if given, else an equal share of
        what ``--max-seconds`` leaves once every ratio's build, scoring and margin are set aside,
        at most the preset's (so every ratio fits, and each trains as long as the others)."""
        p = self.preset
        if self.fixed_seconds:
            return p.loop.seconds
        n = len(p.ratios)
        overhead = n * (p.build_seconds_estimate + scoring_estimate([], p.eval_seconds_estimate) + MARGIN_S)
        return share_seconds(self.deadline.left(), n, overhead, p.loop.seconds, p.loop.min_seconds)

    def estimate(self) -> float:
        """Seconds one more ratio is expected to take (build, training, scoring)."""
        return (self.preset.build_seconds_estimate + self.seconds
                + scoring_estimate(self.scoring_seconds, self.preset.eval_seconds_estimate))

    def run_all(self) -> dict[str, Any]:
        self.seconds = self.plan_seconds()
        how = "--seconds-per-ratio" if self.fixed_seconds else "an equal share of --max-seconds, at most the preset's"
        self.summary["train_seconds_per_ratio"] = {"seconds": round(self.seconds, 1), "from": how}
        self.recipe["train_seconds_per_ratio"] = self.summary["train_seconds_per_ratio"]
        for ratio in self.preset.ratios:
            record = result_header(EXPERIMENT, SYSTEM, ratio, self.header, self.recipe, nugget_reference(ratio))
            estimate = self.estimate()
            if not self.deadline.allows(estimate):
                record |= {"status": NO_TIME, "budget": {**self.deadline.describe(), "estimate": round(estimate, 1)}}
                print(f"[ae] r={ratio:g}: {NO_TIME} ({self.deadline.left():.0f} s left, ~{estimate:.0f} s needed)")
            else:
                try:
                    self.run_ratio(ratio, record)
                except Exception as exc:  # noqa: BLE001 (one ratio's failure must not lose the others' files)
                    record["status"] = f"failed: {type(exc).__name__}: {exc}"
                    record["traceback"] = traceback.format_exc()[-3000:]
                    print(f"[ae] r={ratio:g}: {record['status']}")
                release(self.run)
            write_json(self.out / result_name(ratio), record)
            self.summary["ratios"][f"{ratio:g}"] = {
                "file": result_name(ratio), "status": record["status"],
                **{k: record.get("eval", {}).get(k) for k in ("bleu", "interval", "n_documents")},
                "steps": record.get("train", {}).get("steps"), "reference": record["reference"]["value"]}
            self.summary["budget"] = self.deadline.describe()
            write_json(self.out / "ae.json", self.summary)
        return self.summary

    def run_ratio(self, ratio: float, record: dict[str, Any]) -> None:
        preset, run, t0 = self.preset, self.run, time.monotonic()
        model = nugget_ae.build_model(self.tok, preset, ratio, self.seed).to(run.device)
        sp = nugget_ae.bart_specials(self.tok)
        pick = epoch_sampler(len(self.train_docs), preset.loop.batch_size, self.seed)
        built = time.monotonic() - t0
        print(f"[ae] r={ratio:g}: training {self.seconds:.0f} s on {len(self.train_docs)} documents "
              f"({self.deadline.left():.0f} s left)")
        trained = train(model, nugget_ae.loss_of(model),
                        lambda step: nugget_ae.batch_of([self.train_docs[i] for i in pick(step)], sp),
                        nugget_ae.tokens_of, preset.loop, run, seconds=self.seconds)
        record |= {"status": SCORING, "model": {k: asdict(v) for k, v in model.parameter_counts().items()},
                   "train": trained.summary(),
                   "seconds": {"build": round(built, 2), "train": round(trained.seconds, 2)}}
        write_json(self.out / result_name(ratio), record)
        print(f"[ae] r={ratio:g}: {trained.steps} steps, loss {record['train']['first_loss']:.3f} -> "
              f"{record['train']['final_loss']:.3f}, {record['train']['target_tokens_per_s']:.0f} target tokens/s")
        t1 = time.monotonic()
        model = place_model(model, run.device, run.eval_precision)
        hyps = nugget_ae.reconstruct(model, self.tok, self.test_docs, preset.beams, preset.eval_batch, run.device)
        scored = bleu_result(hyps, self.references, self.test_ids)
        record["eval"] = {"beams": preset.beams, "max_new_tokens": "document length + 2", **scored}
        record["bleu"] = cell(scored["bleu"], scored["interval"], scored["n_documents"], scored["degenerate"],
                              scored["interval_note"])
        record["seconds"]["scoring"] = round(time.monotonic() - t1, 2)
        self.scoring_seconds.append(record["seconds"]["scoring"])
        if abs(ratio - FIG5_RATIO) < 1e-9:
            t2 = time.monotonic()
            n = min(preset.token_stats_docs, len(self.test_docs))
            record["tokens"] = {"figure": "Nugget fig. 5", "reference": fig5_reference(),
                                **nugget_ae.token_frequencies(model, self.tok, self.test_docs[:n], self.test_ids[:n],
                                                              preset.eval_batch, run.device)}
            record["seconds"]["tokens"] = round(time.monotonic() - t2, 2)
        record["seconds"]["total"] = round(time.monotonic() - t0, 2)
        record["status"] = DONE
        interval = scored["interval"] or scored["interval_note"]
        print(f"[ae] r={ratio:g}: BLEU {scored['bleu']:.1f} {interval} (n={scored['n_documents']} documents; "
              f"scoring {record['seconds']['scoring']:.1f} s)")
        del model
        release(run)
