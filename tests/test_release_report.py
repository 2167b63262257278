"""The release report's figures, from rows whose counts are known, and its PNGs."""

from collections import Counter

from plbench.release_report import (
    PNG_SIGNATURE,
    construct_counts,
    funnel,
    rejection_reasons,
    report_plots,
    type_counts,
)

SUBSETS = {"mbpp": {"input": 10, "released": {"oracle": 6, "postgres": 7}}}
REJECTIONS = [
    {"subset": "mbpp", "stage": "test_extraction", "level": "task", "dialect": None, "reason_code": "non_literal"},
    {"subset": "mbpp", "stage": "ingest", "level": "task", "dialect": None, "reason_code": "malformed_record"},
    {"subset": "mbpp", "stage": "test_extraction", "level": "case", "dialect": None, "reason_code": "non_literal"},
    {"subset": "mbpp", "stage": "task_emission", "level": "task", "dialect": "oracle", "reason_code": "unsupported"},
    {"subset": "mbpp", "stage": "replay_validation", "level": "task", "dialect": "postgres", "reason_code": "fails"},
    {"subset": "mbpp", "stage": "replay_validation", "level": "task", "dialect": "oracle", "reason_code": "fails"},
]
TASKS = [
    {
        "dialect": "postgres",
        "signature": '{"params": [{"python_type": "list[int]"}, {"python_type": "int"}], '
        '"returns": {"python_type": "int"}}',
        "plsql_constructs": ["FOR loop", "IF"],
    },
    {"dialect": "oracle", "signature": '{"params": [], "returns": {"python_type": "str"}}', "plsql_constructs": ["IF"]},
    {"dialect": "postgres", "signature": None, "plsql_constructs": []},
]


def test_the_funnel_takes_each_stages_task_rejections_in_pipeline_order_and_ends_at_the_released_count():
    assert funnel(SUBSETS, REJECTIONS) == {
        "mbpp": {
            "oracle": [
                ("input", 10),
                ("ingest", 9),
                ("test_extraction", 8),
                ("task_emission", 7),
                ("replay_validation", 6),
                ("released", 6),
            ],
            "postgres": [
                ("input", 10),
                ("ingest", 9),
                ("test_extraction", 8),
                ("task_emission", 8),
                ("replay_validation", 7),
                ("released", 7),
            ],
        }
    }


def test_rejections_types_and_constructs_are_counted_from_the_rows():
    assert rejection_reasons(REJECTIONS) == {
        "non_literal": Counter(mbpp=1),
        "malformed_record": Counter(mbpp=1),
        "unsupported": Counter(mbpp=1),
        "fails": Counter(mbpp=2),
    }
    assert type_counts(TASKS) == Counter({"int": 2, "list": 1})  # postgres rows only: once per task
    assert construct_counts(TASKS) == {"postgres": Counter({"FOR loop": 1, "IF": 1}), "oracle": Counter({"IF": 1})}


def test_every_plot_is_a_png_even_with_nothing_to_show():
    for plots in (
        report_plots(TASKS, REJECTIONS, {"subsets": SUBSETS}, {"mbpp_raw": 1.5, "release": 0.2}),
        report_plots([], [], {"subsets": {}}, {}),
    ):
        assert sorted(plots) == [f"report/{n}.png" for n in ("constructs", "funnel", "rejections", "timings", "types")]
        assert all(data.startswith(PNG_SIGNATURE) and len(data) > 1000 for data in plots.values())
