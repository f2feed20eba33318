"""The ``nugget eval`` subcommand: its arguments (`add_parser`) and what it does (`cmd_eval`):
identify the checkpoint, choose the task, read the records, run the task's recipe, print each
metric with its 95% interval and a warning on degenerate outputs, and with ``--output`` write
the per-example rows and a summary."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pipelines import command
from pipelines.evaluate import checkpoints, data, summary, tasks


def cmd_eval(args: argparse.Namespace) -> int:
    """Score ``args.checkpoint`` on ``args.task`` (module docstring); exit 0, or a `CommandError`."""
    ckpt = checkpoints.identify(args.checkpoint)
    task = checkpoints.choose_task(ckpt, args.task)
    cfg = command.load(args.overrides)
    # a RE model restores texts of the sentence count it was trained on (train_re's record)
    sentences = int(ckpt.system_record().get("sentences", 1)) if task == "restoration" else 1
    loaded = data.records_for(cfg, task, args.data, args.limit, sentences)
    records, where = loaded.records, loaded.where
    scored = tasks.run_task(ckpt, task, loaded, cfg, args)
    field = "ranking" if scored.outputs == "ranking" else "output"  # a ranking's row outputs its top hit
    outputs = [e.get(field, "") for e in scored.examples] if scored.outputs != "none" else []
    check = summary.degenerate(outputs, "; ".join(r.flag for r in scored.rows if r.flag), scored.outputs)
    label = f" (stand-in: {scored.stand_in})" if scored.stand_in else ""
    print(f"{task}: {ckpt.kind} checkpoint {ckpt.path}")
    print(f"  {len(records)} examples of {where}{label}; {scored.header}")
    for row in scored.rows:
        indent = "  " if len(scored.rows) == 1 else "    "
        if len(scored.rows) > 1:
            print(f"  {row.system}:")
        for metric in scored.metrics:
            print(f"{indent}{summary.metric_line(row, metric)}")
    warning = summary.warning_line(check)
    if warning:
        print(warning, file=sys.stderr)
    if args.output:
        about: dict[str, Any] = {"checkpoint": str(ckpt.path), "kind": ckpt.kind, "task": task, "data": where,
                                 "limit": args.limit, "overrides": list(args.overrides), "device": args.device,
                                 "stand_in": scored.stand_in, **scored.settings}
        written = summary.write_output(Path(args.output), scored.examples,
                                       summary.summary(scored.rows, scored.metrics, check, about))
        print(f"wrote {', '.join(map(str, written))}")
    return 0


def add_parser(sub: Any, checkpoint_options: Any, positive: Any) -> None:
    """``nugget eval``'s parser in the subcommands ``sub`` (``checkpoint_options`` adds the
    options it shares with ``generate``; ``positive`` parses a count >= 1)."""
    kinds = "; ".join(f"{kind}: {', '.join(t)}" for kind, t in checkpoints.TASKS.items())
    p = sub.add_parser("eval", help="score a checkpoint (Nugget2D, Nugget, RE) with its evaluation stage's recipe",
                       description=f"Score a checkpoint with the recipe of its evaluation stage. Tasks by kind: "
                                   f"{kinds}. Exit codes: 0 ok, 2 bad arguments / checkpoint / --data, "
                                   "3 the pipeline data is missing.")
    checkpoint_options(p, "a model folder (e.g. <train_nugget output>/model, <train_nugget2d output>/nugget2d) "
                          "or the stage output folder holding it")
    p.add_argument("--task", default=None, choices=checkpoints.all_tasks(),
                   help="what to score (default: the kind's first task; Nugget2D: the task it was fine-tuned "
                        "on, lm for an autoregressive model, else none)")
    p.add_argument("--limit", type=positive, default=None, help="score only the first N examples (default: all)")
    p.add_argument("--data", default=None, metavar="FILE",
                   help="a JSONL file of records to score instead of the pipeline's data (qa / summarization: "
                        "id, document, instruction, answer; reconstruction: source, target; restoration: text; pi / rr: a "
                        "folder with tasks.jsonl + docs.tsv or the released task.jsonl + docs.txt)")
    p.add_argument("--output", default=None, metavar="DIR",
                   help="write examples.jsonl (per-example rows) and summary.json (metrics, intervals, flags) here")
    p.add_argument("--objective", default=None, choices=("ae", "mt"),
                   help="reconstruction: what a Nugget model was trained to write (default: its trained.json, "
                        "else ae)")
    p.add_argument("overrides", nargs="*", help="config overrides selecting the data and settings, e.g. profile=tiny")
    p.set_defaults(func=cmd_eval)
