"""Tests for plbench.raw_sources: catalog, verified resolve (mirror and download), MBPP/MBPP+ readers.

Every fixture is written into tmp_path; only the last test reads the real mirror,
and only when PLBENCH_RAW_DIR points at it.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import json
import os
import threading
from pathlib import Path

import pytest

from plbench.raw_sources import (
    CATALOG,
    RawSourceError,
    SourceFile,
    read_mbpp,
    read_mbpp_plus,
    resolve,
    sha256_file,
)
from plbench.raw_sources.mbpp import prompt_text, split_assertion

# ---------------------------------------------------------------- fixtures: MBPP


def _mbpp(task_id, **changes):
    record = {
        "text": f"Write a function number {task_id}.",
        "code": f"def f{task_id}(x):\n    return x",
        "task_id": task_id,
        "test_setup_code": "",
        "test_list": [f"assert f{task_id}(1) == 1"],
        "challenge_test_list": [],
    }
    record.update(changes)
    return record


def _line(record) -> bytes:
    return json.dumps(record).encode("utf-8") + b"\n"


def _write_mbpp(path: Path) -> Path:
    missing_code = _mbpp(6)
    del missing_code["code"]
    lines = [
        _line(_mbpp(1)),  # 1
        _line(_mbpp(2)),  # 2
        b"\n",  # 3: blank, not a record
        b'{"text": "broken", "task_id": 4,\n',  # 4: invalid JSON
        _line(_mbpp(5, text="caf\u00e9")).replace(b"\\u00e9", b"\xe9"),  # 5: Latin-1 byte
        _line(missing_code),  # 6
        _line(_mbpp(1, text="a second task 1")),  # 7: duplicate
        _line(_mbpp(3)),  # 8
    ]
    path.write_bytes(b"".join(lines))
    return path


def _by_id(rejections):
    return {r.source_id: r for r in rejections}


def test_read_mbpp_counts_and_rejections(tmp_path):
    problems, rejections = read_mbpp(_write_mbpp(tmp_path / "mbpp.jsonl"), "mbpp/mbpp.jsonl", None)

    assert [p.source_id for p in problems] == ["1", "2", "3"]
    assert [p.line for p in problems] == [1, 2, 8]
    first = problems[0]
    assert first.subset == "mbpp" and first.source_file == "mbpp/mbpp.jsonl"
    assert first.text == "Write a function number 1." and first.entry_point is None
    assert first.reference_code.startswith("def f1") and first.test_list == ["assert f1(1) == 1"]
    assert first.extra == {}

    assert len(rejections) == 4
    rejected = _by_id(rejections)
    assert {k: r.reason_code for k, r in rejected.items()} == {
        "4": "malformed_record",  # id recovered from the broken line
        "5": "malformed_record",
        "6": "malformed_record",
        "1": "duplicate_id",
    }
    assert all(r.subset == "mbpp" and r.stage == "ingest" and r.level == "task" for r in rejections)
    assert rejected["4"].detail.startswith("mbpp/mbpp.jsonl line 4: invalid JSON")
    assert rejected["5"].detail.startswith("mbpp/mbpp.jsonl line 5: invalid UTF-8")
    assert "line 6" in rejected["6"].detail and "'code'" in rejected["6"].detail
    assert "line 7" in rejected["1"].detail and "line 1" in rejected["1"].detail


def test_read_mbpp_unrecoverable_id_and_wrong_types(tmp_path):
    lines = [
        b"[1, 2, 3]\n",
        b"not json at all\n",
        _line(_mbpp("7")),  # task_id must be an int
        _line(_mbpp(8, test_list="assert x")),
        _line(_mbpp(9, challenge_test_list=None)),
        _line(_mbpp(True)),
    ]
    path = tmp_path / "mbpp.jsonl"
    path.write_bytes(b"".join(lines))

    problems, rejections = read_mbpp(path, "mbpp/mbpp.jsonl", None)

    assert problems == []
    assert [r.source_id for r in rejections] == ["line:1", "line:2", "7", "8", "9", "line:6"]
    assert {r.reason_code for r in rejections} == {"malformed_record"}
    assert "expected a JSON object, got list" in rejections[0].detail
    assert "'task_id' must be an integer" in rejections[2].detail
    assert "'test_list' must be a list of strings" in rejections[3].detail


def test_read_mbpp_marks_sanitized(tmp_path):
    sanitized = tmp_path / "sanitized-mbpp.json"
    sanitized.write_text(json.dumps([{"task_id": 2, "prompt": "Clean prompt 2.", "code": "", "test_list": []}]))

    problems, rejections = read_mbpp(_write_mbpp(tmp_path / "mbpp.jsonl"), "mbpp/mbpp.jsonl", sanitized)

    extras = {p.source_id: p.extra for p in problems}
    assert extras == {
        "1": {"in_sanitized": False},
        "2": {"in_sanitized": True, "sanitized_prompt": "Clean prompt 2."},
        "3": {"in_sanitized": False},
    }
    assert len(rejections) == 4


def test_broken_sanitized_file_is_a_hard_error(tmp_path):
    sanitized = tmp_path / "sanitized-mbpp.json"
    sanitized.write_text('{"task_id": 2}')
    with pytest.raises(RawSourceError, match="expected a JSON array"):
        read_mbpp(_write_mbpp(tmp_path / "mbpp.jsonl"), "mbpp/mbpp.jsonl", sanitized)


# ---------------------------------------------------------------- fixtures: MBPP+


def _plus(n, **changes):
    record = {
        "task_id": f"Mbpp/{n}",
        "prompt": f'"""\nWrite a function {n}.\nassert f{n}(1) == 1\n"""\n',
        "entry_point": f"f{n}",
        "canonical_solution": f"\ndef f{n}(x):\n    return x\n",
        "base_input": [[1], [2]],
        "atol": 0,
        "plus_input": [[3]],
        "contract": '\n    assert isinstance(x, int), "invalid inputs" # $_CONTRACT_$\n',
        "assertion": f"\nassert f{n}(1) == 1\nassert f{n}(2) == 2\n",
    }
    record.update(changes)
    return record


def _write_plus(path: Path) -> Path:
    missing_entry = _plus(6)
    del missing_entry["entry_point"]
    lines = [
        _line(_plus(2)),  # 1
        _line(_plus(3, atol=1e-6, assertion="import math\nassert math.isclose(f3(1), 1)\n")),  # 2
        b'{"task_id": "Mbpp/4", "prompt": \n',  # 3: invalid JSON
        _line(_plus(5, prompt='"""\nCaf\u00e9\n"""')).replace(b"\\u00e9", b"\xe9"),  # 4
        _line(missing_entry),  # 5
        _line(_plus(7, base_input=[1, 2, 3])),  # 6: cases are not argument lists
        _line(_plus(2)),  # 7: duplicate
        b"   \n",  # 8: blank
        _line(_plus(8, plus_input={})),  # 9: upstream's spelling of "no cases"
    ]
    path.write_bytes(b"".join(lines))
    return path


def test_read_mbpp_plus_counts_and_rejections(tmp_path):
    path = _write_plus(tmp_path / "plus.jsonl")
    problems, rejections = read_mbpp_plus(path, "mbpp_plus/MbppPlus-v0.1.0.jsonl")

    assert [(p.source_id, p.line) for p in problems] == [("Mbpp/2", 1), ("Mbpp/3", 2), ("Mbpp/8", 9)]
    first, second, third = problems
    assert first.subset == "mbpp_plus" and first.entry_point == "f2"
    assert first.text == "Write a function 2."
    assert first.test_list == ["assert f2(1) == 1", "assert f2(2) == 2"]
    assert first.base_input == [[1], [2]] and first.plus_input == [[3]]
    assert first.atol == 0.0 and isinstance(first.atol, float)
    assert first.extra["prompt"].startswith('"""') and "CONTRACT" in first.extra["contract"]
    assert second.atol == 1e-6 and second.test_setup_code == "import math"
    assert second.test_list == ["assert math.isclose(f3(1), 1)"]
    assert third.plus_input == [] and third.extra["quirks"]

    rejected = _by_id(rejections)
    assert len(rejections) == 5
    assert {k: r.reason_code for k, r in rejected.items()} == {
        "Mbpp/4": "malformed_record",
        "Mbpp/5": "malformed_record",
        "Mbpp/6": "malformed_record",
        "Mbpp/7": "malformed_record",
        "Mbpp/2": "duplicate_id",
    }
    assert "line 3: invalid JSON" in rejected["Mbpp/4"].detail
    assert "line 4: invalid UTF-8" in rejected["Mbpp/5"].detail
    assert "line 5" in rejected["Mbpp/6"].detail and "'entry_point'" in rejected["Mbpp/6"].detail
    assert "line 6" in rejected["Mbpp/7"].detail and "'base_input'" in rejected["Mbpp/7"].detail
    assert "line 7" in rejected["Mbpp/2"].detail


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"task_id": "HumanEval/1"}, "Mbpp/N"),
        ({"atol": "0"}, "'atol' must be a number"),
        ({"plus_input": [[1], "x"]}, "case 1"),
        ({"prompt": '"""\nassert f(1) == 1\n"""'}, "no task description"),
    ],
)
def test_read_mbpp_plus_field_checks(tmp_path, changes, message):
    path = tmp_path / "plus.jsonl"
    path.write_bytes(_line(_plus(9, **changes)))
    problems, rejections = read_mbpp_plus(path, "plus.jsonl")
    assert problems == [] and len(rejections) == 1
    assert rejections[0].reason_code == "malformed_record" and message in rejections[0].detail


