"""The ``nugget`` command: one entry point for the pipeline and its models.

    nugget run [--dry-run] [key=value ...]        the DAG (= python pipelines/full.py)
    nugget stage NAME [--force] [--dry-run] [...] one stage (= python -m pipelines.stage)
    nugget list [--markdown [--write]]            the stages and their edges (--markdown: the
                                                  docs' stage table and DAG; --write: into the docs)
    nugget report [--open] [key=value ...]        the path of the report of this config
    nugget config [SECTION ...] [key=value ...]   the resolved config, with each key's help
    nugget generate CHECKPOINT --text TEXT [--question Q]   compress TEXT, answer / continue
    nugget eval CHECKPOINT --task qa|summarization --limit N   score a checkpoint on build_lm's data

``run`` and ``stage`` hand their arguments to `pipelines.cli` unchanged (their ``--help``
is theirs); the others read the same config and artifact store. Exit codes as in
`pipelines.cli`: 0 ok, 1 failed, 2 bad config or arguments, 3 a needed output is missing.
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pipelines.cli import EXIT_CONFIG, EXIT_MISSING, default_dag, main_full, main_stage
from pipelines.config_help import describe_config
from stages.config import ConfigError, PipelineConfig, load_config
from stages.framework.dag import Dag, MissingInputError
from stages.framework.store import ArtifactStore

#: Subcommands whose arguments go to `pipelines.cli` as they are.
DELEGATED: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "run": (main_full, "run the DAG (python pipelines/full.py); see nugget run --help"),
    "stage": (main_stage, "rerun one stage (python -m pipelines.stage); see nugget stage --help"),
}
TASKS = ("qa", "summarization")
REPORT_FILE = "report.html"


class CommandError(Exception):
    """A failure the command reports as ``error: message`` with exit ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _config(overrides: Sequence[str]) -> PipelineConfig:
    try:
        return load_config(list(overrides))
    except ConfigError as exc:
        raise CommandError(EXIT_CONFIG, f"config: {exc}") from exc


def _overrides(values: Sequence[str]) -> list[str]:
    bad = [v for v in values if "=" not in v]
    if bad:
        raise CommandError(EXIT_CONFIG, f"config overrides are key=value, got {bad}")
    return list(values)


def stage_output(cfg: PipelineConfig, stage: str, dag: Dag | None = None) -> Path:
    """The local folder of ``stage``'s completed output for ``cfg`` (its cache key, as the
    pipeline plans it); exit 3 naming the command that produces it when there is none."""
    store = ArtifactStore(cfg.run.artifact_root)
    try:
        plan = (dag or default_dag()).plan(cfg, store, targets=[stage])
    except MissingInputError as exc:
        raise CommandError(EXIT_MISSING, str(exc)) from None
    planned = next(p for p in plan if p.name == stage)
    if not planned.hit:
        raise CommandError(EXIT_MISSING, f"stage {stage!r} has no output for this config (key {planned.key}) "
                           f"under {store.root_uri}; produce it with: nugget run run.targets=[{stage}]")
    return store.artifact(stage, planned.key).path


# --- subcommands ------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    if not (args.markdown or args.write):
        return main_stage(["--list"])
    from pipelines import stage_docs

    dag = default_dag()
    if not args.write:
        print(stage_docs.markdown(dag))
        return 0
    try:
        changed = stage_docs.write_pages(dag)
    except stage_docs.DocsError as exc:
        raise CommandError(EXIT_CONFIG, str(exc)) from exc
    print(f"rewrote {', '.join(changed)}" if changed else "the generated docs are up to date")
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    sections = [a for a in args.items if "=" not in a]
    cfg = _config([a for a in args.items if "=" in a])
    try:
        print("\n".join(describe_config(cfg, sections)))
    except KeyError as exc:
        raise CommandError(EXIT_CONFIG, str(exc.args[0])) from exc
    return 0


def latest_report(store_root: str, stage: str = "report") -> Path | None:
    """The newest ``report.html`` of any config under a local artifact root."""
    store = ArtifactStore(store_root)
    if not store.local:
        return None
    found = [p for p in Path(store.base, stage).glob(f"*/{REPORT_FILE}") if store.is_complete(stage, p.parent.name)]
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


