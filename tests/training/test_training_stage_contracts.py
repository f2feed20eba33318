"""The Nugget, Nugget-LM and RE training stages declare their contract in their header
(`stages.framework.contract`): each input is read through its contract class, the output
is the class the evaluations read; and the helpers that build their training tasks take
the typed config sections and inputs, so they are callable without a stage context."""

from __future__ import annotations

import dataclasses

import pytest

from stages.config import load_config
from stages.framework.contract import build_config, input_fields
from stages.framework.keys import stage_sections
from stages.nugget.artifacts.data import MtDocuments, NuggetLMCorpus, TokenizerFolder
from stages.nugget.artifacts.models import (
    NuggetSweep,
    TrainedBaselines,
    TrainedNugget,
    TrainedNuggetLM,
)
from stages.nugget.nugget_job import NuggetData, nugget_task
from stages.nugget.sweep_nugget import SweepNugget
from stages.nugget.train_baselines import TrainBaselines
from stages.nugget.train_nugget import TrainNugget
from stages.nugget.train_nugget_lm import TrainNuggetLM
from stages.restorable.artifacts import (
    RestorationTexts,
    RetrievalData,
    TrainedRestorable,
    TrainedRetrieval,
)
from stages.restorable.restoration_task import RestorableBase, restorable_base
from stages.restorable.train_re import TrainRE
from stages.restorable.train_re_retrieval import TrainRERetrieval

NUGGET_INPUTS = [TokenizerFolder, MtDocuments]
CONTRACTS = [
    (TrainNugget, NUGGET_INPUTS, TrainedNugget),
    (SweepNugget, NUGGET_INPUTS, NuggetSweep),
    (TrainBaselines, NUGGET_INPUTS, TrainedBaselines),
    (TrainNuggetLM, [TokenizerFolder, NuggetLMCorpus, TrainedNugget, TrainedBaselines], TrainedNuggetLM),
    (TrainRE, [RestorationTexts, TrainedNugget], TrainedRestorable),
    (TrainRERetrieval, [TrainedRestorable, RetrievalData, TrainedNugget], TrainedRetrieval),
]


@pytest.mark.parametrize(("stage", "inputs", "output"), CONTRACTS, ids=[c[0].name for c in CONTRACTS])
def test_the_header_names_what_the_stage_reads_and_writes(stage, inputs, output):
    assert stage.output is output
    assert [f.kind for f in input_fields(stage.inputs_class)] == inputs
    assert "run" not in vars(stage)  # the framework's run hands compute the typed config and inputs
    # every declared section resolves from the default config into its field
    config = build_config(stage.config_class, stage_sections(stage, load_config([])))
    assert len(dataclasses.fields(config)) == len(stage.config_keys)


def test_nugget_task_is_built_from_the_typed_sections_and_inputs(tmp_path):
    sections = stage_sections(TrainNugget, load_config(["train.nugget.deletion_noise=0.25", "run.seed=7"]))
    config = build_config(TrainNugget.config_class, sections)
    data = NuggetData(TokenizerFolder(tmp_path / "tok"), MtDocuments(tmp_path / "docs"))
    task = nugget_task(data, config.job, config.nugget, config.seq2seq, config.seed)
    assert (task.data, task.tokenizer_dir, task.objective) == (data.docs, str(tmp_path / "tok"), config.job.objective)
    assert (task.deletion_noise, task.seed, task.dev_examples) == (0.25, 7, config.job.dev_examples)
    assert task.nugget is config.nugget and task.model is config.seq2seq


def test_restorable_base_resolves_model_re_from_its_section_and_the_train_nugget_input(tmp_path):
    mt = TrainedNugget(tmp_path / "model", "mt", 0.1, 3, "topk", True)
    pretrained = load_config(["model.re.source=pretrained", "model.re.name_or_path=t5-small"]).model.re
    assert restorable_base(pretrained, mt) == RestorableBase("pretrained", "t5-small")  # train_nugget unused
    stage_ae = load_config(["model.re.source=stage_ae"]).model.re
    with pytest.raises(ValueError, match="needs train_nugget's AE model, not 'mt'"):
        restorable_base(stage_ae, mt)
    ae = dataclasses.replace(mt, objective="ae")
    assert restorable_base(stage_ae, ae) == RestorableBase("stage_ae", str(tmp_path / "model"),
                                                           stage_ae.attn_implementation)
