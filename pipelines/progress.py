"""What `plbench build` / `validate` print while a run goes and when it ends, instead of Dagster's log.

- One line per stage: it starts (on a terminal the line is then rewritten in place, with a
  progress bar of the databases done so far for a partitioned stage, or of the units a stage reports done
  itself: `stage_progress`, plbench.progress) and it ends, with the stage's figures from its
  metadata (count in, count out, rejections by reason) and the elapsed time.
- On success, where the release is and what it holds; on failure, a last line naming the failing
  stage, the project's own message (not Dagster's wrapper, not the innermost library error) and a
  hint when one is known (`HINTS`).

`progress_logger` is a Dagster logger: the CLI selects it in the run config, so a CLI run prints
these lines only; the UI's runs keep Dagster's own console logger.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import sys
import time
from collections.abc import Iterator
from typing import TextIO

import dagster as dg

from pipelines.stages import is_shard_step, step_stage
from plbench.progress import reporting

# (texts any of which, found in the error chain, call for the hint; the hint). First match wins.
HINTS = (
    (
        ("URLError", "Name or service not known", "Temporary failure in name resolution", "Network is unreachable"),
        "offline? set PLBENCH_RAW_DIR to a local mirror of the raw sources",
    ),
    (
        ("Address already in use", "could not bind"),
        "a port is in use: stop the other server, or pick another port (`plbench dev --port P`)",
    ),
    (
        ("No space left on device", "Disk quota exceeded"),
        "the disk is full: free space under .cache/ (PostgreSQL data, downloads, stored stage values)",
    ),
)
REJECTION_KEYS = ("rejected", "rejected_tasks")  # metadata holding a count or {reason: count}
TOP_REASONS = 3


def hint_for(texts: list[str]) -> str | None:
    joined = "\n".join(texts)
    return next((hint for needles, hint in HINTS if any(n in joined for n in needles)), None)


def error_chain(error) -> list:
    """A step failure's error and its causes, outermost first (Dagster's SerializableErrorInfo)."""
    chain = []
    while error is not None:
        chain.append(error)
        error = error.cause or error.context
    return chain


def _without_class(error) -> str:
    """The error's message without the `package.module.ClassName: ` Dagster puts before it."""
    head, sep, rest = error.message.partition(": ")
    return rest if sep and head.split(".")[-1] == error.cls_name else error.message


def project_message(error) -> tuple[str, str | None]:
    """The first message in the chain that is not Dagster's wrapper, and the hint for the whole chain."""
    chain = error_chain(error)
    own = next((e for e in chain if not e.cls_name.startswith("Dagster")), chain[-1])
    texts = [f"{e.cls_name}: {e.message}" for e in chain]
    return " ".join(_without_class(own).split()), hint_for(texts)


def _rejections(value) -> str:
    if isinstance(value, dict):
        total = sum(value.values())
        top = sorted(value.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_REASONS]
        reasons = ", ".join(f"{k} {v}" for k, v in top) + (", …" if len(value) > TOP_REASONS else "")
        return f"{total} rejected ({reasons})" if total else ""
    return f"{value} rejected" if value else ""


def figures(metadata: dict) -> str:
    """A stage's figures for its end line, from its materialization metadata (plain values)."""
    parts = []
    if metadata.get("ran") is False and metadata.get("reason"):
        parts.append(f"not run: {metadata['reason']}")
    if "count_in" in metadata:
        parts.append(f"{metadata['count_in']} in")
    if "count_out" in metadata:
        parts.append(f"{metadata['count_out']} out")
    for key in REJECTION_KEYS:
        text = _rejections(metadata.get(key))
        if text:
            parts.append(text)
    return ", ".join(parts)


BAR_WIDTH = 24
# A stage's own progress (plbench.progress), as an asset logs it: "progress 12/160 databases".
PROGRESS = re.compile(r"progress (\d+)/(\d+) (\w+)")
PROGRESS_EVERY_S = 1.0  # at most one progress message a second (and the last), to keep the run's log small


@contextlib.contextmanager
def stage_progress(context: dg.AssetExecutionContext) -> Iterator[None]:
    """Log the units the asset's stages report done, for the stage line's progress bar (`Progress`)."""
    last = [float("-inf")]

    def report(done: int, total: int, unit: str) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            context.log.info(f"progress {done}/{total} {unit}")

    with reporting(report):
        yield


