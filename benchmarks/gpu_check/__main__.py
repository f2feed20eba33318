"""``python -m benchmarks.gpu_check {pack,plan,run,rehearse,collect,page}`` (and the parts'
own steps: ``stash``, ``assemble``, ``gpu1``, ``gpu-info``). See docs/gpu.md, "A lent GPU
window"."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import traceback
from pathlib import Path

from benchmarks.gpu_check.calls import PACK_DIR, all_calls, get_call, select_parts, window
from benchmarks.gpu_check.environment import REPO, RunEnvironment

SIZES = REPO / PACK_DIR / "sizes.json"


def _sizes() -> dict | None:
    return json.loads(SIZES.read_text()) if SIZES.is_file() else None


def cmd_plan(args: argparse.Namespace) -> int:
    from benchmarks.gpu_check.plan import plan_errors, render

    calls, rotation = window()
    print(render(calls, rotation, _sizes()))
    return 1 if plan_errors(calls, _sizes()) else 0


def cmd_pack(args: argparse.Namespace) -> int:
    from benchmarks.gpu_check.pack import pack
    from benchmarks.gpu_check.plan import render
    from benchmarks.gpu_check.wheels import image_packages

    pack(REPO, Path(args.wheels), Path(args.sources).expanduser(), args.python, image_packages(Path(args.image_packages)),
         args.download, args.data_size)
    calls, rotation = window()
    print(render(calls, rotation, _sizes()))
    return 0


def cmd_rehearse(args: argparse.Namespace) -> int:
    from benchmarks.gpu_check.rehearse import rehearse

    return rehearse(Path(args.root) if args.root else None, args.keep)


def cmd_run(args: argparse.Namespace) -> int:
    from benchmarks.gpu_check.results import write_results
    from benchmarks.gpu_check.runner import CallRunner
    from benchmarks.gpu_check.summary import render_all, render_call

    out = Path(args.out)
    if args.all:
        for call in all_calls():
            env = RunEnvironment.for_mode("all", work=out / f"call{call.number}")
            shutil.rmtree(env.work, ignore_errors=True)
            CallRunner(call, env, env.work).run()
        (out / "summary.md").write_text(render_all(out))
        print((out / "summary.md").read_text())
        return 0
    call = get_call(args.call)
    parts = select_parts(call, args.only.split(",") if args.only else None)
    env = RunEnvironment.for_mode("device", work=Path(args.work) if args.work else None)
    shutil.rmtree(env.work, ignore_errors=True)
    env.work.mkdir(parents=True)
    try:
        CallRunner(call, env, env.work, parts=parts).run()
    except BaseException:  # the runner's own failure: still return what the call has so far
        (env.work / "gpu-check-error.log").write_text(traceback.format_exc())
        raise
    finally:
        summary = render_call(env.work)
        write_results(env.work, out, call.number, summary)
        print(summary)
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    from benchmarks.gpu_check.collect import collect

    for root in collect(Path(args.folder)):
        print(f"{root}/summary.md:\n")
        print((root / "summary.md").read_text())
    return 0


def cmd_page(args: argparse.Namespace) -> int:
    from benchmarks.gpu_check.page import write_page

    print(f"written: {write_page()}")
    return 0


def cmd_stash(args: argparse.Namespace) -> int:
    from benchmarks.gpu_check.handoff import stash

    return stash(Path(args.carry), Path(args.scratch))


def cmd_assemble(args: argparse.Namespace) -> int:
    from benchmarks.gpu_check.handoff import assemble

    return assemble(Path(args.carry), Path(args.scratch), Path(args.site))


def cmd_gpu1(args: argparse.Namespace) -> int:
    from benchmarks.gpu_check.gpu1 import run_gpu1

    return run_gpu1(Path(args.sources), Path(args.out), args.max_seconds)


def cmd_gpu_info(args: argparse.Namespace) -> int:
    from benchmarks.gpu_check.info import gpu_info

    return gpu_info(Path(args.out), args.device)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan", help="print the remote calls (command, carry, timeout) and check the limits")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("pack", help="build .gpu-check/carry1..2 (the burst's data, SmolLM2 in two parts, wheels)")
    p.add_argument("--wheels", default=str(REPO / ".gpu-check" / "wheels"),
                   help="folder of wheels to take from (a cache: --download adds the missing ones there)")
    p.add_argument("--download", action="store_true", help="pip download the wheels the folder lacks")
    p.add_argument("--python", default=sys.executable, help="the project's venv Python (its installed versions)")
    p.add_argument("--sources", default="~/.cache/nugget-pipeline/sources", help="the offline sources (make sources)")
    p.add_argument("--data-size", default="gpu", choices=["gpu", "cpu"], help="the burst's data: the GPU recipe's")
    p.add_argument("--image-packages", default=str(Path(__file__).with_name("image_packages.txt")),
                   help="the GPU image's distributions, one name per line")
    p.set_defaults(func=cmd_pack)
    p = sub.add_parser("run", help="run one call's parts (on the lent machine) or all of them (--all)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--call", type=int)
    which.add_argument("--all", action="store_true", help="every part of every call, nothing installed (own machine)")
    p.add_argument("--out", required=True, help="--call: where the returned files go ($OUT); --all: the results folder")
    p.add_argument("--work", help="--call: the call's working folder (default /tmp/gpu-check/call)")
    p.add_argument("--only", help="--call: these parts only (comma-separated names), e.g. to rerun one")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("rehearse", help="the window's two calls on this CPU at CPU sizes; carries and plan checked")
    p.add_argument("--root", help="the folder standing in for the lent machine's /tmp (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the root (its logs) afterwards")
    p.set_defaults(func=cmd_rehearse)
    p = sub.add_parser("page", help="regenerate docs/gpu-results.md from benchmarks/results/gpu/")
    p.set_defaults(func=cmd_page)
    p = sub.add_parser("collect", help="unpack returned files into benchmarks/results/gpu/<date>/ + summary.md")
    p.add_argument("folder")
    p.set_defaults(func=cmd_collect)
    p = sub.add_parser("stash", help="(call 1 part) leave carry 1's GGUF part and the burst's data in /tmp")
    p.add_argument("--carry", required=True)
    p.add_argument("--scratch", required=True)
    p.set_defaults(func=cmd_stash)
    p = sub.add_parser("assemble", help="(call 2 part) join the GGUF, check it, install carry 2's wheels")
    p.add_argument("--carry", required=True)
    p.add_argument("--scratch", required=True)
    p.add_argument("--site", required=True)
    p.set_defaults(func=cmd_assemble)
    p = sub.add_parser("gpu1", help="(own-machine part) short profile=gpu1, stage times and GPU memory")
    p.add_argument("--sources", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--max-seconds", type=float, required=True)
    p.set_defaults(func=cmd_gpu1)
    p = sub.add_parser("gpu-info", help="(call part) env.json: GPU and library versions")
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: no GPU expected (rehearsal)")
    p.set_defaults(func=cmd_gpu_info)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
