"""Training tasks on the base LM, without Ray (the tasks' own methods): the fine-tuning
tasks (Full FT baseline, Nugget2D objective finetune) read the task records exactly as
the evaluations do, train only on the answer, and Nugget2D fine-tuning starts from the
given checkpoint; the autoregressive task reuses a frozen scorer and a given Lambda."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from nugget_core.nugget2d.prompts import PromptFormat
from stages.common.prompts import encode_answers, encode_task_records
from stages.nugget2d.artifacts import LMRecords
from stages.nugget2d.full_ft_task import IGNORE, FullFinetuneTask
from stages.nugget2d.lm_builders import summary_record
from stages.nugget2d.nugget2d_task import (
    AutoregressiveModule,
    Nugget2DARTask,
    Nugget2DCompressorTask,
)
from tests.lm_eval.fixtures import ADAPTER, TEXTS, make_base_lm, make_nugget2d, make_tokenizer


@pytest.fixture(scope="module")
def lm_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ft")
    base = root / "base"
    tok = make_tokenizer(base)
    make_base_lm(len(tok)).save_pretrained(base)
    data = root / "data"
    data.mkdir()
    with open(data / "summarization.jsonl", "w") as fh:
        for i in range(8):
            record = summary_record(" ".join(TEXTS[i : i + 3]), TEXTS[i + 3])
            fh.write(json.dumps({"id": f"s{i}", "split": "train" if i < 6 else "dev", **record}) + "\n")
    ids = make_tokenizer()(" ".join(TEXTS), add_special_tokens=False)["input_ids"]
    segments = [{"split": "train" if i < 6 else "dev", "distant": ids[s : s + 16], "recent": ids[s + 16 : s + 24]}
                for i, s in enumerate(range(0, 24 * 8, 24))]
    pq.write_table(pa.Table.from_pylist(segments), data / "lm_pile.parquet")
    return base, data


def _records(data):
    return [json.loads(x) for x in (data / "summarization.jsonl").read_text().splitlines()]


def test_task_records_are_cut_where_the_prompt_begins(lm_dirs):
    base, data = lm_dirs
    tok = make_tokenizer()
    records = _records(data)
    fmt = PromptFormat("inst")
    docs, prompts = encode_task_records(tok, records, fmt)
    assert tok.decode(docs[0]).startswith("[INST]") and TEXTS[0][:20] in tok.decode(docs[0])
    assert tok.decode(prompts[0]).strip() == records[0]["prompt"]
    assert [d + p for d, p in zip(docs, prompts, strict=True)] == [
        tok(r["full_prompt"], add_special_tokens=False)["input_ids"] for r in records
    ]  # nothing lost or added at the cut (the prompt starts a new word)
    short, same_prompts = encode_task_records(tok, records, fmt, max_doc_tokens=5)
    assert all(len(d) == 5 for d in short) and same_prompts == prompts  # only the document is cut
    answers = encode_answers(tok, records, fmt)
    assert all(a[-1] == tok.eos_token_id for a in answers)
    assert tok.decode(answers[0][:-1]).strip() == records[0]["answer"]


def test_full_ft_loss_is_the_nll_of_answer_and_eos_only(lm_dirs):
    base, data = lm_dirs
    task = FullFinetuneTask(LMRecords(data), str(base), "summarization", lora_rank=4, lora_alpha=4, **ADAPTER, max_doc_tokens=10)
    rows = task.load_split("train")[:3]
    batch = task.collate(rows, step=0, rank=0, train=True)
    assert task.n_target_tokens(batch) == sum(len(r["answer"]) for r in rows)
    assert task.n_tokens(batch) == sum(len(r["doc"]) + len(r["prompt"]) + len(r["answer"]) for r in rows)
    model = task.build_model(None).eval()
    with torch.no_grad():
        loss = task.loss(model, batch)
        logp = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.log_softmax(-1)
    nll = []
    for i, r in enumerate(rows):  # by hand: each answer token from the logits one position earlier
        start = len(r["doc"]) + len(r["prompt"])
        nll += [-logp[i, start + j - 1, t] for j, t in enumerate(r["answer"])]
    torch.testing.assert_close(loss, torch.stack(nll).mean())
    assert (batch["labels"][:, : len(rows[0]["doc"])] == IGNORE).all()


def test_full_ft_adapter_has_nugget2d_shape_and_only_it_trains(lm_dirs):
    base, data = lm_dirs
    model = FullFinetuneTask(LMRecords(data), str(base), "summarization", lora_rank=4, lora_alpha=4, **ADAPTER).build_model(None)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert model.peft_config["default"].r == 4
    assert sorted(model.peft_config["default"].target_modules) == ["q_proj", "v_proj"]  # follows nugget2d.*


def test_activation_checkpointing_of_the_full_ft_task_keeps_its_gradients(lm_dirs):
    """``train.full_ft.activation_checkpointing``: the task turns on HF's per-layer
    checkpointing (one always-on adapter: nothing to reinstate), gradients unchanged;
    a task without support refuses the flag by name."""
    from stages.nugget.nugget_lm_task import NuggetLMTask

    base, data = lm_dirs
    task = FullFinetuneTask(LMRecords(data), str(base), "summarization", lora_rank=4, lora_alpha=4, **ADAPTER,
                            max_doc_tokens=10)
    batch = task.collate(task.load_split("train")[:3], step=0, rank=0, train=True)

    def gradients(checkpointing: bool) -> dict[str, torch.Tensor]:
        torch.manual_seed(0)
        model = task.build_model(None).train()
        with torch.no_grad():  # LoRA B starts at 0: make the adapter shape the activations
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.normal_(std=0.3)
        if checkpointing:
            task.enable_activation_checkpointing(model)
            assert model.is_gradient_checkpointing
        task.loss(model, batch).backward()
        return {n: p.grad for n, p in model.named_parameters() if p.grad is not None}

    plain, checkpointed = gradients(False), gradients(True)
    assert plain.keys() == checkpointed.keys() and plain
    for name, grad in plain.items():
        torch.testing.assert_close(checkpointed[name], grad, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="NuggetLMTask does not support activation_checkpointing"):
        NuggetLMTask.__new__(NuggetLMTask).enable_activation_checkpointing(torch.nn.Linear(2, 2))


def test_nugget2d_finetune_starts_from_init_dir(lm_dirs, tmp_path):
    from transformers import AutoModelForCausalLM

    from nugget_core.nugget2d import save_nugget2d
    from stages.config import load_config

    base, data = lm_dirs
    saved = make_nugget2d(AutoModelForCausalLM.from_pretrained(str(base)), seed=3)
    save_nugget2d(saved, tmp_path / "start")
    cfg = load_config(["nugget2d.lora_rank=4", "nugget2d.scorer_layer=1"])
    task = Nugget2DCompressorTask(LMRecords(data), str(base), cfg.nugget2d, objective="finetune",
                                  finetune_task="summarization", max_doc_tokens=10, init_dir=str(tmp_path / "start"))
    module = task.build_model(None)
    expected = dict(saved.named_parameters())
    for name, p in module.model.named_parameters():
        torch.testing.assert_close(p, expected[name], msg=name)
    rows = task.load_split("train")
    assert all(len(r["doc"]) == 10 and r["answer"][-1] == task.tokenizer().eos_token_id for r in rows)
    assert not module.model.soft_prompt.requires_grad  # finetune reads no soft prompt
    batch = task.collate(rows[:2], step=0, rank=0, train=True)
    assert torch.isfinite(task.loss(module, batch))


def test_autoregressive_task_freezes_the_reused_scorer_and_uses_the_given_lambda(lm_dirs, tmp_path):
    from transformers import AutoModelForCausalLM

    from nugget_core.nugget2d import save_nugget2d
    from stages.config import load_config

    base, data = lm_dirs
    compressor = make_nugget2d(AutoModelForCausalLM.from_pretrained(str(base)), recent_window=8, seed=4)
    save_nugget2d(compressor, tmp_path / "compressor")
    cfg = load_config(["nugget2d.lora_rank=4", "nugget2d.scorer_layer=1", "nugget2d.recent_window=8"])
    task = Nugget2DARTask(LMRecords(data), str(base), cfg.nugget2d, scorer_dir=str(tmp_path / "compressor"),
                          threshold=0.25)
    module = task.build_model(None)
    assert module.threshold == 0.25
    for (name, p), q in zip(module.model.scorer.state_dict().items(), compressor.scorer.state_dict().values(),
                            strict=True):
        torch.testing.assert_close(p, q, msg=name)
    assert not any(p.requires_grad for p in module.model.scorer.parameters())
    assert any(p.requires_grad for n, p in module.model.named_parameters() if "lora_" in n)
    batch = task.collate(task.load_split("train")[:2], step=0, rank=0, train=True)
    with torch.no_grad():
        losses = [AutoregressiveModule(module.model, t)(**batch).loss for t in (-1e9, 0.25, 1e9)]
    assert losses[0] != losses[2]  # every distant token a nugget vs none: the threshold is used
