"""Multi-turn metrics: Episode Pass@1 and Turn Suite Pass@1 over the turns of conversations.

A multi-turn task row carries `conversation_id`, `turn_index` and `turn_count` (one row per turn, as
PLSQLBench's Spider2-MT). A turn passes when its candidate passes every case of the turn's own suite.
- Turn Suite Pass@1: the mean, over turns, of the share of the turn's candidates that pass;
- Episode Pass@1: the mean, over conversations, of the product of their turns' shares (every turn must
  pass: 1 or 0 with one candidate per turn). A conversation with a turn nobody submitted counts as failed.
"""

from __future__ import annotations

from collections import defaultdict
from math import prod


def episodes_of(tasks: dict[tuple[str, str], dict]) -> dict[str, tuple[str, int]]:
    """task_id -> (conversation_id, turn_count) of every multi-turn task row of a release."""
    return {
        row["task_id"]: (row["conversation_id"], row["turn_count"])
        for row in tasks.values()
        if row.get("conversation_id")
    }


def episode_metrics(turn_shares: dict[str, float], episodes: dict[str, tuple[str, int]]) -> dict:
    """The two metrics from each graded turn's pass share (task_id -> share of its candidates passing)."""
    by_conversation: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, int] = {}
    for task_id, share in turn_shares.items():
        conversation, count = episodes[task_id]
        by_conversation[conversation].append(share)
        counts[conversation] = count
    if not by_conversation:
        return {}
    passes = [prod(s) if len(s) == counts[c] else 0.0 for c, s in by_conversation.items()]
    return {
        "episodes": len(passes),
        "episode_pass@1": round(sum(passes) / len(passes), 4),
        "turn_suite_pass@1": round(sum(turn_shares.values()) / len(turn_shares), 4),
    }
