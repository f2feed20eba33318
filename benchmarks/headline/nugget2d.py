"""``python -m benchmarks.headline nugget2d``: Nugget2D vs ICAE autoencoding (Nugget2D §4).

The LM (SmolLM2-135M-Instruct's real weights, from its GGUF or an HF folder) is loaded once,
timed, and copied under each system (`benchmarks.headline.nugget2d_systems`). Per ratio of
``--ratios`` (0.1 first): Nugget2D trains for the preset's seconds; ICAE then trains the same
number of steps on the same batches (equal examples, so the pair compares methods; its time
is capped and recorded); each greedily reconstructs every held-out test document, scored by
BLEU with its interval over documents. ``nugget2d-r<r>.json`` / ``icae-r<r>.json`` are written
as each system finishes (and once between its training and its scoring); ``nugget2d.json``
holds the LM load time and, per ratio, the pair: Nugget2D - ICAE with the *paired* 95%
interval over the documents both were scored on. A ratio is started only if both systems are
expected to finish in what ``--max-seconds`` leaves.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks.headline import nugget2d_systems as systems
from benchmarks.headline.budget import MARGIN_S, NO_TIME, Deadline, scoring_estimate, share_seconds
from benchmarks.headline.dataset import HeadlineData
from benchmarks.headline.environment import RunDevice, release, versions
from benchmarks.headline.loop import epoch_sampler, train
from benchmarks.headline.presets import WHY, Nugget2DPreset, recipe
from benchmarks.headline.records import (
    DONE,
    SCHEMA,
    SCORING,
    nugget2d_reference,
    pair_reference,
    result_header,
    write_json,
)
from benchmarks.headline.scoring import bleu_result, cell, paired_difference
from stages.common.device import place_model

EXPERIMENT = "nugget2d_autoencoding"
PAIR = "nugget2d-icae"  # the pair's file and system name: Nugget2D - ICAE


def result_name(system: str, ratio: float) -> str:
    return f"{system}-r{ratio:g}.json"


class Nugget2DRun:
    """One ``nugget2d`` command: data, device, budget, the loaded LM and what was measured."""

    def __init__(self, data_dir: Path, out: Path, preset: Nugget2DPreset, run: RunDevice, deadline: Deadline,
                 seed: int = 0, size: str = "gpu", fixed_seconds: bool = False) -> None:
        self.out, self.preset, self.run, self.deadline, self.seed = out, preset, run, deadline, seed
        self.fixed_seconds, self.seconds = fixed_seconds, preset.loop.seconds
        data = HeadlineData.read(data_dir)
        self.tok = data.tokenizer()
        self.eos = int(self.tok.eos_token_id)
        self.pad = int(self.tok.pad_token_id if self.tok.pad_token_id is not None else self.eos)
        self.train_docs, self.test_docs, self.test_ids = data.train_and_test(preset.max_doc_tokens, preset.test_docs)
        self.references = [t.strip() for t in self.tok.batch_decode(self.test_docs, skip_special_tokens=True)]
        self.header = {**run.describe(), "versions": versions()}
        self.recipe = {"size": size, "seed": seed, "preset": recipe(preset),
                       "why": {k: v for k, v in WHY.items() if k.startswith(("nugget2d.", "data.")) or k == size},
                       "data": {"folder": str(data_dir), "train_documents": len(self.train_docs),
                                "test_documents": len(self.test_docs), **data.meta}}
        self.scoring_seconds: list[float] = []
        self.icae_seconds: list[float] = []
        self.summary: dict[str, Any] = {"schema": SCHEMA, "experiment": EXPERIMENT, **self.header,
                                        "order": list(preset.ratios),
                                        "pairs": {}, "systems": {}}

    def overhead(self) -> float:
        """Seconds of a ratio besides training: two builds, two scorings, margins."""
        p = self.preset
        return 2 * (p.build_seconds_estimate + scoring_estimate(self.scoring_seconds, p.eval_seconds_estimate)
                    + MARGIN_S)

    def plan_seconds(self) -> float:
        """Nugget2D's training seconds: ``--seconds-per-system`` if given, else what the first
        ratio's pair can have of what ``--max-seconds`` leaves after the LM load (ICAE's run
        counted as ``icae_step_cost`` of Nugget2D's), at most the preset's."""
        p = self.preset
        if self.fixed_seconds:
            return p.loop.seconds
        return share_seconds(self.deadline.left(), 1 + p.icae_step_cost, self.overhead(), p.loop.seconds,
                             p.loop.min_seconds)

    def icae_estimate(self) -> float:
        p = self.preset
        found = 1.1 * max(self.icae_seconds) if self.icae_seconds else p.icae_step_cost * self.seconds
        return min(found, p.icae_seconds_cap)

    def estimate(self) -> float:
        """Seconds one more ratio (both systems) is expected to take."""
        return self.overhead() + self.seconds + self.icae_estimate()

    def run_all(self, gguf: str | None, lm_dir: str | None) -> dict[str, Any]:
        lm, info = systems.load_lm(gguf, lm_dir, self.preset.keep_layers)
        if info["vocab_size"] < len(self.tok):
            raise ValueError(f"the LM's vocabulary ({info['vocab_size']}) is smaller than the data's tokenizer "
                             f"({len(self.tok)}): the documents are not this LM's token ids")
        self.summary["lm"] = info
        self.seconds = self.plan_seconds()
        how = ("--seconds-per-system" if self.fixed_seconds
               else "what --max-seconds leaves for the pair, at most the preset's")
        self.summary["train_seconds"] = {"nugget2d": round(self.seconds, 1), "icae": "as many steps as Nugget2D",
                                         "from": how}
        self.recipe["train_seconds"] = self.summary["train_seconds"]
        print(f"[nugget2d] LM: {info['source']}, {info['layers']} layers, loaded in {info['load_seconds']:.1f} s; "
              f"{self.deadline.left():.0f} s left")
        write_json(self.out / "nugget2d.json", self.summary)
        for ratio in self.preset.ratios:
            estimate = self.estimate()
            if not self.deadline.allows(estimate):
                print(f"[nugget2d] r={ratio:g}: {NO_TIME} ({self.deadline.left():.0f} s left, "
                      f"~{estimate:.0f} s needed)")
                for system in systems.SYSTEMS:
                    budget = {**self.deadline.describe(), "estimate": round(estimate, 1)}
                    self._finish(system, ratio, {**self._header(system, ratio), "status": NO_TIME, "budget": budget})
                self.summary["pairs"][f"{ratio:g}"] = {"status": NO_TIME}
            else:
                self.run_pair(lm, ratio)
            self.summary["budget"] = self.deadline.describe()
            write_json(self.out / "nugget2d.json", self.summary)
        return self.summary

    def _header(self, system: str, ratio: float) -> dict[str, Any]:
        return result_header(EXPERIMENT, system, ratio, {**self.header, "lm": self.summary.get("lm")}, self.recipe,
                             nugget2d_reference(system, ratio))

    def _finish(self, system: str, ratio: float, record: dict[str, Any]) -> None:
        write_json(self.out / result_name(system, ratio), record)
        self.summary["systems"][f"{system}-r{ratio:g}"] = {
            "file": result_name(system, ratio), "status": record["status"],
            **{k: record.get("eval", {}).get(k) for k in ("bleu", "interval", "n_documents")},
            "steps": record.get("train", {}).get("steps"), "reference": record["reference"]["value"]}

    def run_pair(self, lm: Any, ratio: float) -> None:
        records: dict[str, dict[str, Any]] = {}
        steps: int | None = None
        for system in systems.SYSTEMS:
            record = self._header(system, ratio)
            if system == "icae" and steps is None:
                record["status"] = "not run: Nugget2D did not train, so ICAE has no step count to match"
            else:
                try:
                    self.run_system(lm, system, ratio, record, steps)
                except Exception as exc:  # noqa: BLE001 (one system's failure must not lose the other's file)
                    record["status"] = f"failed: {type(exc).__name__}: {exc}"
                    record["traceback"] = traceback.format_exc()[-3000:]
                    self.summary["failed"] = True
                    print(f"[nugget2d] {system} r={ratio:g}: {record['status']}")
                    release(self.run)
            if system == "nugget2d" and "train" in record:
                steps = record["train"]["steps"]
            self._finish(system, ratio, record)
            records[system] = record
        a, b = records["nugget2d"], records["icae"]
        if a["status"] == DONE and b["status"] == DONE:
            pair = {"status": DONE, "what": "Nugget2D - ICAE reconstruction BLEU",
                    **paired_difference(a["eval"], b["eval"]),
                    "bleu": {"nugget2d": a["eval"]["bleu"], "icae": b["eval"]["bleu"]},
                    "states": {"nugget2d": a["eval"]["states_mean"], "icae": b["eval"]["states_mean"]},
                    "a": {"system": "nugget2d", "per_document": a["eval"]["per_document"]},
                    "b": {"system": "icae", "per_document": b["eval"]["per_document"]}}
            write_json(self.out / result_name(PAIR, ratio), {
                "schema": SCHEMA, "experiment": EXPERIMENT, "system": PAIR, "ratio": ratio, "status": DONE,
                "difference": cell(pair["difference"], pair["interval"], pair["n_documents"], "",
                                   pair["interval_note"]),
                **self.header, "reference": pair_reference(), "pair": pair})
            shown = pair["interval"] or pair["interval_note"]
            print(f"[nugget2d] r={ratio:g}: Nugget2D - ICAE = {pair['difference']:+.1f} BLEU {shown}")
        else:
            pair = {"status": f"incomplete: nugget2d {a['status']}; icae {b['status']}"}
        self.summary["pairs"][f"{ratio:g}"] = pair

    def run_system(self, lm: Any, system: str, ratio: float, record: dict[str, Any], steps: int | None) -> None:
        p, run, t0 = self.preset, self.run, time.monotonic()
        model = systems.build_system(lm, system, ratio, p, self.seed).to(run.device)
        pick = epoch_sampler(len(self.train_docs), p.loop.batch_size, self.seed)  # the same batches for both
        built = time.monotonic() - t0
        print(f"[nugget2d] {system} r={ratio:g}: training ({self.deadline.left():.0f} s left)")
        if steps is None:
            seconds, cap = self.seconds, p.loop.max_steps
        else:  # ICAE: Nugget2D's steps, unless the budget ends first (then fewer, and the result says so)
            left = self.deadline.left() - scoring_estimate(self.scoring_seconds, p.eval_seconds_estimate) - MARGIN_S
            seconds, cap = max(1.0, min(p.icae_seconds_cap, left)), steps
        trained = train(model, systems.loss_of(model),
                        lambda step: systems.batch_of([self.train_docs[i] for i in pick(step)], self.eos, self.pad),
                        systems.tokens_of, p.loop, run, seconds=seconds, max_steps=cap)
        if system == "icae":
            self.icae_seconds.append(trained.seconds)
        trainable = sum(q.numel() for q in model.parameters() if q.requires_grad)
        total = sum(q.numel() for q in model.parameters())
        record |= {"status": SCORING, "model": {"trainable": trainable, "total": total},
                   "train": trained.summary(),
                   "seconds": {"build": round(built, 2), "train": round(trained.seconds, 2)}}
        if steps is not None:
            record["train"]["matched_steps"] = {"target": steps, "reached": trained.steps == steps}
        write_json(self.out / result_name(system, ratio), record)
        print(f"[nugget2d] {system} r={ratio:g}: {trained.steps} steps in {trained.seconds:.1f} s, loss "
              f"{record['train']['first_loss']:.3f} -> {record['train']['final_loss']:.3f}")
        t1 = time.monotonic()
        model = place_model(model, run.device, run.eval_precision)
        out = systems.reconstruct(model, self.test_docs, p.eval_batch, p.extra_tokens, self.eos, self.pad, run.device)
        hyps = [t.strip() for t in self.tok.batch_decode(out, skip_special_tokens=True)]
        kept = [systems.states_kept(system, ratio, len(d), p.max_doc_tokens) for d in self.test_docs]
        record["eval"] = {"decoding": f"greedy, to EOS or document length + {p.extra_tokens}",
                          "states_mean": sum(kept) / max(len(kept), 1),
                          "states_note": "KV positions per layer the decoder reads (nugget2d: ceil(r n); icae: slots)",
                          **bleu_result(hyps, self.references, self.test_ids)}
        record["seconds"] |= {"scoring": round(time.monotonic() - t1, 2), "total": round(time.monotonic() - t0, 2)}
        self.scoring_seconds.append(record["seconds"]["scoring"])
        ev = record["eval"]
        record["bleu"] = cell(ev["bleu"], ev["interval"], ev["n_documents"], ev["degenerate"], ev["interval_note"])
        record["status"] = DONE
        print(f"[nugget2d] {system} r={ratio:g}: BLEU {ev['bleu']:.1f} {ev['interval'] or ev['interval_note']} "
              f"(n={ev['n_documents']}; scoring {record['seconds']['scoring']:.1f} s)")
        del model
        release(run)
