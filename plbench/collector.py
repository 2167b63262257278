"""The process's memory: Python's cyclic garbage collector, paused while a step allocates many objects that
hold no garbage (a database being read and emitted, plbench.spider.stages; a stored stage value being loaded,
pipelines/storage.py; the quality suites, plbench.quality), collecting less often while a build runs
(`collector_thresholds`), and freed memory given back to the system (`give_back_freed_memory`)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
import threading
from collections.abc import Iterator

# glibc's, from the symbols the process already has (as plbench/_sandbox_contain.py reaches libc); None elsewhere
_MALLOC_TRIM = getattr(ctypes.CDLL(None), "malloc_trim", None)


def give_back_freed_memory() -> None:
    """Return to the system the heap pages that freed objects held. glibc keeps them, so in one process (the
    in-process executor) each step began on top of what the earlier ones had freed: after two stored values
    were dropped 0.8 GB stayed resident, and malloc_trim(0) gave it back in 30 ms. Arrow's pool keeps what
    freed tables held as well (0.6 GB of the nine-subset tasks table's 0.66 GB), and neither allocator reuses
    the other's pages, so work making Arrow tables after work on Python objects (or the reverse) paid for both."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
    if (arrow := sys.modules.get("pyarrow")) is not None:  # a process that never imported it holds no pool
        arrow.default_memory_pool().release_unused()


_pause_lock = threading.Lock()
_pauses = [0, False]  # [how many are paused now, whether the collector was on when the first began]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a while. Reading and emitting a database allocates
    millions of objects that hold no cycles (values, rows, literals, decisions), and each 700 more of
    them start a collection, which every 10th and 100th time walks the older objects (the source
    database) too. Reference counting frees them all anyway. As a function's decorator, the
    function's objects are freed before the collector is back: it then walks only what the function
    returned and the cycles it made (sqlglot trees). The collector is one per process, and steps run on
    threads side by side (pipelines/step_threads.py): it stays off while any thread has it paused, and the
    last to finish turns it back on if it was on before the first began."""
    with _pause_lock:
        if _pauses[0] == 0:
            _pauses[1] = gc.isenabled()
            gc.disable()
        _pauses[0] += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses[0] -= 1
            if _pauses[0] == 0 and _pauses[1]:
                gc.enable()


# The collector's thresholds while a build runs in this process. The default (700, 10, 10) starts a collection
# every 700 container allocations and considers the whole heap every 70,000 (GX's and Dagster's modules alone
# are 400,000 objects to walk). Eight stages of the mirror's four-subset build spent 5.1 s of 49 in the
# collector, 13 whole-heap walks among them; with these 1.8 s of 44 and none, at the same peak memory.
BUILD_THRESHOLDS = (50_000, 20, 10)


@contextlib.contextmanager
def collector_thresholds(thresholds: tuple[int, int, int] = BUILD_THRESHOLDS) -> Iterator[None]:
    """The cyclic collector at `thresholds` meanwhile (it still runs: cycles are found, only less often)."""
    before = gc.get_threshold()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*before)
