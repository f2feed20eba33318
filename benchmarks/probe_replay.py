"""The adversarial probe's failing cases, replayed against the real CLI.

    python benchmarks/probe_replay.py --out benchmarks/results/probe_replay.json
    python benchmarks/probe_replay.py --skip-ray          # the dry-run / preflight cases only

1. One base artifact root: a real run of the tiny profile's cut ``tokenizer``,
   ``corpus_stats``, ``build_rr`` (``--base`` reuses a finished one).
2. Per case, a copy of that root (``shutil.copytree``) is damaged or set up the way the
   probe did it (a key folder swapped, a manifest without a file table, a held tracker
   lock, a deleted MLflow experiment...), then ``pipelines/full.py`` or ``python -m
   pipelines.stage`` runs as a subprocess with a timeout: ``--dry-run`` for the planning
   and preflight cases (no Ray starts), a real run for the cases that need a stage task
   (SIGTERM, a model folder with custom code, a same-size edit only a reader can see).
3. Each case's expectations are read from the exit code and the output (the plan line,
   the error line, what must not be printed); a case is clean when all of them hold.

Writes one JSON (per case: class, case, command with ``<root>`` / ``<work>`` placeholders,
exit code, seconds, key lines of the output, each expectation and ``clean``) and prints a
Markdown table. Exits 0 only when every case run was clean.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kill_anywhere import REPO, alive, descendants, outputs, running_runs  # noqa: E402
from probe_harness import (  # noqa: E402
    FULL,
    PY,
    STAGE,
    Case,
    Expect,
    Ran,
    cli_env,
    run_case,
    run_cli,
    shown,
    table,
)

BASE_TARGETS = "run.targets=[tokenizer,corpus_stats,build_rr]"
MANIFEST, MARKER = "_nugget_manifest.json", "_COMPLETE"



# -- the root's outputs -------------------------------------------------------------------

def key_dir(root: Path, stage: str) -> Path:
    (found,) = [p for p in (root / stage).iterdir() if p.is_dir() and not p.name.startswith(".")]
    return found


def edit_manifest(folder: Path, edit: Callable[[dict], None]) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    edit(manifest)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2))


def swap_tokenizer_and_corpus_stats(root: Path) -> tuple[Path, Path]:
    tok, stats = key_dir(root, "tokenizer"), key_dir(root, "corpus_stats")
    aside = root / "aside"
    tok.rename(aside)
    stats.rename(tok)
    aside.rename(stats)
    return tok, stats


def plan_line(output: str, stage: str) -> str:
    return next((ln for ln in output.splitlines() if ln.strip().startswith(f"{stage} ")), "")


def dry(root: Path, *args: str, targets: str = BASE_TARGETS) -> list[str]:
    return [*FULL, "--dry-run", f"run.artifact_root={root}", *([targets] if targets else []), *args]


# -- class 1: an output in the wrong place is accepted ------------------------------------

def c1_swapped_key_folders(root: Path, work: Path) -> tuple[Ran, Expect]:
    swap_tokenizer_and_corpus_stats(root)
    ran = run_cli(dry(root))
    tok, stats = plan_line(ran.output, "tokenizer"), plan_line(ran.output, "corpus_stats")
    return ran, Expect(0, contains=["_nugget_manifest.json names stage 'corpus_stats', not the folder's 'tokenizer'"],
                       extra={"tokenizer planned miss (damaged)": " miss " in tok and "(damaged: " in tok,
                              "corpus_stats planned miss (damaged)": " miss " in stats and "(damaged: " in stats,
                              "corpus_stats names the tokenizer's output":
                              "names stage 'tokenizer', not the folder's 'corpus_stats'" in stats})


def c1_key_folder_copied_under_another_key(root: Path, work: Path) -> tuple[Ran, Expect]:
    other = "model.seq2seq.tokenizer_vocab_size=3000"
    key = re.search(r"key=(\w+)", plan_line(run_cli(dry(root, other, targets="run.targets=[tokenizer]")).output,
                                            "tokenizer")).group(1)
    source = key_dir(root, "tokenizer")
    shutil.copytree(source, root / "tokenizer" / key)
    ran = run_cli(dry(root, other, targets="run.targets=[tokenizer]"))
    return ran, Expect(0, contains=[f"(damaged: _COMPLETE names key '{source.name}', not the folder's {key}"],
                       extra={"tokenizer planned miss": " miss " in plan_line(ran.output, "tokenizer")})


# -- class 2: a manifest without a file table ---------------------------------------------

def _empty_table(root: Path) -> None:
    folder = key_dir(root, "tokenizer")
    edit_manifest(folder, lambda m: m.update(files={}))
    (folder / "tokenizer" / "tokenizer.json").unlink()


def c2_empty_file_table_plan(root: Path, work: Path) -> tuple[Ran, Expect]:
    _empty_table(root)
    ran = run_cli(dry(root))
    return ran, Expect(0, contains=["(damaged: _nugget_manifest.json lists no files"],
                       extra={"tokenizer planned miss": " miss " in plan_line(ran.output, "tokenizer")})


def c2_empty_file_table_reader(root: Path, work: Path) -> tuple[Ran, Expect]:
    _empty_table(root)
    ran = run_cli([*STAGE, "build_rr", f"run.artifact_root={root}"])
    return ran, Expect(3, contains=["upstream stage 'tokenizer'", "lists no files",
                                    "python -m pipelines.stage tokenizer --force"])


# -- class 3: a damaged upstream is reported as missing -----------------------------------

def c3_truncated_upstream(root: Path, work: Path) -> tuple[Ran, Expect]:
    path = key_dir(root, "tokenizer") / "tokenizer" / "tokenizer.json"
    size = path.stat().st_size
    os.truncate(path, size // 2)
    ran = run_cli([*STAGE, "build_rr", f"run.artifact_root={root}"])
    return ran, Expect(3, contains=["upstream stage 'tokenizer'", "is damaged: tokenizer/tokenizer.json: "
                                    f"{size // 2} bytes, published with {size}",
                                    "python -m pipelines.stage tokenizer --force"],
                       absent=["has no cached output"])


def c3_swapped_upstream(root: Path, work: Path) -> tuple[Ran, Expect]:
    swap_tokenizer_and_corpus_stats(root)
    ran = run_cli([*STAGE, "build_rr", f"run.artifact_root={root}"])
    return ran, Expect(3, contains=["upstream stage 'tokenizer'", "names stage 'corpus_stats'",
                                    "python -m pipelines.stage tokenizer --force"], absent=["has no cached output"])


def c3_same_size_edit_seen_by_the_reader(root: Path, work: Path) -> tuple[Ran, Expect]:
    """Sizes plan it as a hit; the reader's sha256 names it (a stage task must run)."""
    path = key_dir(root, "tokenizer") / "tokenizer" / "tokenizer.json"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    ran = run_cli([*STAGE, "build_rr", "--force", f"run.artifact_root={root}"], timeout=240)
    return ran, Expect(1, ray=True, contains=["tokenizer/tokenizer.json: content differs from the published sha256",
                                              "python -m pipelines.stage tokenizer --force"])