def progress_bar(done: int, total: int, unit: str) -> str:
    """`[#########---------------] 120/325 databases`; without a known total, the count alone."""
    if not total:
        return f"{done} {unit}"
    filled = min(BAR_WIDTH, BAR_WIDTH * done // total)
    return f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {done}/{total} {unit}"


class Progress:
    """Turns a run's events into stage lines on `stream`: one per asset, whose steps (a task-sharded asset has
    several: assets/sharded.py) count as one stage, ended by the step that materializes it."""

    def __init__(self, stream: TextIO, tty: bool, partitions: int = 0):
        self.stream, self.tty, self.partitions = stream, tty, partitions
        self.pending: dict[str, str] = {}  # stage -> what its pending line shows (steps run side by side)
        self.step_started: dict[str, float] = {}
        self.busy: dict[str, float] = {}  # stage -> seconds its finished steps took
        self.metadata: dict[str, dict] = {}
        self.done_partitions: dict[str, int] = {}
        self.shards: dict[str, tuple[int, int]] = {}  # stage -> (shards done, shards)
        self.materialized: set[str] = set()  # steps
        self.checks: dict[str, list[str]] = {}

    def on_event(self, event) -> None:
        kind, step = event.event_type_value, event.step_key
        stage = step_stage(step)
        now = time.monotonic()
        if kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            self.busy[stage] = self.busy.get(stage, 0.0) + now - self.step_started.pop(step, now)
        if kind == "STEP_START":
            self.step_started[step] = now
            if stage not in self.pending:
                self._pending(stage, "…")
        elif kind == "ASSET_MATERIALIZATION":
            materialization = event.event_specific_data.materialization
            self.materialized.add(step)
            self.metadata[stage] = {k: v.value for k, v in materialization.metadata.items()}
            if materialization.partition:
                self.done_partitions[stage] = self.done_partitions.get(stage, 0) + 1
                self._pending(stage, progress_bar(self.done_partitions[stage], self.partitions, "databases"))
        elif kind == "ASSET_CHECK_EVALUATION":
            check = event.event_specific_data
            self.checks.setdefault(stage, []).append(f"{check.check_name} {'passed' if check.passed else 'FAILED'}")
        elif kind == "STEP_SUCCESS" and is_shard_step(step) and stage in self.pending:
            done, total = self.shards.get(stage, (0, 0))
            self.shards[stage] = (done + 1, total)
            self._pending(stage, progress_bar(done + 1, total, "shards"))
        elif kind == "STEP_SUCCESS" and (step == stage or step in self.materialized):
            self._end(stage, "✓", self._summary(stage))
        elif kind == "STEP_FAILURE":
            message, _ = project_message(event.event_specific_data.error)
            self._end(stage, "✗", f"failed: {message}"[:300])

    def on_message(self, step: str, message: str) -> None:
        """A stage's own progress, while no partitions count it: the shards a sharded stage splits into, and
        the units of its one shard's step when there is only one."""
        found, stage = PROGRESS.fullmatch(message), step_stage(step)
        if not found or stage not in self.pending or stage in self.done_partitions:
            return
        done, total, unit = int(found[1]), int(found[2]), found[3]
        if unit == "shards":
            self.shards[stage] = (done, total)
        elif is_shard_step(step) and self.shards.get(stage, (0, 1))[1] != 1:
            return  # several shards at once: their bar counts shards
        self._pending(stage, progress_bar(done, total, unit))

    def _summary(self, stage: str) -> str:
        parts = [f"{self.done_partitions[stage]} databases"] if stage in self.done_partitions else []
        parts += [f"{self.shards[stage][1]} shards"] if self.shards.get(stage, (0, 1))[1] > 1 else []
        parts += [figures(self.metadata.get(stage, {}))] + self.checks.get(stage, [])
        return ", ".join(p for p in parts if p)

    def _pending(self, stage: str, what: str) -> None:
        self.pending[stage] = what
        if self.tty:
            self._redraw()
        elif what == "…":
            self._line(f"  {stage} started")

    def _redraw(self) -> None:
        """The running stages on one line, rewritten in place: cut to the terminal's width, as a wrapped line
        could not be rewritten."""
        text = "  " + " · ".join(f"{stage} {what}" for stage, what in self.pending.items())
        self.stream.write("\r\033[K" + text[: shutil.get_terminal_size().columns - 1])
        self.stream.flush()

    def _end(self, stage: str, mark: str, text: str) -> None:
        """The stage's line, with the seconds its steps took (in one process, two sharded stages' steps
        interleave: the time since its first step began would count the other's)."""
        self.pending.pop(stage, None)
        elapsed = self.busy.pop(stage, 0.0)
        self._line(f"{mark} {stage}: {text + ', ' if text else ''}{elapsed:.1f} s", rewrite=self.tty)
        if self.tty and self.pending:
            self._redraw()

    def _line(self, text: str, rewrite: bool = False) -> None:
        self.stream.write(("\r\033[K" if rewrite else "") + text + "\n")
        self.stream.flush()


class _EventHandler(logging.Handler):
    def __init__(self, progress: Progress):
        super().__init__()
        self.progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event")
        if event is not None and event.step_key:
            self.progress.on_event(event)
        elif event is None and meta.get("step_key"):
            self.progress.on_message(meta["step_key"], meta.get("orig_message") or "")


@dg.logger(
    config_schema={
        "partitions": dg.Field(int, default_value=0, description="database partitions in the run"),
        "quiet": dg.Field(bool, default_value=False, description="print nothing (`--quiet`, `--json`)"),
    },
    description="plbench's stage lines on stderr (selected by the CLI)",
)
def progress_logger(init_context) -> logging.Logger:
    logger = logging.Logger("plbench.progress", level=logging.DEBUG)
    if init_context.logger_config["quiet"]:
        logger.addHandler(logging.NullHandler())
    else:
        progress = Progress(sys.stderr, sys.stderr.isatty(), init_context.logger_config["partitions"])
        logger.addHandler(_EventHandler(progress))
    return logger
