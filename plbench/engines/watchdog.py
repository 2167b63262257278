"""A watchdog that stops statements running past their deadline: cancel first, then end the backend.

A statement's `statement_timeout` is the candidate's to change, and PL/pgSQL can catch the cancel
it causes (`EXCEPTION WHEN query_canceled THEN NULL` in a loop), so the watchdog escalates: at the
deadline it sends a cancel; if the statement is still running `grace_s` later, it ends the backend
(`terminate(pid)`, run by the engine as its administrative user). A statement therefore costs at
most its deadline plus one grace; the session that ran it is then dead and never reused.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable

import psycopg

CANCEL, TERMINATE = "cancel", "terminate"


class Watchdog:
    """One thread per engine; `arm` a connection for some seconds, `disarm` when its statement ends."""

    def __init__(self, terminate: Callable[[int], None], grace_s: float = 1.0) -> None:
        self._terminate = terminate
        self.grace_s = grace_s
        self._cond = threading.Condition()
        self._deadlines: list[tuple[float, int, str]] = []  # heap of (deadline, token, action)
        self._armed: dict[int, tuple[psycopg.Connection, int]] = {}  # token -> (connection, backend pid)
        self._terminated: set[int] = set()
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, conn: psycopg.Connection, seconds: float) -> int:
        token = next(self._tokens)
        with self._cond:
            self._armed[token] = (conn, conn.info.backend_pid)
            self._push(time.monotonic() + seconds, token, CANCEL)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="plbench-pg-watchdog", daemon=True)
                self._thread.start()
        return token

    def disarm(self, token: int) -> bool:
        """Stop watching; True when the watchdog ended the statement's backend."""
        with self._cond:
            self._armed.pop(token, None)
            if token in self._terminated:
                self._terminated.discard(token)
                return True
            return False

    def _push(self, deadline: float, token: int, action: str) -> None:
        heapq.heappush(self._deadlines, (deadline, token, action))
        if self._deadlines[0][1] == token:
            self._cond.notify()  # the thread may be waiting for a later deadline

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._deadlines and self._deadlines[0][1] not in self._armed:
                    heapq.heappop(self._deadlines)  # finished in time
                if not self._deadlines:
                    self._cond.wait()
                    continue
                deadline, token, action = self._deadlines[0]
                if time.monotonic() < deadline:
                    self._cond.wait(deadline - time.monotonic())
                    continue
                heapq.heappop(self._deadlines)
                conn, pid = self._armed[token]
                if action == CANCEL:
                    self._push(time.monotonic() + self.grace_s, token, TERMINATE)
                else:
                    self._terminated.add(token)
            if action == CANCEL:
                with contextlib.suppress(Exception):  # the statement may have just ended
                    conn.cancel_safe(timeout=5.0)
            else:
                with contextlib.suppress(Exception):  # the backend may have just ended
                    self._terminate(pid)