# -- class 5: credentials in run.tracking_uri ---------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


AUTH_USER, AUTH_SECRET = "admin", "Pw-probe-replay-2c71"


def _with_auth_server(work: Path, check: Callable[[str], tuple[Ran, Expect]]) -> tuple[Ran, Expect]:
    """MLflow's basic-auth server on 127.0.0.1 (its admin password given by environment)."""
    home = work / "mlflow-auth"
    home.mkdir()
    (home / "auth.ini").write_text(
        f"[mlflow]\ndefault_permission = READ\ndatabase_uri = sqlite:///{home / 'auth.db'}\n"
        f"admin_username = {AUTH_USER}\nauthorization_function = mlflow.server.auth:authenticate_request_basic_auth\n")
    port = _free_port()
    env = {**cli_env(), "MLFLOW_AUTH_CONFIG_PATH": str(home / "auth.ini"), "MLFLOW_AUTH_ADMIN_PASSWORD": AUTH_SECRET,
           "MLFLOW_FLASK_SERVER_SECRET_KEY": "probe-replay", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    cmd = [str(Path(PY).parent / "mlflow"), "server", "--app-name", "basic-auth", "--host", "127.0.0.1", "--port",
           str(port), "--workers", "1", "--backend-store-uri", f"sqlite:///{home / 'store.db'}",
           "--artifacts-destination", str(home / "artifacts")]
    with open(home / "server.log", "w") as log:
        server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for_an_answer(f"http://127.0.0.1:{port}/health", server, 120)
        return check(f"127.0.0.1:{port}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def _wait_for_an_answer(url: str, server: subprocess.Popen, seconds: float) -> None:
    """Until the server answers one HTTP request: on a loaded machine a cold server's first
    answer can take longer than the preflight's probe (docs/reliability.md), which this case
    is not about."""
    import urllib.error
    import urllib.request

    deadline = time.time() + seconds
    while time.time() < deadline and server.poll() is None:
        try:
            urllib.request.urlopen(url, timeout=30).close()
            return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            time.sleep(0.5)


def c5_credentials_in_the_tracking_uri(root: Path, work: Path) -> tuple[Ran, Expect]:
    def check(host: str) -> tuple[Ran, Expect]:
        good = run_cli(dry(root, f"run.tracking_uri=http://{AUTH_USER}:{AUTH_SECRET}@{host}",
                           targets="run.targets=[corpus_stats]"))
        wrong = "wrong-pw-5e0b"
        bad = run_cli(dry(root, f"run.tracking_uri=http://{AUTH_USER}:{wrong}@{host}",
                          targets="run.targets=[corpus_stats]"))
        both = Ran([a.replace(AUTH_SECRET, "<password>") for a in good.argv], good.code,
                   round(good.seconds + bad.seconds, 1), good.output + "\n" + bad.output, then=bad)
        return both, Expect(0, contains=[f"refused the credentials (HTTP 401) of user '{AUTH_USER}'"],
                            absent=[AUTH_SECRET, wrong], extra={
                                "right password: exit 0": good.code == 0,
                                "wrong password: exit 2": bad.code == 2})
    return _with_auth_server(work, check)


# -- class 6: paths escape their folders ---------------------------------------------------

def c6_profile_outside_conf(root: Path, work: Path) -> tuple[Ran, Expect]:
    evil = work / "evil.yaml"
    evil.write_text("defaults:\n  model: tiny\nrun:\n  num_cpus: 77\n")
    rel = "../" * 16 + str(evil.with_suffix("")).lstrip("/")  # from conf/profile/ up to / and down to it
    ran = run_cli([*FULL, "--dry-run", f"run.artifact_root={root}", f"profile={rel}"])
    return ran, Expect(2, contains=["conf/profile/"], absent=[str(evil)], max_seconds=60)


def _hostname_size() -> int:
    return Path("/etc/hostname").stat().st_size


def _escaping_entry(root: Path) -> str:
    entry = "../" * 16 + "etc/hostname"  # enough ``..`` to reach / from any root
    edit_manifest(key_dir(root, "tokenizer"), lambda m: m["files"].update({entry: [1, "0" * 64]}))
    return entry


def c6_manifest_entry_outside_the_output(root: Path, work: Path) -> tuple[Ran, Expect]:
    entry = _escaping_entry(root)
    plan = run_cli(dry(root))
    reader = run_cli([*STAGE, "build_rr", f"run.artifact_root={root}"])
    both = Ran(plan.argv, plan.code, round(plan.seconds + reader.seconds, 1), plan.output + "\n" + reader.output,
               then=reader)
    named = f"file table entry {entry!r}: not a path inside the output"
    return both, Expect(0, contains=[named], absent=[f"{_hostname_size()} bytes"], extra={
        "plan: tokenizer miss": " miss " in plan_line(plan.output, "tokenizer"),
        "reader: exit 3": reader.code == 3, "reader names the entry": named in reader.output})


def c6_manifest_entry_symlink_out(root: Path, work: Path) -> tuple[Ran, Expect]:
    folder = key_dir(root, "tokenizer")
    (folder / "leak").symlink_to("/etc/hostname")
    edit_manifest(folder, lambda m: m["files"].update({"leak": [_hostname_size(), "0" * 64]}))
    ran = run_cli([*STAGE, "build_rr", f"run.artifact_root={root}"])
    return ran, Expect(3, contains=["leak: leads outside the output"], absent=[f"{_hostname_size()} bytes"])


# -- class 7: a held tracker lock -----------------------------------------------------------

HOLD = ("import sys, time\nfrom stages.framework.locks import FileLock\nlock = FileLock(sys.argv[1])\n"
        "assert lock.try_acquire()\nprint('held', flush=True)\ntime.sleep(600)\n")


def _held_tracker_lock(root: Path, dry_run: bool) -> tuple[Ran, Expect]:
    """Another process holds ``<root>/mlflow.db.lock`` (the project's own `FileLock`, so
    the file names it); the run is all cache hits, so it starts no Ray either way."""
    holder = subprocess.Popen([PY, "-c", HOLD, str(root / "mlflow.db.lock")], cwd=REPO, env=cli_env(),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        argv = [*FULL, *(["--dry-run"] if dry_run else []), f"run.artifact_root={root}", "run.targets=[corpus_stats]"]
        ran = run_cli(argv, env={"NUGGET_LOCK_WAIT_S": "5"}, timeout=90)
    finally:
        holder.kill()
        holder.wait()
    return ran, Expect(2, contains=[f"{root}/mlflow.db.lock", f"{socket.gethostname()}:{holder.pid}"],
                       max_seconds=45)


def c7_held_tracker_lock(root: Path, work: Path) -> tuple[Ran, Expect]:
    return _held_tracker_lock(root, dry_run=False)


def c7_held_tracker_lock_dry_run(root: Path, work: Path) -> tuple[Ran, Expect]:
    """EXIT_HELP: ``--dry-run`` exits 0 only when "nothing would stop the run"."""
    return _held_tracker_lock(root, dry_run=True)


# -- class 8: late errors --------------------------------------------------------------------

def c8_cuda_without_a_gpu(root: Path, work: Path) -> tuple[Ran, Expect]:
    ran = run_cli(dry(root, "run.device=cuda", targets="run.targets=[eval_reconstruction]"))
    return ran, Expect(2, contains=["run.device='cuda'", "has 0; set run.device=auto or cpu"])


VOCAB = "model.seq2seq.tokenizer_vocab_size=100000000000000000000000"


def c8_vocabulary_1e23(root: Path, work: Path) -> tuple[Ran, Expect]:
    ran = run_cli(dry(root, VOCAB))
    return ran, Expect(2, contains=["model.seq2seq.tokenizer_vocab_size"], max_seconds=30)


def c8_vocabulary_1e23_real_run(root: Path, work: Path) -> tuple[Ran, Expect]:
    ran = run_cli([*FULL, f"run.artifact_root={root}", BASE_TARGETS, VOCAB])
    return ran, Expect(2, contains=["model.seq2seq.tokenizer_vocab_size"], max_seconds=30)


def c8_hub_model_offline(root: Path, work: Path) -> tuple[Ran, Expect]:
    ran = run_cli(dry(root, "model.seq2seq.source=pretrained", "model.seq2seq.name_or_path=facebook/bart-base",
                      targets="run.targets=[tokenizer]"), env={"HF_HUB_OFFLINE": "1"})
    return ran, Expect(3, contains=["model.seq2seq.name_or_path='facebook/bart-base' is a hub id the local Hugging "
                                    "Face cache does not hold, and HF_HUB_OFFLINE=1 forbids downloading it"])


def c8_hub_dataset_unreachable(root: Path, work: Path) -> tuple[Ran, Expect]:
    endpoint = f"http://127.0.0.1:{_free_port()}"  # nothing listens: a hub that does not answer
    ran = run_cli(dry(root, "data.mt.source=wmt19", targets="run.targets=[build_mt_docs]"),
                  env={"HF_ENDPOINT": endpoint})
    return ran, Expect(3, contains=["data.mt.local_files='' (empty, with data.mt.source='wmt19')",
                                    f"the hub at {endpoint} does not answer"], max_seconds=60)


def c8_negatives_100000(root: Path, work: Path) -> tuple[Ran, Expect]:
    ran = run_cli(dry(root, "data.rr.negatives=100000", targets="run.targets=[build_rr]"))
    return ran, Expect(2, contains=["data.rr.negatives"])


# -- class 9: messages ---------------------------------------------------------------------------

def c9_sigterm(root: Path, work: Path) -> tuple[Ran, Expect]:
    """SIGTERM to a driver while its stage task runs (a forced ``corpus_stats``)."""
    argv = [*STAGE, "corpus_stats", "--force", f"run.artifact_root={root}"]
    log = work / "driver.log"
    start = time.time()
    with log.open("w") as fh:
        driver = subprocess.Popen(argv, cwd=REPO, env=cli_env(), stdin=subprocess.DEVNULL, stdout=fh,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    sent, started = False, {}
    while time.time() - start < 180 and driver.poll() is None:
        started.update(descendants(driver.pid))
        if re.search(r"corpus_stats\s+start", log.read_text()):
            time.sleep(1.0)  # the task is running
            driver.send_signal(signal.SIGTERM)
            sent = True
            break
        time.sleep(0.2)
    try:
        code = driver.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(driver.pid, signal.SIGKILL)
        code = driver.wait()
    ran = Ran(argv, code, round(time.time() - start, 1), log.read_text())
    deadline = time.time() + 30  # Ray's own processes go a moment after the driver
    while alive(started) and time.time() < deadline:
        time.sleep(1)
    final = outputs(root)
    return ran, Expect(143, ray=True, contains=["stopped by SIGTERM"], extra={
        "SIGTERM sent while the stage ran": sent, "no process of the driver left": not alive(started),
        "no MLflow run left RUNNING": running_runs(root) == 0,
        "corpus_stats output complete and intact": final.get("corpus_stats", {}).get("intact", False)})


def _deleted_experiment(root: Path, dry_run: bool) -> tuple[Ran, Expect]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{root}/mlflow.db")
    experiment = client.get_experiment_by_name("nugget-pipeline")
    client.delete_experiment(experiment.experiment_id)
    ran = run_cli([*FULL, *(["--dry-run"] if dry_run else []), f"run.artifact_root={root}",
                   "run.targets=[corpus_stats]"])
    return ran, Expect(2, contains=[f"mlflow experiments restore --experiment-id {experiment.experiment_id}"])


def c9_deleted_experiment(root: Path, work: Path) -> tuple[Ran, Expect]:
    return _deleted_experiment(root, dry_run=False)


def c9_deleted_experiment_dry_run(root: Path, work: Path) -> tuple[Ran, Expect]:
    """docs/running.md: a deleted experiment is refused "before Ray starts (and by --dry-run)"."""
    return _deleted_experiment(root, dry_run=True)


def c9_custom_code_model_folder(root: Path, work: Path) -> tuple[Ran, Expect]:
    """A tokenizer folder whose ``auto_map`` points at a Python file of its own, which
    would write ``planted`` if it ran."""
    folder, planted = work / "custom-model", work / "custom-code-ran"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "custom",
                                                    "auto_map": {"AutoConfig": "custom.CustomConfig"}}))
    (folder / "tokenizer_config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": ["custom.CustomTok",
                                                                                              None]}}))
    (folder / "custom.py").write_text(f"open({str(planted)!r}, 'w').write('ran')\n")
    ran = run_cli([*STAGE, "tokenizer", f"run.artifact_root={root}", "model.seq2seq.source=pretrained",
                   f"model.seq2seq.name_or_path={folder}"], timeout=240)
    return ran, Expect(1, ray=True, contains=[f"The repository {folder} contains custom code"],
                       absent=["[y/N]", "Do you wish to run the custom code"],
                       extra={"the custom code did not run": not planted.exists()})


