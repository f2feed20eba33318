"""The ``nugget`` command: one entry point for the pipeline and its models.

    nugget run [--dry-run] [key=value ...]        the DAG (= python pipelines/full.py); --dry-run
                                                  --cost-device NAME [--gpus N]: its GPU-hours
    nugget stage NAME [--force] [--dry-run] [...] one stage (= python -m pipelines.stage)
    nugget list [--markdown [--write]]            the stages and their edges (--markdown: the
                                                  docs' stage table and DAG; --write: into the docs)
    nugget report [--open] [key=value ...]        the path of the report of this config
    nugget config [SECTION ...] [key=value ...]   the resolved config, with each key's help
    nugget generate CHECKPOINT --text TEXT [--question Q]   compress TEXT, answer / continue
    nugget eval CHECKPOINT [--task T] [--limit N] [--data FILE] [--output DIR] [key=value ...]
                                                  score a checkpoint with its evaluation stage's
                                                  recipe (pipelines.evaluate; docs/nugget_eval.md)
    nugget lm-eval --model nugget2d --model_args checkpoint=DIR,... --tasks ...
                                                  lm-evaluation-harness with Nugget2D / Full /
                                                  the KV presses as a model (docs/harness.md)

``run`` and ``stage`` hand their arguments to `pipelines.cli` unchanged, ``lm-eval`` to
lm_eval's CLI (their ``--help`` is theirs); the others read the same config and artifact
store. Exit codes as in `pipelines.cli`: 0 ok, 1 failed, 2 bad config or arguments, 3 a needed output is missing.
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from collections.abc import Callable, Sequence
from pathlib import Path

from pipelines.cli import EXIT_CONFIG, default_dag, main_full, main_stage
from pipelines.command import CommandError, load, stage_output
from pipelines.config_help import describe_config
from pipelines.evaluate import cli as eval_cli
from pipelines.evaluate.tasks import soft_prompt
from pipelines.harness_cli import main_lm_eval
from stages.framework.store import ArtifactStore
from stages.nugget2d.loading import load_nugget2d

#: Subcommands whose arguments go to `pipelines.cli` as they are.
DELEGATED: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "run": (main_full, "run the DAG (python pipelines/full.py); see nugget run --help"),
    "stage": (main_stage, "rerun one stage (python -m pipelines.stage); see nugget stage --help"),
    "lm-eval": (main_lm_eval, "lm-evaluation-harness with the nugget2d model (docs/harness.md); "
                "see nugget lm-eval --help"),
}
REPORT_FILE = "report.html"


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
    cfg = load([a for a in args.items if "=" in a])
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
    cfg = load(args.overrides)
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


def cmd_generate(args: argparse.Namespace) -> int:
    from nugget_core.nugget2d import answer, compress_text, continue_text

    model, tokenizer = load_nugget2d(Path(args.checkpoint), args.base_model, args.device)
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


def _checkpoint_options(p: argparse.ArgumentParser,
                        what: str = "a Nugget2D model folder (e.g. <train_nugget2d output>/nugget2d)") -> None:
    p.add_argument("checkpoint", help=what)
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

    eval_cli.add_parser(sub, _checkpoint_options, _positive)
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
