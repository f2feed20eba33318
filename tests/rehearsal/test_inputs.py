"""The rehearsal's local inputs (`tests.rehearsal.inputs`): written, loadable, and read by
the pipeline's own readers of profile=paper in every split its stages read."""

from __future__ import annotations

import csv
import json

import pytest

from stages.config import load_config
from stages.corpora import corpora
from stages.nugget import build_nugget_lm
from stages.nugget2d import build_lm
from stages.registry import DAG
from stages.restorable import build_re_data
from stages.restorable.build_re_retrieval import dpr_examples, dpr_test
from tests.rehearsal.inputs import COMPLETE, ensure_paper_inputs, main


@pytest.fixture(scope="module")
def data(paper_inputs):
    return load_config(["profile=paper", *paper_inputs.overrides]).data


def _models(paper_inputs) -> dict[str, str]:
    return {k: v for k, v in (o.split("=", 1) for o in paper_inputs.overrides) if k.startswith("model.")}


def test_overrides_name_every_external_input(paper_inputs):
    declared = {f for s in DAG.stages.values() for f in (*s.external_paths, *s.external_models)}
    given = {o.split("=", 1)[0] for o in paper_inputs.overrides}
    assert given == declared - {"eval.pi_data_dir", "eval.rr_data_dir"}  # those two are built by build_pi / build_rr
    assert all(o.split("=", 1)[1].startswith(str(paper_inputs.root)) for o in paper_inputs.overrides)
    size = sum(p.stat().st_size for p in paper_inputs.root.rglob("*") if p.is_file())
    assert size < 20e6, size


def test_the_command_reuses_a_finished_directory_only(paper_inputs, tmp_path, capsys):
    assert main(["--dir", str(paper_inputs.root)]) == 0  # finished: read back, nothing rewritten
    assert capsys.readouterr().out.splitlines() == paper_inputs.overrides
    half = tmp_path / "half"
    (half / "models").mkdir(parents=True)  # an interrupted write: no marker
    (half / "stale").write_text("x")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("tests.rehearsal.inputs.write_paper_inputs", lambda root: (root.mkdir(), ["a=b"])[1])
        assert ensure_paper_inputs(half) == ["a=b"]
    assert not (half / "stale").exists() and (half / COMPLETE).read_text() == "a=b\n"


def test_the_command_prints_only_overrides_while_writing(tmp_path, capsys, monkeypatch):
    def noisy(root):  # a library printing while the models are written (DeepSpeed's accelerator line)
        print("[2026-11-24 14:44:11] [WARNING] Setting accelerator to CPU.")
        root.mkdir()
        return ["a=b"]

    monkeypatch.setattr("tests.rehearsal.inputs.write_paper_inputs", noisy)
    assert main(["--dir", str(tmp_path / "fresh")]) == 0  # `$(python -m tests.rehearsal.inputs ...)` reads stdout
    out = capsys.readouterr()
    assert out.out.splitlines() == ["a=b"] and "Setting accelerator" in out.err


def test_mbart50_folder_loads_and_codes_languages(paper_inputs):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from stages.common.languages import has_language_codes

    path = _models(paper_inputs)["model.seq2seq.name_or_path"]
    tok = AutoTokenizer.from_pretrained(path, src_lang="en_XX", tgt_lang="zh_CN")
    assert type(tok).__name__ == "MBart50Tokenizer" and has_language_codes(tok) and len(tok.lang_code_to_id) == 52
    enc = tok("The old river was quiet.", text_target="河流很安静。")
    assert enc["input_ids"][0] == tok.lang_code_to_id["en_XX"] and enc["input_ids"][-1] == tok.eos_token_id
    assert enc["labels"][0] == tok.lang_code_to_id["zh_CN"] and tok.convert_ids_to_tokens(len(tok) - 1) == "<mask>"
    model = AutoModelForSeq2SeqLM.from_pretrained(path)
    assert type(model).__name__ == "MBartForConditionalGeneration"
    assert (model.config.encoder_layers, model.config.decoder_layers) == (12, 12)
    assert model.config.vocab_size == len(tok)


def test_llama2_folders_load_with_bos_and_the_chat_template(paper_inputs):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    models = _models(paper_inputs)
    base, chat = (AutoTokenizer.from_pretrained(models[k]) for k in ("model.lm.name_or_path",
                                                                     "model.lm.chat_name_or_path"))
    ids = base("Dr. Anna said 日本")["input_ids"]
    assert ids[0] == base.bos_token_id == 1 and base.eos_token_id == 2 and base.unk_token_id == 0
    assert "<0xE6>" in base.convert_ids_to_tokens(ids)  # unseen characters fall back to bytes
    assert base.get_vocab() == chat.get_vocab() and base.chat_template is None
    rendered = chat.apply_chat_template([{"role": "system", "content": "Be brief."},
                                         {"role": "user", "content": "Hi"}], tokenize=False)
    assert rendered == "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]"
    for key in ("model.lm.name_or_path", "model.lm.chat_name_or_path"):
        model = AutoModelForCausalLM.from_pretrained(models[key])
        assert type(model).__name__ == "LlamaForCausalLM" and model.config.num_hidden_layers == 32