CASES = [
    Case("1 output in the wrong place", "swapped_key_folders", c1_swapped_key_folders),
    Case("1 output in the wrong place", "key_folder_copied_under_another_key", c1_key_folder_copied_under_another_key),
    Case("2 manifest without a file table", "empty_file_table_plan", c2_empty_file_table_plan),
    Case("2 manifest without a file table", "empty_file_table_reader", c2_empty_file_table_reader),
    Case("3 damaged upstream reported missing", "truncated_upstream", c3_truncated_upstream),
    Case("3 damaged upstream reported missing", "swapped_upstream", c3_swapped_upstream),
    Case("3 damaged upstream reported missing", "same_size_edit_seen_by_the_reader",
         c3_same_size_edit_seen_by_the_reader, ray=True),
    Case("5 credentials in run.tracking_uri", "credentials_in_the_tracking_uri", c5_credentials_in_the_tracking_uri),
    Case("6 paths escape their folders", "profile_outside_conf", c6_profile_outside_conf),
    Case("6 paths escape their folders", "manifest_entry_outside_the_output", c6_manifest_entry_outside_the_output),
    Case("6 paths escape their folders", "manifest_entry_symlink_out", c6_manifest_entry_symlink_out),
    Case("7 held tracker lock", "held_tracker_lock", c7_held_tracker_lock),
    Case("7 held tracker lock", "held_tracker_lock_dry_run", c7_held_tracker_lock_dry_run),
    Case("8 late errors", "cuda_without_a_gpu", c8_cuda_without_a_gpu),
    Case("8 late errors", "vocabulary_1e23", c8_vocabulary_1e23),
    Case("8 late errors", "vocabulary_1e23_real_run", c8_vocabulary_1e23_real_run),
    Case("8 late errors", "hub_model_offline", c8_hub_model_offline),
    Case("8 late errors", "hub_dataset_unreachable", c8_hub_dataset_unreachable),
    Case("8 late errors", "negatives_100000", c8_negatives_100000),
    Case("9 messages", "sigterm", c9_sigterm, ray=True),
    Case("9 messages", "deleted_experiment", c9_deleted_experiment),
    Case("9 messages", "deleted_experiment_dry_run", c9_deleted_experiment_dry_run),
    Case("9 messages", "custom_code_model_folder", c9_custom_code_model_folder, ray=True),
]


