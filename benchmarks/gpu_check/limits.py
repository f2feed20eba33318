"""The limits of a lent GPU machine that every plan and every call must stay within.

They are the device tool's (its README's "Limits" table): a command of at most 2,000
characters runs for at most 600 s in a copy of the working tree plus at most 8 carried
paths, 64 MiB travelling in all; at most 8 files of 16 MiB each come back, no more than two
folders down, named in letters, digits, '.', '_' and '-'. A session holds the machine for
about 30 minutes of device time; the plan keeps to 25 of them, ~2 of which start it.
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
MAX_CALLS = 3
BUDGET_S = 25 * 60  # device time the plan may spend, the machine's start included
MACHINE_START_S = 120  # a fresh machine's start (docs/performance.md)
# what a call keeps back from its own timeout: packing the results and exiting before the
# tool's limit kills the command (and with it every file not yet written under $OUT)
CALL_RESERVE_S = 30
