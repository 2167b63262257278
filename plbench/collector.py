"""Python's cyclic garbage collector, paused while a step allocates many objects that hold no garbage: a
database being read and emitted (plbench.spider.stages), a stored stage value being loaded (pipelines/storage.py)."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a while. Reading and emitting a database allocates
    millions of objects that hold no cycles (values, rows, literals, decisions), and each 700 more of
    them start a collection, which every 10th and 100th time walks the older objects (the source
    database) too. Reference counting frees them all anyway. As a function's decorator, the
    function's objects are freed before the collector is back: it then walks only what the function
    returned and the cycles it made (sqlglot trees). The collector is one per process, so only the main
    thread pauses it: two threads (normalize_databases on PostgreSQL in a daemon process) pausing and
    resuming it would race, and one could leave it off for good."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
