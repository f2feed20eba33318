"""Whether a trained model reads its compressed input, measured at the end of every fit of the
shared loop (`stages.training.input_use`), without Ray: a model that reads its input is told from
one cut off from it, the result travels through the trainer state into the `TrainingSummary`,
and a task without a compressed input, or a dev split too small, records none and says why."""

from __future__ import annotations

import json
import logging
import random
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from stages.artifacts.base import ContractError, Location
from stages.artifacts.trainer_state import InputUse, read_summary
from stages.common.resampling import MIN_UNITS
from stages.config.job import TrainJob
from stages.training.input_use import check_batches, example_of, measure_input_use
from stages.training.loop import STATE_FILE, TrainerState, train_task
from stages.training.task import CompressedInputTask, protocol_mismatches
from stages.training.task_steps import derange
from tests.training.fixtures import ScalarRowsTask
from tests.training.test_dev_loss_before_training import make_inputs, make_task
from tests.training.test_loop_logging import RecordingRunLogger

CLASSES = 4


class Lookup(nn.Module):
    """Class logits from the input vector ``x [B, 4]`` (``reads_input``), or from a bias alone: a
    decoder cut off from its encoder, which can learn the classes' frequencies and nothing else."""

    def __init__(self, reads_input: bool) -> None:
        super().__init__()
        self.reads_input = reads_input
        self.lin = nn.Linear(CLASSES, CLASSES)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> SimpleNamespace:
        logits = self.lin(x if self.reads_input else torch.zeros_like(x))
        return SimpleNamespace(loss=nn.functional.cross_entropy(logits, y), logits=logits[:, None])