def test_prompt_text_and_split_assertion():
    assert prompt_text("'''\nFirst line.\nSecond line.\n  assert f() == 1\n'''") == "First line.\nSecond line."
    assert split_assertion("\nimport math\n\nassert a\n  assert b\n") == (
        ["assert a", "assert b"],
        "import math",
    )


# ---------------------------------------------------------------- catalog


def test_catalog_is_consistent():
    folders = {
        "mbpp": "mbpp/",
        "mbpp_plus": "mbpp_plus/",
        "spider1": "spider/",
        "spider2_lite": "spider2/spider2-lite/",
    }
    assert set(CATALOG) == set(folders)
    assert len(CATALOG["spider1"]) == 168 and len(CATALOG["spider2_lite"]) == 792  # the mirror's manifest
    for dataset, sources in CATALOG.items():
        for source in sources:
            assert source.dataset == dataset
            assert source.relative_path.startswith(folders[dataset])
            assert source.url.startswith("https://")
            assert (source.compression == "gzip") == source.url.endswith(".gz")
    with pytest.raises(ValueError):
        SourceFile("x", "x/y", "https://h/y", "0" * 64, "MIT", compression="zip")


# ---------------------------------------------------------------- resolve from a mirror


def _source(relative_path: str, data: bytes, url: str = "http://127.0.0.1:9/none", **kw) -> SourceFile:
    sha = kw.pop("sha256", hashlib.sha256(data).hexdigest())
    return SourceFile("test", relative_path, url, sha, "MIT", **kw)


