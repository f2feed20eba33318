"""The limits of a lent GPU machine that every plan and every call must stay within: the one
place they are written (``make gpu-check-plan`` checks the plan against them).

They are the device tool's (its README's "Limits" table, as of 2026-11-27): **15 minutes of
device time per task in all**, every start (one to two minutes), idle wait and call
counted; no machine starts with under 4 minutes left; a command of at most 2,000 characters
runs for at most 600 s in a copy of the working tree plus at most 8 carried paths, 64 MiB
travelling in all per call; a machine stays warm 30 s after a call and is then given back;
at most 8 files of 16 MiB each come back, no more than two folders down, named in letters,
digits, '.', '_' and '-'.

The plan keeps 2 of the 15 minutes in hand (`PLAN_BUDGET_S`): a start that takes the full
two minutes, transfers slower than assumed, or a rerun of one part still fit the lent time.
"""

from __future__ import annotations

import re

MIB = 2**20
COMMAND_CHARS = 2000
TIMEOUT_S = 600
CARRY_PATHS = 8
TRANSFER_BYTES = 64 * MIB  # the working tree and every carried path together, per call
RETURN_FILES = 8
RETURN_FILE_BYTES = 16 * MIB
RETURN_NAME = re.compile(r"^[A-Za-z0-9._-]+$")

LENT_S = 15 * 60  # device time a lent task has in all
PLAN_BUDGET_S = 13 * 60  # what the plan may spend of it, the start included
MAX_CALLS = 2  # issued back to back on the one warm machine
MACHINE_START_S = 120  # a fresh machine's start: the device tool says one to two minutes; the plan takes two
TRANSFER_S = 20  # per call: the working tree and carry out (<= 64 MiB), the returned files back
IDLE_AFTER_S = 30  # warm after the last call until it is given back (the plan counts it: give_back may be late)
# each call after the first must be issued within this many seconds of the previous one's
# end, or the machine is gone with /tmp (what call 1 left for call 2) and the installs
WARM_S = 30
# what a call keeps back from its own timeout: packing the results and exiting before the
# tool's limit kills the command (and with it every file not yet written under $OUT)
CALL_RESERVE_S = 15