class CopyTask(ScalarRowsTask):
    """Rows are class ids; the compressed input is the class's one-hot vector (noisy), the target
    the class: a model that reads its input copies it."""

    weights_file = "lookup.pt"

    def __init__(self, reads_input: bool = True, dev: int = 32) -> None:
        self.reads_input, self.dev = reads_input, dev

    def load_split(self, split: str) -> list[int]:
        rng = random.Random(split)  # not periodic: the check's strided batches would pair equal classes
        return [rng.randrange(CLASSES) for _ in range(64 if split == "train" else self.dev)]

    def build_model(self, init_dir: Path | None) -> nn.Module:
        torch.manual_seed(0)
        return Lookup(self.reads_input)

    def collate(self, rows: list[int], step: int, rank: int, train: bool) -> dict[str, torch.Tensor]:
        y = torch.tensor(rows)
        return {"x": nn.functional.one_hot(y, CLASSES).float(), "y": y}

    def n_target_tokens(self, batch: dict[str, torch.Tensor]) -> int:
        return int((batch["y"] >= 0).sum())  # cross_entropy skips -100

    @staticmethod
    def mismatch(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return derange(batch, ("x",))


class NoInputTask(CopyTask):
    """The same model and data, but a task that names no compressed input (a plain LM's case)."""

    mismatch = None  # type: ignore[assignment]


JOB = TrainJob(max_steps=60, batch_size=8, lr=0.1, eval_every=60, checkpoint_every=60)


def _use(state: TrainerState) -> InputUse:
    record = state.input_use
    assert record is not None, state.input_use_note
    return InputUse(record["own"], record["other"], record["low"], record["high"], int(record["n"]))


def _fit(task: CopyTask) -> tuple[TrainerState, RecordingRunLogger]:
    logger = RecordingRunLogger()
    state = train_task(task, {"job": JOB, "logger": logger, "seed": 0}, None)
    return state, logger


def test_a_model_that_reads_its_input_is_told_from_one_cut_off_from_it(checkpoints, caplog):
    caplog.set_level(logging.INFO, logger="nugget.train")
    reads, logger = _fit(CopyTask(reads_input=True))
    use = _use(reads)
    assert use.n == 32 and not use.ignores and use.low > 1.0  # another's one-hot: a confident wrong class
    assert use.own < 0.5 < use.other  # it learned to copy
    logged = {k: v for k, v, _ in logger.metrics}
    assert logged["eval/input_use_own"] == use.own and logged["eval/input_use_rise_low"] == use.low
    assert logger.sizes["eval/input_use_n"] == 32  # its n, as a sample-size param
    cut, _ = _fit(CopyTask(reads_input=False))
    use = _use(cut)
    assert use.own == use.other and use.ignores  # the same loss whatever it is given
    assert cut.exported_dev_loss == pytest.approx(use.own, rel=1e-5)  # scored on the exported weights
    lines = [r.getMessage() for r in caplog.records if r.name == "nugget.train"]
    assert any("input use: dev loss own" in line and "n = 32 dev examples" in line for line in lines)
    warnings = [r.getMessage() for r in caplog.records if r.name == "nugget.train" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "ignores its input" in warnings[0]  # the cut-off model only


def test_the_trainer_state_carries_input_use_into_the_training_summary(checkpoints, tmp_path):
    state, _ = _fit(CopyTask(reads_input=True))
    saved = json.loads((checkpoints[-1] / STATE_FILE).read_text())  # what the stage exports beside the model
    assert saved["input_use"] == state.input_use and saved["input_use_note"] == ""
    (tmp_path / STATE_FILE).write_text(json.dumps(saved))
    summary = read_summary(Location("train_x", tmp_path), STATE_FILE, "train_x")
    assert summary.input_use == _use(state) and summary.input_use_note == ""
    saved["input_use"]["own"] = "low"
    (tmp_path / STATE_FILE).write_text(json.dumps(saved))
    with pytest.raises(ContractError, match=r"field 'input_use.own' of 'trainer_state.json' is malformed"):
        read_summary(Location("train_x", tmp_path), STATE_FILE, "train_x")
    del saved["input_use"], saved["input_use_note"]  # a record from before the check: none, no error
    (tmp_path / STATE_FILE).write_text(json.dumps(saved))
    assert read_summary(Location("train_x", tmp_path), STATE_FILE, "train_x").input_use is None


def test_a_task_without_a_compressed_input_or_with_too_few_dev_examples_records_none(checkpoints):
    assert not isinstance(NoInputTask(), CompressedInputTask) and not protocol_mismatches(NoInputTask)
    plain, _ = _fit(NoInputTask())
    assert plain.input_use is None and plain.input_use_note == "no compressed input (NoInputTask defines no mismatch)"
    few, logger = _fit(CopyTask(dev=MIN_UNITS - 1))
    assert few.input_use is None and few.input_use_note == f"{MIN_UNITS - 1} dev examples: fewer than {MIN_UNITS}, too few to tell"
    assert not any(k.startswith("eval/input_use") for k, _, _ in logger.metrics)


def test_a_mismatch_that_changes_the_targets_is_refused():
    class Broken(CopyTask):
        @staticmethod
        def mismatch(batch):
            return {**batch, "y": torch.where(batch["y"] == 0, -100, batch["y"])}  # class 0 scored no more

    with pytest.raises(ValueError, match="Broken.mismatch changed the targets of dev example 0"):
        measure_input_use(Broken(), Lookup(True), Broken().load_split("dev"), 8, torch.device("cpu"), nullcontext)


@pytest.mark.parametrize(("n", "size"), [(15, 8), (32, 8), (17, 2), (15, 1), (64, 16), (3, 2)])
def test_check_batches_hold_two_or_more_strided_examples_each_once(n, size):
    batches = check_batches(n, size)
    assert sorted(i for b in batches for i in b) == list(range(n))
    assert all(2 <= len(b) <= max(2, size) + 1 for b in batches)
    assert all(b == list(range(b[0], n, len(batches))) for b in batches)  # strided: donors far apart


def test_example_of_slices_per_example_tensors_and_keeps_per_batch_ones():
    batch = {"input_ids": torch.arange(6).reshape(3, 2), "predict_last": torch.tensor([2])}
    one = example_of(batch, 1, 3)
    assert one["input_ids"].tolist() == [[2, 3]] and one["predict_last"].tolist() == [2]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Tiny data and base models of every task type (`make_inputs`)."""
    return make_inputs(tmp_path_factory.mktemp("families"))


# the compressed input of each task family, as its `mismatch` swaps it (the batch keys, every other key
# the same): the Nugget / bottleneck / RE encoder input, the Nugget2D compressors' document, the Nugget
# LM's history segments, the autoregressive model's and its baselines' distant tokens
FAMILIES = {
    "nugget_ae": ("input_ids", "attention_mask", "boundary_mask"),
    "baseline_gating": ("input_ids", "attention_mask", "boundary_mask"),
    "restoration": ("input_ids", "attention_mask"),
    "nugget2d_continuation": ("doc_ids", "doc_mask"),
    "nugget2d_finetune": ("doc_ids", "doc_mask"),
    "nugget2d_autoencoding": ("doc_ids", "doc_mask"),
    "autoencoding_nugget2d": ("doc_ids", "doc_mask"),
    "autoencoding_icae": ("doc_ids", "doc_mask"),
    "nugget_lm": ("history_ids", "history_mask"),
    "nugget2d_ar": ("input_ids",),
    "lm_baseline_compressive": ("input_ids",),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_mismatch_swaps_its_compressed_input_and_nothing_else(name, inputs):
    task = make_task(name, inputs)
    rows = task.load_split("dev")
    batch = task.collate(rows, step=-1, rank=0, train=False)
    swapped = task.mismatch(batch)
    size = len(rows)
    assert size >= 2 and set(swapped) == set(batch)
    changed = {k for k in batch if not torch.equal(swapped[k], batch[k])}
    assert changed and changed <= set(FAMILIES[name])  # only the compressed input moved
    keep = batch["input_ids"].shape[1] - int(batch["predict_last"][0]) if "predict_last" in batch else None
    for key in changed:
        got, own = swapped[key][:, :keep], batch[key][:, :keep]
        for b in range(size):  # each example reads another's: a derangement, the same one for every key
            assert torch.equal(got[b], own[(b - size // 2) % size])
        if keep is not None:  # the recent tokens, the ones predicted, stay the example's own
            assert torch.equal(swapped[key][:, keep:], batch[key][:, keep:])
    for b in range(size):  # and every example is scored on the same target tokens
        assert task.n_target_tokens(example_of(swapped, b, size)) == task.n_target_tokens(example_of(batch, b, size))


def test_tasks_without_a_compressed_input_define_no_mismatch(inputs):
    import dataclasses

    for name in ("full_ft", "retrieval"):  # the whole prompt read as text; a ranking of the batch's passages
        assert not isinstance(make_task(name, inputs), CompressedInputTask)
    transformer = dataclasses.replace(make_task("nugget_lm", inputs), memory="none")  # reads no history
    rows = transformer.load_split("dev")
    assert transformer.mismatch(transformer.collate(rows, step=-1, rank=0, train=False)) is None


def test_the_compressor_reconstructs_its_target_which_a_mismatch_keeps(inputs):
    """Autoencoding holds its target apart from the document it compresses: the same loss as
    reconstructing the document itself, and with another document's nuggets a different one."""
    from nugget_core.nugget2d import objective_loss

    task = make_task("nugget2d_autoencoding", inputs)
    model = task.build_model(None).eval()
    batch = task.collate(task.load_split("dev"), step=-1, rank=0, train=False)
    with torch.no_grad():
        own = task.loss(model, batch)
        document = objective_loss(model.model, "autoencoding", {k: batch[k] for k in ("doc_ids", "doc_mask")})
        other = task.loss(model, task.mismatch(batch))
    assert own.item() == pytest.approx(document.loss.item(), rel=1e-6)
    assert other.item() != pytest.approx(own.item(), rel=1e-4)
    assert torch.equal(task.mismatch(batch)["target_ids"], batch["doc_ids"])


def test_scored_one_at_a_time_a_real_models_own_loss_is_its_dev_loss(tmp_path):
    """On a tiny Nugget AE (20 dev documents: `MIN_UNITS`), each document scored alone, sliced from its padded
    check batch, sums to the dev loss the loop's batched evaluation reports: the slicing changes no
    example's loss, and the check runs end to end on a real task."""
    from stages.config import load_config
    from stages.nugget.artifacts.data import MtDocuments
    from stages.nugget.nugget_task import NuggetTask
    from stages.training.engine import make_engine
    from stages.training.loop import evaluate
    from tests.training.conftest import TINY
    from tests.training.fixtures import make_mt_artifacts

    mt_artifacts = make_mt_artifacts(tmp_path, n_dev=MIN_UNITS)
    cfg = load_config(TINY)
    task = NuggetTask(MtDocuments(mt_artifacts[0]), str(mt_artifacts[1]), "ae", cfg.nugget, cfg.model.seq2seq)
    dev, job = task.load_split("dev"), TrainJob(batch_size=5)
    model = task.build_model(None)
    use, note = measure_input_use(task, model, dev, job.batch_size, torch.device("cpu"), nullcontext)
    assert use is not None and note == "" and use.n == len(dev) == MIN_UNITS
    batched, _ = evaluate(make_engine(model, job, task.find_unused_parameters, torch.device("cpu")), task, dev, 0, 1,
                          job)
    assert use.own == pytest.approx(batched, rel=1e-5)
    assert use.other != use.own  # the untrained decoder already reads what its nuggets carry


def test_the_reason_says_ignores_only_where_the_interval_shows_it():
    from stages.artifacts.trainer_state import InputUse

    assert InputUse(own=4.2, other=4.2, low=-0.004, high=0.006, n=40).reason().startswith("ignores its input: ")
    unsure = InputUse(own=4.204, other=4.247, low=-0.087, high=0.164, n=16)
    assert unsure.ignores and unsure.reason().startswith("not shown to read its input: ")
    assert InputUse(own=4.0, other=4.5, low=0.3, high=0.7, n=40).reason() == ""
