"""The reaper stops what a SIGKILLed driver started, reparented descendants included (as
Ray's agents are), and nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
# a driver whose child starts a grandchild, then the driver starts its reaper
DRIVER = """
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c",
    "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
    " print(p.pid, flush=True); time.sleep(60)"], stdout=sys.stdout)
from stages.framework.reaper import start_reaper
start_reaper(os.getpid())
time.sleep(60)
"""


def test_killed_driver_leaves_no_descendant(tmp_path):
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], cwd=REPO, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        grandchild = int(driver.stdout.readline())
        deadline = time.time() + 20
        while len(psutil.Process(driver.pid).children(recursive=True)) < 3:  # child, grandchild, reaper
            assert time.time() < deadline
            time.sleep(0.1)
        tree = psutil.Process(driver.pid).children(recursive=True)
        time.sleep(1.5)  # the reaper has polled the tree at least once
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        gone, alive = psutil.wait_procs(tree, timeout=20)
        assert alive == [] and grandchild in {p.pid for p in gone}
        assert bystander.poll() is None  # a process the driver did not start is left alone
    finally:
        bystander.kill()
        driver.kill()