def build_base(base: Path) -> dict[str, Any]:
    ran = run_cli([*FULL, f"run.artifact_root={base}", BASE_TARGETS], timeout=900)
    if ran.code != 0:
        raise SystemExit(f"the base run failed (exit {ran.code}):\n{ran.output[-3000:]}")
    return {"command": shown(ran, base, base.parent).replace("<root>", "<base>"), "seconds": ran.seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "probe_replay.json")
    parser.add_argument("--base", type=Path, default=None, help="a finished root of the base cut to copy")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--skip-ray", action="store_true", help="only the cases that start no Ray")
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="probe-replay-"))
    work.mkdir(parents=True, exist_ok=True)
    chosen = [c for c in CASES if (not args.cases or c.name in args.cases.split(",")) and not (args.skip_ray and c.ray)]
    base_run = None
    base = args.base
    if base is None:
        base = work / "base"
        base_run = build_base(base)
        print(f"base root: {base_run['seconds']} s", flush=True)
    start = time.time()
    rows = []
    for case in chosen:
        rows.append(run_case(case, base, work / "cases"))
        row = rows[-1]
        failed = [k for k, ok in row["checks"].items() if not ok]
        print(f"{row['case']}: exit {row['exit']}, {row['seconds']} s, "
              f"{'clean' if row['clean'] else 'NOT clean: ' + '; '.join(failed)}", flush=True)
    result = {"base": base_run or {"reused": str(base)}, "cases": rows, "tried": len(rows),
              "clean": sum(r["clean"] for r in rows), "seconds": round(time.time() - start, 1),
              "skip_ray": args.skip_ray, "machine": f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(rows))
    print(f"clean: {result['clean']}/{result['tried']}")
    return 0 if result["clean"] == result["tried"] else 1


if __name__ == "__main__":
    sys.exit(main())