def test_mirror_hit_returns_the_mirror_file(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "test").mkdir(parents=True)
    (mirror / "test" / "a.jsonl").write_bytes(b"abc\n")
    before = sorted(mirror.rglob("*"))

    path = resolve(_source("test/a.jsonl", b"abc\n"), mirror, tmp_path / "cache")

    assert path == mirror / "test" / "a.jsonl" and sha256_file(path) == hashlib.sha256(b"abc\n").hexdigest()
    assert sorted(mirror.rglob("*")) == before
    assert not (tmp_path / "cache").exists()


def test_mirror_checksum_mismatch(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "test").mkdir(parents=True)
    (mirror / "test" / "a.jsonl").write_bytes(b"tampered\n")
    source = _source("test/a.jsonl", b"abc\n")

    with pytest.raises(RawSourceError) as info:
        resolve(source, mirror, tmp_path / "cache")

    message = str(info.value)
    assert "test/a.jsonl" in message and source.sha256 in message
    assert hashlib.sha256(b"tampered\n").hexdigest() in message


def test_mirror_missing_file(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with pytest.raises(RawSourceError, match="test/a.jsonl.*not found in the raw mirror"):
        resolve(_source("test/a.jsonl", b"abc\n"), mirror, tmp_path / "cache")


# ---------------------------------------------------------------- resolve by download

PAYLOAD = b'{"task_id": 1}\n{"task_id": 2}\n'


@pytest.fixture
def server(tmp_path):
    """A local HTTP server over tmp_path/served; yields (base URL, list of requested paths)."""
    served = tmp_path / "served"
    served.mkdir()
    (served / "data.jsonl").write_bytes(PAYLOAD)
    (served / "data.jsonl.gz").write_bytes(gzip.compress(PAYLOAD))
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

        def log_message(self, *args):  # keep pytest output clean
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=served))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", requests
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_download_verifies_and_reuses_cache(tmp_path, server):
    base, requests = server
    cache = tmp_path / "cache"
    source = _source("test/data.jsonl", PAYLOAD, url=f"{base}/data.jsonl")

    path = resolve(source, None, cache)
    assert path == cache / "test" / "data.jsonl" and path.read_bytes() == PAYLOAD
    assert requests == ["/data.jsonl"]

    assert resolve(source, None, cache) == path
    assert requests == ["/data.jsonl"]  # served from the cache, no second request
    assert [p.name for p in path.parent.iterdir()] == ["data.jsonl"]  # no temp file left