def cmd_report(args: argparse.Namespace) -> int:
    cfg = _config(_overrides(args.overrides))
    try:
        path = stage_output(cfg, "report") / REPORT_FILE
    except CommandError as exc:
        other = latest_report(cfg.run.artifact_root)
        if other is not None:
            exc.args = (f"{exc.args[0]}\nthe newest report of another config: {other}",)
        raise
    print(path)
    if args.open:
        webbrowser.open(path.resolve().as_uri())
    return 0


def load_checkpoint(checkpoint: str, base_model: str | None, device: str) -> tuple[Any, Any]:
    """The Nugget2D model saved in ``checkpoint`` (on ``base_model``, else the base LM its
    folder records) in eval mode on ``device``, and its base LM's tokenizer."""
    from transformers import AutoTokenizer

    from nugget_core.nugget2d import load_nugget2d
    from stages.common.device import place_model

    model = load_nugget2d(checkpoint, base_model).eval()
    # the pipeline saves the tokenizer beside the model; else the base LM's (as loaded)
    has_own = (Path(checkpoint) / "tokenizer_config.json").is_file()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint if has_own else base_model or model.lm.name_or_path,
                                              trust_remote_code=False)
    return place_model(model, device), tokenizer


def soft_prompt(args: argparse.Namespace, model: Any) -> bool:
    """``--soft-prompt`` / ``--no-soft-prompt``, else what the checkpoint's usage.json
    records (continuation / autoencoding models read it, fine-tuned ones do not), else off."""
    if args.soft_prompt is not None:
        return bool(args.soft_prompt)
    return bool(model.usage.soft_prompt) if model.usage is not None else False


def cmd_generate(args: argparse.Namespace) -> int:
    from nugget_core.nugget2d import answer, compress_text, continue_text

    model, tokenizer = load_checkpoint(args.checkpoint, args.base_model, args.device)
    layout = None if args.question is None else args.prompt_format
    ctx = compress_text(model, tokenizer, args.text, ratio=args.ratio, prompt_format=layout)
    options = {"max_new_tokens": args.max_new_tokens, "soft_prompt": soft_prompt(args, model)}
    if args.question is None:
        text = continue_text(model, tokenizer, ctx, **options)
    else:
        text = answer(model, tokenizer, ctx, args.question, **options)
    print(text)
    print(f"({ctx.nuggets} of {ctx.tokens} tokens kept)", file=sys.stderr)
    return 0


def task_records(cfg: PipelineConfig, task: str, split: str, limit: int) -> list[dict]:
    """The first ``limit`` records of ``split`` in ``build_lm``'s ``<task>.jsonl`` for ``cfg``."""
    from stages.common.records import read_records
    from stages.nugget2d.artifacts import LMRecords

    path = LMRecords.read(stage_output(cfg, "build_lm")).records(task)
    return read_records(path, split, limit)


def cmd_eval(args: argparse.Namespace) -> int:
    """The evaluation stages' own recipe (`stages.nugget2d.lm.qa.evaluate_qa` /
    `stages.nugget2d.lm.summarization.evaluate_summarization`) with the Nugget2D system only,
    at ``--ratio`` (default: the checkpoint's), so a checkpoint scores here as in eval_qa /
    eval_summarization."""
    from nugget_core.nugget2d.prompts import PromptFormat
    from stages.common.progress import progress_logger
    from stages.evaluation.rouge import ROUGE_TYPES
    from stages.nugget2d.lm import qa, summarization
    from stages.nugget2d.lm.scoring import QA_QUALITY

    cfg = _config(_overrides(args.overrides))
    split = cfg.eval.qa.split if args.task == "qa" else cfg.eval.summarization.split
    records = task_records(cfg, args.task, split, args.limit)
    model, tokenizer = load_checkpoint(args.checkpoint, args.base_model, args.device)
    # a fine-tuned checkpoint records the prompt format it was trained with; that one wins
    layout = model.usage.prompt_format if model.usage is not None and model.usage.prompt_format else cfg.prompts.format
    ratio = args.ratio or model.config.ratio
    fmt, soft, log = PromptFormat(layout, tokenizer), soft_prompt(args, model), progress_logger("nugget.eval")
    quality: tuple[str, ...]  # the task's own metrics, printed
    if args.task == "qa":
        section = replace(cfg.eval.qa, systems=["nugget2d"], nugget_ratios=[ratio])
        result = qa.evaluate_qa(model, tokenizer, records, section, prompt_format=fmt, soft_prompt=soft, log=log)
        quality = QA_QUALITY
    else:
        summary = replace(cfg.eval.summarization, systems=["nugget2d_ft"], nugget_ratio=ratio)
        result = summarization.evaluate_summarization(model, tokenizer, records, summary, prompt_format=fmt,
                                                      soft_prompt=soft, log=log)
        quality = ROUGE_TYPES
    (row,) = result.table.rows
    label = result.table.stand_in
    print(f"{args.task}: {len(records)} examples of split {split!r}"
          + (f" (stand-in: {label})" if label else "") + f", Nugget2D at r = {ratio:g}, prompts {layout}")
    for name in quality:
        print(f"  {name:10s} {row.metrics[name]:7.2f}  (n={row.n})")
    return 0


