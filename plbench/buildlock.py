"""One build at a time per checkout: an exclusive `flock` on `<cache_dir>/build.lock`; and `file_lock`, the
same lock waited for, on any file (plbench.spider.spider2 holds one while it unpacks an archive).

Two builds in one checkout share Dagster's stored values and overwrite each other's files
(a truncated pickle, a reconcile failure). The lock is held for the whole command and
released by the kernel when the process ends, however it ends, so a killed build never
leaves a stale lock. The holder writes who it is into the file for the message others get.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

LOCK_NAME = "build.lock"


class BuildRunning(RuntimeError):
    """Another process holds this checkout's build lock."""


def _holder(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    try:
        info = json.loads(os.read(fd, 1 << 16))
        return f"pid {info['pid']}, `{info['command']}`, started {info['started']}"
    except (ValueError, KeyError, TypeError):  # the holder has not written itself down yet
        return "a process that has not yet said who it is"


@contextmanager
def build_lock(cache_dir: Path) -> Iterator[None]:
    """Hold this checkout's build lock, or raise BuildRunning naming the build that holds it."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildRunning(f"another build is running in this checkout: {_holder(fd)} (lock {path})") from None
        started = datetime.now(UTC).replace(microsecond=0).isoformat()
        me = {"pid": os.getpid(), "command": " ".join(sys.argv), "started": started}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive `flock` on `path`, waiting for another process that holds it; released when the block
    ends or the process does, however it ends."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
