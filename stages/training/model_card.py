"""What every exported model folder carries beyond its weights: a model card, a portable
base-model reference (adapter checkpoints), and an MLflow Model in the stage's run.

A training stage calls `document_models` once its model folders are in their final
place in the stage output (references are relative to that place). For each folder:

- ``README.md``: a model card at Hugging Face's standard: YAML metadata (library_name,
  base_model, datasets, license, tags, pipeline_tag; `stages.training.model_card_usage`),
  then the model description, a usage example that runs, the run's results with their n,
  training data and budget, limitations and how it was produced;
- adapter checkpoints (Nugget2D, ICAE, the Full-FT LoRA): ``base_model.json``
  (`nugget_core.checkpoint.BaseModelReference`) and peft configs without the training
  machine's absolute path;
- an MLflow Model (pyfunc flavour, `stages.training.mlflow_model`) named after the folder,
  linked to the stage's run, the card as its README: the folder is copied into it unless
  it exceeds `mlflow_model_max_mb` (then the model holds the card and a reference to the
  published folder, and a log line and the card say so: an MLflow store is not the place
  for multi-GB full fine-tunes).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from stages.common.progress import dev_loss_rose
from stages.framework.stage import StageContext
from stages.framework.store import MANIFEST
from stages.training.loop import STATE_FILE
from stages.training.model_card_usage import (
    base_model_name,
    data_sources,
    front_matter,
    scale_limits,
    usage_example,
)

if TYPE_CHECKING:
    from stages.config.job import TrainJob
    from stages.config.schema import CausalLM
    from stages.training.task import TrainingTask

log = logging.getLogger(__name__)

# Folders above this size are not copied into their MLflow Model (tiny and LoRA models are far
# below; a 7B full fine-tune is ~14 GB in bf16); NUGGET_MLFLOW_MODEL_MAX_MB overrides it.
MLFLOW_MODEL_MAX_MB = 2048
REPO = Path(__file__).resolve().parents[2]
# the job settings the card's budget line names, in this order
BUDGET = ("max_steps", "batch_size", "grad_accum", "lr", "schedule", "warmup_steps", "precision", "num_workers",
          "backend")
# the model's own configuration files, shown in its card
CONFIG_FILES = ("nugget2d_config.json", "usage.json", "nugget_config.json", "nugget_lm_config.json",
                "bottleneck_config.json")
BaseModelReferenceLike = Any  # nugget_core.checkpoint.BaseModelReference (imported lazily)


@runtime_checkable
class OnBaseLM(Protocol):
    """A task training adapters on a base LM: its prepare_lm folder (the tasks of `stages.nugget2d.lm_task`)."""

    base_dir: str


@dataclass(frozen=True)
class ModelKind:
    """A kind of model folder: the file that marks it, what it is, how to load it."""

    marker: str
    name: str
    what: str  # the card's model description; its usage example: `stages.training.model_card_usage.USAGE`
    adapters: tuple[str, ...] = ()  # peft adapter sub-folders (adapter checkpoints), "." for the folder itself


KINDS = (  # most specific first: an ICAE folder is also a Nugget2D folder
    ModelKind("icae_memory.safetensors", "ICAE", "ICAE baseline (in-context autoencoder): LoRA adapters, "
              "memory slots and the Nugget2D parts on a frozen decoder-only LM.",
              ("adapters/compressor", "adapters/decoder")),
    ModelKind("nugget2d_config.json", "Nugget2D", "Nugget2D: LoRA adapters phi (compressor) and theta (decoder), "
              "the nugget scorer and the soft prompt on a frozen decoder-only LM; the base LM is not stored here "
              "(base_model.json says where it is).",
              ("adapters/compressor", "adapters/decoder")),
    ModelKind("nugget_lm_config.json", "Nugget LM", "Nugget LM: a seq2seq decoder reading the current window, "
              "its cross-attention reading a memory of earlier segments."),
    ModelKind("nugget_scorer.safetensors", "Nugget", "Nugget: an encoder-decoder whose decoder cross-attends only "
              "to the encoder states its scorer selects (the nuggets)."),
    ModelKind("restorable_config.json", "RE restorable embedding", "RE (restorable embeddings): an encoder "
              "whose pooled, projected state is one vector per text, and a decoder (input / cross / gating) "
              "restoring the text from it."),
    ModelKind("bottleneck.safetensors", "bottleneck baseline", "A single-vector bottleneck baseline (TSDAE / RE) "
              "of the Nugget experiments."),
    ModelKind("adapter_config.json", "LoRA adapter", "A LoRA adapter (peft) fine-tuning the full base LM: the "
              "Full fine-tuned baseline.", (".",)),
)


def kind_of(folder: Path) -> ModelKind | None:
    return next((k for k in KINDS if (folder / k.marker).is_file()), None)


def published(ctx: StageContext, folder: Path) -> str:
    """Where ``folder`` (inside the stage's scratch output) will be once the stage is
    published: ``<stage>/<key>/<folder>`` under the artifact root."""
    return f"{ctx.stage}/{ctx.key}/{folder.relative_to(ctx.output_dir).as_posix()}"


def published_relative_path(ctx: StageContext, folder: Path, base_dir: Path) -> str:
    """``base_dir`` relative to where ``folder`` will be published. The stage writes into a
    scratch folder (a sibling of the final one, or a temporary folder on remote stores), so
    the path is taken between the two published places: ``<root>/<stage>/<key>/...`` for
    the model, ``<root>/<upstream>/<key>/...`` for the base LM of an input artifact. A base
    outside the inputs (a folder handed in directly) is taken as it is now."""
    for art in ctx.inputs.values():
        if not hasattr(art, "stage"):  # a plain folder (tests): no published place
            continue
        root = Path(art.path)
        if root in base_dir.parents or root == base_dir:
            depth = len(Path(published(ctx, folder)).parts)
            inside = base_dir.relative_to(root).as_posix()
            return "/".join([".."] * depth + [art.stage, art.key] + ([inside] if inside != "." else []))
    return Path(os.path.relpath(base_dir.resolve(), folder.resolve())).as_posix()


def base_hub_id(model_lm: CausalLM | None, base_dir: Path) -> str:
    """The hub name of the base LM in ``base_dir`` (a prepare_lm role folder), when it came
    from the hub: ``model.lm.name_or_path`` (``chat_name_or_path`` for the chat folder)
    with ``source: pretrained`` and not a local folder; else ""."""
    if model_lm is None or model_lm.source != "pretrained":
        return ""
    name = (model_lm.chat_name_or_path or model_lm.name_or_path) if base_dir.name == "chat" else model_lm.name_or_path
    return "" if not name or Path(name).expanduser().exists() else name


def _settings(obj: TrainJob | Mapping[str, Any]) -> dict[str, str]:
    """A job section (dataclass) or a mapping as flat ``{"a.b": "value"}`` lines."""
    from stages.framework.tracking import flatten  # mlflow: imported where a card is written

    return flatten(dict(obj) if isinstance(obj, Mapping) else dataclasses.asdict(obj))


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def _config_values(folder: Path) -> dict[str, Any]:
    """The model's own configuration files (`CONFIG_FILES`), name -> settings."""
    return {name: json.loads((folder / name).read_text()) for name in CONFIG_FILES if (folder / name).is_file()}


def model_card(ctx: StageContext, folder: Path, kind: ModelKind, job: TrainJob, task: TrainingTask,
               base: BaseModelReferenceLike | None, details: Mapping[str, Any] | None = None,
               mlflow_note: str = "", model_lm: CausalLM | None = None) -> str:
    """The README.md of ``folder`` (see the module docstring); ``mlflow_note``: where the
    stage's MLflow run holds the model (`MlflowModelPlan.note`); ``model_lm``: the
    ``model.lm`` section of a stage on a base LM."""
    from stages.framework.tracking import git_commit

    rel = folder.relative_to(ctx.output_dir).as_posix()
    state_file = folder.parent / STATE_FILE if (folder.parent / STATE_FILE).is_file() else ctx.output_dir / STATE_FILE
    state = json.loads(state_file.read_text()) if state_file.is_file() else {}
    objective = str(getattr(task, "objective", "") or getattr(task, "system", ""))
    configs = _config_values(folder)
    settings = {**_settings(job), **_settings(details or {})}
    sources = data_sources(ctx)
    model_lm = model_lm if kind.adapters else None  # the base LM of adapter checkpoints only
    base_name = base_model_name(model_lm, base)
    lines = front_matter(kind.name, library="peft" if kind.adapters else "transformers", base_model=base_name,
                         datasets=[d for _, d, _ in sources], task_tag=objective)
    lines += ["", f"# {kind.name} ({ctx.stage} / {rel})", "", "## Model description", "", kind.what, ""]
    compression = [f"`{k}` = {v}" for values in configs.values() for k, v in sorted(values.items())
                   if k in ("ratio", "threshold", "memory", "decoder", "pooling", "slots") and v is not None]
    lines += [f"- kind: {kind.name}" + (f"; objective / system `{objective}`" if objective else ""),
              f"- compression: {', '.join(compression) if compression else 'see the configuration below'}",
              f"- base model: {base_name or (base.description if base is not None else '') or 'random init / see model.*'}"]
    lines += ["", "## Usage", "", "Load the folder and call it (runs as it is; `FOLDER`: this folder, `ROOT`: the "
              "artifact root the pipeline wrote it under):", "", "```python",
              usage_example(kind.name, f"<artifact root>/{published(ctx, folder)}", "<artifact root>"), "```", ""]
    if mlflow_note:
        lines += [mlflow_note, ""]
    lines += ["## Results (this run)", ""]
    if state:
        exported = state.get("exported_step", state.get("step"))  # export_model=best_dev: an earlier step's
        if state.get("initial_dev_loss") is not None and state.get("exported_dev_loss") is not None:
            before, after = state["initial_dev_loss"], state["exported_dev_loss"]
            lines.append(f"- dev loss before training (step 0) -> of these weights: {before:.4f} -> {after:.4f}"
                         + (f" (n = {state['dev_loss_n']} target tokens)" if state.get("dev_loss_n") else "")
                         + (" (above its untrained start: training made it worse)" if dev_loss_rose(before, after)
                            else ""))
        lines += [f"- steps: {state.get('step')}"
                  + (f" (the weights of step {exported}, the best dev evaluation)" if exported != state.get("step")
                     else ""),
                  f"- tokens seen in training: {state.get('tokens_seen', 0)} (inputs + targets, every worker)",
                  f"- final train loss: {state['losses'][-1]:.4f}"
                  + (f" (n = {state['train_loss_n']} sequences)" if state.get("train_loss_n") else ""),
                  f"- best dev loss: {state.get('best_dev_loss')}"
                  + (f" (n = {state['dev_loss_n']} target tokens)" if state.get("dev_loss_n") else ""),
                  f"- stopped early: {bool(state.get('stopped_early'))}"]
    else:
        lines.append("- no trainer state beside this folder: no results recorded")
    lines += ["", "## Training data", ""]
    # an input is an Artifact in the pipeline (a plain folder where a test hands one in)
    lines += [f"- upstream `{name}` (key `{getattr(art, 'key', art)}`)" for name, art in sorted(ctx.inputs.items())]
    lines += [f"- `{up}` read `{d}`" + ("" if paper else ": an offline stand-in, not the paper's dataset")
              for up, d, paper in sources]
    if base is not None:
        lines += [f"- base LM: {base.description or '-'}; hub name `{base.hub_id or '-'}`, "
                  f"folder `{base.relative_path}` relative to this one"]
    lines += ["", "## Training budget", "",
              "- " + ", ".join(f"{k} {settings[k]}" for k in BUDGET if k in settings)
              + f"; device `{ctx.device}`" + (f"; steps run {state.get('step')}" if state else "")]
    lines += ["", "## Limitations", ""]
    limits = [f"- trained on `{d}` (via `{up}`), an offline stand-in for the paper's data: "
              "its numbers are not the paper's" for up, d, paper in sources if not paper]
    limits += scale_limits(model_lm, folder)
    if state and state.get("initial_dev_loss") is not None and state.get("exported_dev_loss") is not None \
            and dev_loss_rose(state["initial_dev_loss"], state["exported_dev_loss"]):
        limits.append("- degenerate: the dev loss of these weights is above the untrained start")
    if state and state.get("losses") and state["losses"][-1] >= state["losses"][0]:
        limits.append("- the train loss did not fall: last step's is not below the first's")
    if state and state.get("stopped_early"):
        limits.append("- training stopped early (no dev improvement)")
    lines += limits or ["- none the training stage can tell; see the evaluation stages' reports"]
    lines += ["", "## How it was produced", "",
              f"- stage `{ctx.stage}`, cache key `{ctx.key}`, task `{type(task).__name__}`, "
              f"commit `{git_commit(REPO) or '-'}`",
              f"- config: the sections it read are the `config` of `{ctx.stage}/{ctx.key}/{MANIFEST}` "
              "(and the stage's MLflow run's params); the whole run's, `config.yaml` of the parent MLflow run",
              "", "### All training settings", ""]
    lines += [f"- `{k}`: {v}" for k, v in sorted(settings.items())]
    for name, values in configs.items():  # the method's own settings (the AR model's calibrated Lambda: threshold)
        lines += ["", f"### {name}", ""] + [f"- `{k}`: {v}" for k, v in sorted(values.items())]
    lines += ["", "The folder is self-describing: configs, weights (or adapters), tokenizer"
              + (", base_model.json (where the base LM is: a path relative to this folder, or a hub name)"
                 if kind.adapters else "") + ". See the repository's docs/architecture.md.", ""]
    return "\n".join(lines)


def mlflow_model_max_mb() -> float:
    """The size above which a folder is referenced, not copied, by its MLflow Model."""
    return float(os.environ.get("NUGGET_MLFLOW_MODEL_MAX_MB", MLFLOW_MODEL_MAX_MB))


def mlflow_model_name(rel: str) -> str:
    """The MLflow Model name of the folder ``rel`` in the stage output: MLflow's names take
    no ``/ : . % " '`` (``systems/nugget_r0.05/model`` -> ``systems-nugget_r0-05-model``)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", rel)


@dataclass(frozen=True)
class MlflowModelPlan:
    """How one model folder goes into the stage's MLflow run: the logged model's name, and
    whether the folder is copied into it (else the model holds the card and ``reference``)."""

    folder: Path
    name: str
    reference: str  # the folder's place under the artifact root once published
    size_mb: float
    limit_mb: float

    @classmethod
    def of(cls, ctx: StageContext, folder: Path) -> MlflowModelPlan:
        return cls(folder, mlflow_model_name(folder.relative_to(ctx.output_dir).as_posix()), published(ctx, folder),
                   _size_mb(folder), mlflow_model_max_mb())

    @property
    def copied(self) -> bool:
        return self.size_mb <= self.limit_mb

    def note(self) -> str:
        """The card's paragraph on the MLflow Model."""
        text = (f"MLflow: the stage's run holds this model as the MLflow Model `{self.name}` (pyfunc flavour): "
                "`mlflow.pyfunc.load_model(<its models:/ URI>).predict([\"a text\", ...])` (a DataFrame with "
                "`text` and `question` columns for question answering); loading needs nugget_core, which the "
                "model carries, and the packages it pins.")
        if not self.copied:
            text += (f" The folder ({self.size_mb:.0f} MB, above the {self.limit_mb:.0f} MB limit) is NOT copied "
                     f"into it: the model holds this card and the reference `{self.reference}` (under the "
                     "artifact root); load it with `model_config={'artifact_root': '<artifact root>'}`.")
        return text

    def log(self, ctx: StageContext, kind: ModelKind) -> None:
        """Log the MLflow Model (see the module docstring); a folder not copied is said in the log."""
        from importlib.metadata import version

        import mlflow

        import nugget_core

        # the pyfunc model's code file (MLflow models from code), named, not imported: it runs when
        # the model is loaded from MLflow, never in this stage, and changes what MLflow holds, not
        # the stage's output; importing it would key every training stage on peft (its LoRA loader)
        wrapper = Path(__file__).with_name("mlflow_model.py")

        # the wrapper's own settings travel as a file: MLflow logs a model_config as the run's params
        # (one value per run: the artifact root, which the loader may override)
        settings = Path(tempfile.mkdtemp(prefix="mlflow-model-")) / "settings.json"
        settings.write_text(json.dumps({"kind": kind.name, "reference": self.reference}))
        artifacts = {"settings": str(settings)}
        artifacts.update({"model": str(self.folder)} if self.copied else {"card": str(self.folder / "README.md")})
        if not self.copied:
            log.warning("%s: %.1f MB, above the MLflow model limit of %.0f MB (NUGGET_MLFLOW_MODEL_MAX_MB): its MLflow "
                        "Model %s holds the card and a reference to %s, not the weights",
                        self.folder, self.size_mb, self.limit_mb, self.name, self.reference)
        # pinned, so that MLflow neither infers nor downloads anything
        pins = [f"mlflow=={mlflow.__version__}", f"torch=={version('torch').split('+')[0]}",
                *(f"{name}=={version(name)}" for name in ("transformers", "peft", "safetensors"))]
        ctx.log_model(self.name, str(wrapper), artifacts=artifacts,
                      code_paths=[str(Path(nugget_core.__file__).parent)], pip_requirements=pins,
                      model_config={"artifact_root": _artifact_root(ctx)}, readme=self.folder / "README.md")
        shutil.rmtree(settings.parent)


def _artifact_root(ctx: StageContext) -> str:
    """The artifact root the inputs were read from (adapter checkpoints' base LMs lie in it),
    "" when no input is a published artifact (tests hand in plain folders)."""
    for art in ctx.inputs.values():
        if hasattr(art, "stage"):
            return str(Path(art.path).parents[1])
    return ""


def document_models(ctx: StageContext, job: TrainJob, tasks: Mapping[Path, TrainingTask], model_lm: CausalLM | None = None,
                    details: Mapping[Path, Mapping[str, Any]] | None = None) -> list[Path]:
    """Model card, base reference (adapter checkpoints) and MLflow Model of every
    model folder in ``tasks`` (folder in the stage output -> the task that trained it;
    ``model_lm``: the ``model.lm`` section, for hub names of Nugget2D / LoRA bases;
    ``details``: per folder, settings of that model beyond ``job``, e.g. a sweep trial's).
    Returns the folders documented."""
    from nugget_core.checkpoint import BaseModelReference, rewrite_adapter_base

    documented = []
    for folder, task in tasks.items():
        kind = kind_of(folder)
        if kind is None:
            raise FileNotFoundError(f"{folder}: no model folder of a known kind ({', '.join(k.marker for k in KINDS)})")
        base = None
        if kind.adapters:
            if not isinstance(task, OnBaseLM):
                raise TypeError(f"{folder}: a {kind.name} checkpoint's task {type(task).__name__} names no base LM "
                                "(base_dir)")
            base_dir = Path(task.base_dir)
            base = BaseModelReference(relative_path=published_relative_path(ctx, folder, base_dir),
                                      hub_id=base_hub_id(model_lm, base_dir),
                                      description=f"prepare_lm's {base_dir.name}/ folder (key {base_dir.parent.name})")
            base.save(folder)
            rewrite_adapter_base([folder / a for a in kind.adapters], base)
        plan = MlflowModelPlan.of(ctx, folder)
        (folder / "README.md").write_text(model_card(ctx, folder, kind, job, task, base,
                                                     (details or {}).get(folder), plan.note(), model_lm))
        plan.log(ctx, kind)
        documented.append(folder)
    return documented
