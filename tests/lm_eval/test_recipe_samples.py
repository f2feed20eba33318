"""The per-sample rows of the Nugget2D evaluation recipes (stages/nugget2d/lm/qa.py,
summarization.py, language_modelling.py): one row per example and system, each with the
input as fed, the target, the output, every metric and the system's settings."""

from __future__ import annotations

from nugget_core.nugget2d.prompts import PromptFormat
from stages.nugget2d.config import LMContextSetting, LMEval, QAEval, SummarizationEval
from stages.nugget2d.lm.qa import evaluate_qa
from stages.nugget2d.lm.summarization import evaluate_summarization
from tests.lm_eval.fixtures import TEXTS

QUESTION = "Fill in the blank: the _____"
RECORDS = [{"id": f"r{i}", "document": TEXTS[i], "instruction": QUESTION, "answer": "river", "answers": ["river"]}
           for i in range(2)]


def _word(i: int) -> str:
    """A word of ``TEXTS[i]`` that no prompt holds."""
    return max(TEXTS[i].split(), key=len)


def test_qa_rows_hold_the_fed_prompt_target_output_and_metrics(model, tokenizer):
    section = QAEval(systems=["full", "nodoc", "nugget2d"], nugget_ratios=[0.5], batch_size=2, max_new_tokens=3)
    result = evaluate_qa(model, tokenizer, RECORDS, section, prompt_format=PromptFormat("inst"))
    assert [(e["system"], e["id"]) for e in result.examples] == [
        (s, r["id"]) for s in ("full", "nodoc", "nugget2d 2x") for r in RECORDS]
    for e in result.examples:
        record = RECORDS[int(e["id"][1:])]
        assert (e["document"], e["question"], e["target"]) == (record["document"], QUESTION, "river")
        assert QUESTION in e["prompt"] and isinstance(e["output"], str) and isinstance(e["correct"], bool)
        assert e["gold_answers"] == ["river"] and e["doc_tokens"] > 0
        assert {"empty_output", "degenerate", "generated_tokens", "kv_bytes"} <= set(e)
    full, nodoc, nugget = (next(e for e in result.examples if e["system"] == s) for s in ("full", "nodoc", "nugget2d 2x"))
    # Full and Nugget2D read the document part; NoDoc reads none of it
    assert _word(0) in full["context"] and full["context"] == nugget["context"]
    assert _word(0) not in nodoc["context"] + nodoc["prompt"] and QUESTION in nodoc["prompt"]
    assert (full["ratio"], nugget["ratio"]) == (None, 0.5)


def test_summarization_rows_hold_document_reference_rouge_and_ratio(model, tokenizer):
    records = [{"id": f"s{i}", "document": TEXTS[i], "instruction": "Summarize.", "answer": TEXTS[i + 1]}
               for i in range(2)]
    section = SummarizationEval(systems=["full_zs", "nugget2d_ft"], nugget_ratio=0.5, max_new_tokens=3)
    result = evaluate_summarization(model, tokenizer, records, section, prompt_format=PromptFormat("inst"))
    assert [(e["system"], e["id"]) for e in result.examples] == [
        (s, r["id"]) for s in ("full_zs", "nugget2d_ft") for r in records]
    for e, record in zip(result.examples, records * 2, strict=True):
        assert (e["document"], e["target"]) == (record["document"], record["answer"])
        assert "Summarize." in e["prompt"] and _word(int(e["id"][1:])) in e["context"]
        assert all(0 <= e[m] <= 100 for m in ("rouge1", "rouge2", "rougeL")) and isinstance(e["output"], str)
    assert [e["ratio"] for e in result.examples] == [None, None, 0.5, 0.5]


def test_lm_rows_hold_history_scored_text_and_loss(model, tokenizer):
    import math

    import numpy as np

    from stages.common.degenerate import UnigramModel
    from stages.nugget2d.lm.language_modelling import evaluate_lm

    ids = tokenizer(" ".join(TEXTS[:10]), add_special_tokens=False)["input_ids"]
    segments = {"wiki": [(ids[s : s + 12], ids[s + 12 : s + 18]) for s in (0, 18)]}
    section = LMEval(corpora=["wiki"], systems=["full", "nugget2d"], baseline_adapter="none",
                     contexts=[LMContextSetting(total_states=6, compressed_tokens=10, context_tokens=3)])
    result = evaluate_lm(model, tokenizer, segments, section, threshold=0.0, ratio=0.5,
                         unigrams={"wiki": UnigramModel.fit([np.array(ids[40:])], len(tokenizer))},
                         documents={"wiki": ["wiki-0", "wiki-1"]})
    assert [(e["system"], e["id"]) for e in result.examples] == [
        ("full", "wiki-0"), ("nugget2d", "wiki-0"), ("full", "wiki-1"), ("nugget2d", "wiki-1")]
    for e in result.examples:
        distant, recent = segments["wiki"][e["segment"]]
        assert e["history"] == tokenizer.decode(distant) and e["target"] == tokenizer.decode(recent)
        assert e["output"] is None and e["tokens"] == 6 and e["context"] == "6/10/3"
        assert e["document"] == f"wiki-{e['segment']}"
        assert math.exp(e["loss"]) == e["subword_ppl"] or abs(math.exp(e["loss"]) / e["subword_ppl"] - 1) < 1e-9
        assert e["unigram_ppl"] > 1


def test_autoencoding_rows_hold_document_decoded_text_and_sentence_scores():
    from stages.nugget2d.eval_nugget2d_ae import reconstruction_samples

    docs = ["the cat sat on the mat", "a dog ran"]
    rows = reconstruction_samples("icae r0.25", 8, ["the cat sat on the mat", ""], docs, [2, 2], ["wiki-3", "pile-0"])
    assert [(r["id"], r["system"], r["model"], r["ratio"], r["length"]) for r in rows] == [
        ("L8-0", "icae r0.25", "icae", 0.25, 8), ("L8-1", "icae r0.25", "icae", 0.25, 8)]
    assert [r["document"] for r in rows] == [r["target"] for r in rows] == docs
    assert [r["document_id"] for r in rows] == ["wiki-3", "pile-0"]
    assert (round(rows[0]["bleu"], 6), round(rows[0]["chrf"], 6), rows[0]["empty_output"]) == (100, 100, False)
    assert (rows[1]["bleu"], rows[1]["empty_output"], rows[1]["states"]) == (0.0, True, 2)
