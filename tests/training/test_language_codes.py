"""Every objective codes each side with its text's language (`stages.common.languages`):
mBART-50 AE writes English under ``en_XX`` (Nugget §3.4 / §4: "English documents on both
the source and target sides"), MT writes ``zh_CN``; the encoder-side-swapped systems of
appendix D mirror it; the RE restoration task writes its input's language. The old code
gave every AE model ``zh_CN`` labels (and the swapped AE ``en_XX`` ones)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from transformers import AutoTokenizer

from stages.common.languages import check_writes_its_input, set_language_codes, target_code_id
from stages.config import load_config
from stages.nugget.artifacts.data import MtDocuments
from stages.nugget.baseline_task import BaselineTask
from stages.nugget.nugget_task import NuggetTask
from tests.training.conftest import TINY
from tests.training.fixtures import make_docs, make_mbart50_tokenizer


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("codes")
    pq.write_table(pa.Table.from_pylist(make_docs(4, 1)), MtDocuments.split_file(root, "train"))
    return root, make_mbart50_tokenizer(root / "tokenizer")


def _first(task: NuggetTask):
    (example, *_) = task.load_split("train")
    tok = task.tokenizer()
    return tok.convert_ids_to_tokens(example.source[0]), tok.convert_ids_to_tokens(example.target[0])


@pytest.mark.parametrize(("objective", "side", "codes"), [
    ("ae", "source", ("en_XX", "en_XX")),  # the paper's AE: English on both sides
    ("mt", "source", ("en_XX", "zh_CN")),
    ("ae", "target", ("zh_CN", "zh_CN")),  # app. D: AE on the other language
    ("mt", "target", ("zh_CN", "en_XX")),  # ... and MT back to English
])
def test_labels_start_with_the_code_of_their_own_language(corpus, tmp_path, objective, side, codes):
    data, tok_dir = corpus
    cfg = load_config(TINY + [f"train.nugget.objective={objective}"])
    task = NuggetTask(MtDocuments(data), str(tok_dir), objective, cfg.nugget, cfg.model.seq2seq, encoder_side=side)
    assert _first(task) == codes
    task.tokenizer().save_pretrained(tmp_path / "model")  # what `export` writes beside the model
    saved = AutoTokenizer.from_pretrained(tmp_path / "model")
    assert (saved.src_lang, saved.tgt_lang) == codes  # evaluation decodes with these
    assert target_code_id(saved) == saved.convert_tokens_to_ids(codes[1])


def test_the_baselines_code_their_labels_as_nugget_does(corpus):
    """TSDAE and the RE single-vector baselines train on NuggetTask's data (AE)."""
    data, tok_dir = corpus
    cfg = load_config(TINY)
    task = BaselineTask(MtDocuments(data), str(tok_dir), "ae", cfg.nugget, cfg.model.seq2seq,
                        deletion_noise=0.6, bottleneck="gating")
    assert _first(task) == ("en_XX", "en_XX")


def test_restoration_labels_are_in_the_input_language(corpus):
    from stages.restorable.restoration_task import RestorableBase, RestorationTask

    _, tok_dir = corpus  # its saved tgt_lang is zh_CN: the corpus's other language
    task = RestorationTask(base=RestorableBase("pretrained", str(tok_dir)), restorable={}, data=None, sentences=1)
    tok = task.tokenizer()
    assert (tok.src_lang, tok.tgt_lang) == ("en_XX", "en_XX")
    assert tok(text_target="the cat.")["input_ids"] == tok("the cat.")["input_ids"]


def test_codes_are_checked(corpus):
    _, tok_dir = corpus
    tok = AutoTokenizer.from_pretrained(tok_dir)
    with pytest.raises(ValueError, match="target language code 'xx_YY' is not one of its 52 codes"):
        set_language_codes(tok, "en_XX", "xx_YY")
    with pytest.raises(ValueError, match="writes 'zh_CN' from 'en_XX' input"):
        check_writes_its_input(tok, "probe")
    set_language_codes(tok, "en_XX", "en_XX")
    check_writes_its_input(tok, "probe")
    plain = AutoTokenizer.from_pretrained(make_bpe(tok_dir.parent / "bpe"))
    assert target_code_id(plain) is None  # no language codes: nothing to force
    check_writes_its_input(plain, "probe")


def make_bpe(directory: Path) -> Path:
    from nugget_core import train_bpe_tokenizer

    train_bpe_tokenizer([r["source"] for r in make_docs(8, 2)], vocab_size=100).save_pretrained(directory)
    return directory