def test_download_gzip_is_decompressed(tmp_path, server):
    base, requests = server
    source = _source("test/data.jsonl", PAYLOAD, url=f"{base}/data.jsonl.gz", compression="gzip")
    path = resolve(source, None, tmp_path / "cache")
    assert path.read_bytes() == PAYLOAD and requests == ["/data.jsonl.gz"]


def test_download_replaces_a_corrupt_cached_file(tmp_path, server):
    base, requests = server
    cache = tmp_path / "cache"
    (cache / "test").mkdir(parents=True)
    (cache / "test" / "data.jsonl").write_bytes(b"truncated")
    source = _source("test/data.jsonl", PAYLOAD, url=f"{base}/data.jsonl")

    assert resolve(source, None, cache).read_bytes() == PAYLOAD
    assert requests == ["/data.jsonl"]


def test_download_checksum_mismatch_leaves_no_file(tmp_path, server):
    base, _ = server
    cache = tmp_path / "cache"
    source = _source("test/data.jsonl", PAYLOAD, url=f"{base}/data.jsonl", sha256="0" * 64)

    (cache / "test").mkdir(parents=True)
    (cache / "test" / "data.jsonl").write_bytes(b"stale")  # a bad cached copy must go too

    with pytest.raises(RawSourceError) as info:
        resolve(source, None, cache)

    message = str(info.value)
    assert "0" * 64 in message and hashlib.sha256(PAYLOAD).hexdigest() in message
    assert not (cache / "test" / "data.jsonl").exists()
    assert list((cache / "test").iterdir()) == []


def test_download_failure_names_the_url(tmp_path, server):
    base, _ = server
    url = f"{base}/missing.jsonl"
    with pytest.raises(RawSourceError, match="downloading .*missing.jsonl failed"):
        resolve(_source("test/missing.jsonl", b"", url=url), None, tmp_path / "cache")
    assert list((tmp_path / "cache" / "test").iterdir()) == []


def test_download_bad_gzip_is_an_error(tmp_path, server):
    base, _ = server
    source = _source("test/data.jsonl", PAYLOAD, url=f"{base}/data.jsonl", compression="gzip")
    with pytest.raises(RawSourceError, match="failed"):
        resolve(source, None, tmp_path / "cache")


# ---------------------------------------------------------------- the real mirror (opt-in)


@pytest.mark.skipif(not os.environ.get("PLBENCH_RAW_DIR"), reason="PLBENCH_RAW_DIR is not set")
def test_real_mirror_resolves_and_reads(tmp_path):
    raw_dir = Path(os.environ["PLBENCH_RAW_DIR"])
    paths = {s.relative_path: resolve(s, raw_dir, tmp_path) for sources in CATALOG.values() for s in sources}

    problems, rejections = read_mbpp(paths["mbpp/mbpp.jsonl"], "mbpp/mbpp.jsonl", paths["mbpp/sanitized-mbpp.json"])
    assert (len(problems), len(rejections)) == (974, 0)
    assert sum(p.extra["in_sanitized"] for p in problems) == 427

    rel = "mbpp_plus/MbppPlus-v0.1.0.jsonl"
    problems, rejections = read_mbpp_plus(paths[rel], rel)
    assert (len(problems), len(rejections)) == (399, 0)
    assert all(p.entry_point and p.test_list and p.base_input for p in problems)