def test_t5_small_folder_loads_with_sentinels(paper_inputs):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    path = _models(paper_inputs)["model.re.name_or_path"]
    tok = AutoTokenizer.from_pretrained(path)
    assert (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2)
    assert tok("a river")["input_ids"][-1] == tok.eos_token_id
    assert tok.convert_tokens_to_ids("<extra_id_0>") == len(tok) - 1  # counted down from the end, as T5's
    assert tok.convert_tokens_to_ids("<extra_id_99>") == len(tok) - 100
    model = AutoModelForSeq2SeqLM.from_pretrained(path)
    assert (model.config.num_layers, model.config.num_decoder_layers) == (6, 6)
    assert model.config.vocab_size >= len(tok)


def test_wmt19_parabank_and_wikitext_read_by_corpora(data):
    for split in ("train", "validation"):
        assert corpora.mt_corpus(data.mt, None, split).n_units >= 90
    pi = corpora.pi_corpus(data.pi, None)
    assert pi.n_units == 900 and pi.notes["skipped_empty_pairs"] == 0
    articles = corpora.rr_articles(data.rr, None)
    usable = [a for a in articles if a.sections[0][1] and len(a.sections) >= 2]
    assert len(usable) == len(articles) >= 30
    assert sum(len(a.sections) - 1 for a in articles[1:]) > data.rr.negatives  # BM25 pool of other articles
    assert all(h != "References" for a in articles for h, _ in a.sections)


def test_wikitext_read_by_build_nugget_lm_in_every_split(data):
    texts = build_nugget_lm._articles(data.nugget_lm, None, 0)
    assert {s: len(t) for s, t in texts.items()} == {"train": 36, "dev": 4, "test": 4}
    assert "<unk>" in " ".join(texts["test"]) and " = = " in texts["test"][0]


def test_build_lm_pools_hold_every_split(data):
    pools = build_lm._paper_pools(data.lm)
    labels = {name: build_lm._labels(pool.labels, data.lm, 0) for name, pool in pools.items()}
    for name, splits in (("wiki", {"dev", "test"}), ("pile", {"train", "dev", "test"}),
                         ("qa", {"train", "dev", "test"}), ("summ", {"train", "dev", "test"})):
        assert set(labels[name]) == splits, name
    for context, _, answers in pools["qa"].items:
        assert all(a in context for a in answers)


def test_build_lm_documents_fill_lm_segments(data, paper_inputs):
    from transformers import AutoTokenizer

    from stages.nugget2d.lm_builders import lm_segments

    tok = AutoTokenizer.from_pretrained(_models(paper_inputs)["model.lm.name_or_path"])
    pools = build_lm._paper_pools(data.lm)
    for name in ("wiki", "pile"):
        docs = [tok(t)["input_ids"] for t in pools[name].items]
        segments = lm_segments(docs, data.lm.distant_tokens, data.lm.recent_tokens)
        assert len(segments) >= 2 * len(docs), name  # at least two whole 704 + 128 segments a document
        assert all(len(s["recent"]) == data.lm.recent_tokens for s in segments[::2])


def test_c4_read_by_build_re_data_with_punkt(data):
    parts, record = build_re_data.documents(data.re, None, 0)
    docs = {split: list(d) for split, d in parts.items()}
    assert (len(docs["train"]), len(docs["dev"])) == (80, 16) and record["punkt_documents"] == 80
    assert all(len(s) >= 5 for _, s in docs["dev"])  # a 5-sentence window in every article
    assert {"mr", "dr", "mrs"} <= set(record["abbreviations"])  # learned from the fixture text


def test_dpr_files_read_by_build_re_retrieval(data):
    cfg = data.re_retrieval
    train, dev = list(dpr_examples(cfg.nq_train_file)), list(dpr_examples(cfg.nq_dev_file))
    assert (len(train), len(dev)) == (96, 24) and all(len(x["negatives"]) == 5 for x in train)
    with open(cfg.passages_file, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))  # DPR's own reading of psgs_w100.tsv
    assert rows[0] == ["id", "text", "title"]
    passages = {r[0]: r[1] for r in rows[1:]}
    raw = json.loads(open(cfg.nq_train_file, encoding="utf-8").read())
    assert all(passages[q["positive_ctxs"][0]["passage_id"]] == q["positive_ctxs"][0]["text"] for q in raw)
    tests = dpr_test(cfg.nq_test_file)
    assert len(tests) == 30 and all(any(t["answers"][0] in p for p in passages.values()) for t in tests)


def test_dpr_passages_read_as_dpr_reads_them(data):
    from pathlib import Path

    from stages.restorable.artifacts import RetrievalData

    cfg = data.re_retrieval
    found = RetrievalData(Path(cfg.passages_file).parent, "dpr_nq", "", "answer", Path(cfg.passages_file), {})
    passages = {p.id: p.text for p in found.passage_lines()}
    assert len(passages) == 240 and not any(t.startswith('"') for t in passages.values())
    for q in json.loads(Path(cfg.nq_train_file).read_text(encoding="utf-8")):
        assert passages[q["positive_ctxs"][0]["passage_id"]] == q["positive_ctxs"][0]["text"]