# --- parsing ----------------------------------------------------------------------------


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _ratio(text: str) -> float:
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return value


def _checkpoint_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoint", help="a Nugget2D model folder (e.g. <train_nugget2d output>/nugget2d)")
    p.add_argument("--base-model", default=None,
                   help="folder or hub name of its base LM (default: the one the folder records)")
    p.add_argument("--ratio", type=_ratio, default=None, help="compression ratio r (default: the model's)")
    p.add_argument("--soft-prompt", action=argparse.BooleanOptionalAction, default=None,
                   help="start decoding with the learned soft prompt (default: what the checkpoint's "
                        "usage.json records: on for autoencoding / continuation models, off for fine-tuned ones)")
    p.add_argument("--device", default="cpu", help="torch device to run on (default: cpu)")


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The ``nugget`` parser and its subcommands' parsers by name."""
    parser = argparse.ArgumentParser(prog="nugget", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_text) in DELEGATED.items():
        sub.add_parser(name, help=help_text, add_help=False)  # parsed by pipelines.cli (see main)
    p = sub.add_parser("list", help="list the stages and their dependencies")
    p.add_argument("--markdown", action="store_true",
                   help="print the stage table and DAG diagram of docs/architecture.md")
    p.add_argument("--write", action="store_true",
                   help="rewrite those generated blocks in docs/architecture.md (implies --markdown)")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("report", help="print the path of the report of the current config")
    p.add_argument("overrides", nargs="*", help="config overrides, e.g. profile=paper")
    p.add_argument("--open", action="store_true", help="open it in a web browser")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("config", help="print the resolved config with each key's help text")
    p.add_argument("items", nargs="*", metavar="SECTION|key=value",
                   help="sections to show (e.g. train.sweep) and config overrides")
    p.set_defaults(func=cmd_config)

    p = sub.add_parser("generate", help="compress a text with a Nugget2D checkpoint; answer a question or continue it")
    _checkpoint_options(p)
    p.add_argument("--text", required=True, help="the text to compress")
    p.add_argument("--question", default=None, help="a question about the text (default: continue the text)")
    p.add_argument("--max-new-tokens", type=_positive, default=64, help="tokens to generate at most")
    p.add_argument("--prompt-format", default="auto", choices=("auto", "inst", "chat_template"),
                   help="layout of the question turn (auto: the LM's chat template, else inst)")
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("eval", help="score a Nugget2D checkpoint on the QA / summarisation data of build_lm")
    _checkpoint_options(p)
    p.add_argument("--task", required=True, choices=TASKS, help="which task's records")
    p.add_argument("--limit", type=_positive, required=True, help="examples to evaluate (the first N)")
    p.add_argument("overrides", nargs="*", help="config overrides selecting the data, e.g. profile=tiny")
    p.set_defaults(func=cmd_eval)
    return parser, sub.choices


def main(argv: Sequence[str] | None = None) -> int:
    """``nugget COMMAND ...``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in DELEGATED:
        return DELEGATED[argv[0]][0](argv[1:])
    parser, commands = build_parser()
    if argv and argv[0] in commands:
        # each subcommand parses its own arguments intermixed (options after key=value
        # overrides), which argparse does not offer through subparsers
        args = commands[argv[0]].parse_intermixed_args(argv[1:])
    else:
        parser.parse_args(argv)  # --help, or an error naming the commands
        return EXIT_CONFIG
    try:
        return args.func(args)
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code


if __name__ == "__main__":
    sys.exit(main())
