"""plbench.child_process: a stage's Python work in a spawned child, with the loggers as this process set them."""

import logging
import multiprocessing
import os

import pytest

from plbench.child_process import in_child_process

QUIETED = "plbench-test-quieted"


def _where_and_level(name: str) -> tuple[int, int]:
    return os.getpid(), logging.getLogger(name).getEffectiveLevel()


def _fails(message: str) -> None:
    raise ValueError(message)


def _child_runs_here(answers) -> None:
    answers.put(in_child_process(os.getpid) == os.getpid())


def test_the_work_runs_in_another_process_with_this_ones_logger_levels():
    logging.getLogger(QUIETED).setLevel(logging.ERROR)
    pid, level = in_child_process(_where_and_level, QUIETED)
    assert pid != os.getpid()
    assert level == logging.ERROR  # a spawned child's loggers start at WARNING


def test_the_works_error_comes_back_as_itself():
    with pytest.raises(ValueError, match="no such database"):
        in_child_process(_fails, "no such database")


def test_a_daemon_which_may_start_no_process_does_the_work_itself():
    spawn = multiprocessing.get_context("spawn")
    answers = spawn.Queue()
    daemon = spawn.Process(target=_child_runs_here, args=(answers,), daemon=True)
    daemon.start()
    assert answers.get(timeout=60) is True
    daemon.join(timeout=60)
