"""What the kernel says of this machine's processes, read from /proc (Linux), for the benches: each
process's parent and CPU seconds in one pass, a process's resident and proportional bytes."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def processes() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds of it and of the children it reaped: utime, stime, cutime, cstime),
    from one pass over /proc/<pid>/stat; a process that ends meanwhile is left out."""
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = Path(entry.path, "stat").read_text().rpartition(")")[2].split()
                out[int(entry.name)] = int(fields[1]), sum(int(f) for f in fields[11:15]) / _TICKS
    return out


def resident(pid: int) -> int:
    """Resident bytes of one process, from the kernel's counter in /proc/<pid>/statm; 0 when it has ended."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    return 0


def proportional(pid: int) -> int:
    """Proportional bytes of one process, from its smaps_rollup, for which the kernel walks the process's page
    tables; 0 when it has ended."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    return 0
