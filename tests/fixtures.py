"""A miniature raw mirror the tests write themselves: MBPP and MBPP+ problems covering every rule.

`write_mirror(root)` writes the files in the mirror's layout and returns a source catalog
whose checksums match them, so the real ingestion code (checksums included) reads them.
"""

import csv
import hashlib
import io
import json
import tarfile
from pathlib import Path

from plbench.raw_sources import SourceFile

MBPP = [
    # plain ints and lists
    {
        "task_id": 1,
        "text": "Sort a list.",
        "code": "def sort_list(xs):\n    return sorted(xs)",
        "test_list": [
            "assert sort_list([3, 1, 2]) == [1, 2, 3]",
            "assert sort_list([]) == []",
            "assert sort_list([5, 5, 1]) == [1, 5, 5]",
        ],
    },
    # a record result and a reserved parameter name
    {
        "task_id": 2,
        "text": "Min and its name.",
        "code": "def pick(order):\n    return (min(order), 'min')",
        "test_list": ["assert pick([3, 1]) == (1, 'min')", "assert pick([7]) == (7, 'min')"],
    },
    # a dict result, order-free
    {
        "task_id": 3,
        "text": "Count letters.",
        "code": "def count(s):\n    d = {}\n    for c in s:\n        d[c] = d.get(c, 0) + 1\n    return d",
        "test_list": ["assert count('aab') == {'a': 2, 'b': 1}", "assert count('') == {}"],
    },
    # set comparison
    {
        "task_id": 4,
        "text": "Shared elements.",
        "code": "def shared(a, b):\n    return tuple(set(a) & set(b))",
        "test_list": [
            "assert set(shared((3, 4, 5), (5, 4, 9))) == set((4, 5))",
            "assert set(shared((1, 2), (3,))) == set(())",
        ],
    },
    # floats with isclose, and a bare assert
    {
        "task_id": 5,
        "text": "Circle area.",
        "code": "import math\ndef area(r):\n    return math.pi * r * r",
        "test_list": ["assert math.isclose(area(2), 12.566, rel_tol=0.001)", "assert area(1) == 3.141592653589793"],
    },
    {
        "task_id": 6,
        "text": "Is even.",
        "code": "def is_even(n):\n    return n % 2 == 0",
        "test_list": ["assert is_even(2)", "assert not is_even(3)"],
    },
    # mixed shapes become JSON
    {
        "task_id": 7,
        "text": "Flatten and sum.",
        "code": "def deep_sum(xs):\n    return sum(deep_sum(x) if isinstance(x, list) else x for x in xs)",
        "test_list": ["assert deep_sum([1, [2, 3], 4]) == 10", "assert deep_sum([[1]]) == 1"],
    },
    # rejections: a non-literal argument, setup code, a set where a dict is expected
    {
        "task_id": 8,
        "text": "Tree height.",
        "code": "def height(t):\n    return 0",
        "test_list": ["assert height(root) == 3"],
    },
    {
        "task_id": 9,
        "text": "Uses setup.",
        "code": "def f(x):\n    return x",
        "test_setup_code": "x = 1",
        "test_list": ["assert f(1) == 1"],
    },
    {
        "task_id": 10,
        "text": "Inconsistent.",
        "code": "def g(x):\n    return x",
        "test_list": ["assert g({1}) == 1", "assert g(2) == 2"],
    },
    # a NUL character neither dialect's strings hold; an int beyond Oracle NUMBER's 38 digits
    {
        "task_id": 11,
        "text": "Echo.",
        "code": "def echo(s):\n    return s",
        "test_list": ["assert echo('a\\x00b') == 'a\\x00b'", "assert echo('\\x00') == '\\x00'"],
    },
    {
        "task_id": 12,
        "text": "Big power of ten.",
        "code": "def big(n):\n    return 10 ** n",
        "test_list": ["assert big(40) == 10000000000000000000000000000000000000000", "assert big(2) == 100"],
    },
    # every case expects 1: a constant candidate passes until generated inputs are added
    {
        "task_id": 13,
        "text": "Is positive, as 1 or 0.",
        "code": "def positive(n):\n    return 1 if n > 0 else 0",
        "test_list": ["assert positive(3) == 1", "assert positive(5) == 1"],
    },
]

MBPP_PLUS = [
    {
        "task_id": "Mbpp/1",
        "entry_point": "sort_list",
        "prompt": '"""\nSort a list.\nassert sort_list([2, 1]) == [1, 2]\n"""\n',
        "canonical_solution": "\ndef sort_list(xs):\n    xs.sort()\n    return xs\n",  # mutates its input
        "base_input": [[[2, 1]], [[3, 1, 2]]],
        "plus_input": [[[]], [[9, 8, 7, 6]], [[True, False]]],
        "atol": 0,
        "contract": "",
        "assertion": "\nassert sort_list([2, 1]) == [1, 2]\n",
    },
    {
        "task_id": "Mbpp/4",
        "entry_point": "shared",
        "prompt": '"""\nShared elements.\nassert set(shared((3, 4, 5), (5, 4, 9))) == set((4, 5))\n"""\n',
        "canonical_solution": "\ndef shared(a, b):\n    return tuple(set(a) & set(b))\n",
        "base_input": [[[3, 4, 5], [5, 4, 9]]],
        "plus_input": [[[1, 2], [2, 3]], [[], [1]]],
        "atol": 0,
        "contract": "",
        "assertion": "\nassert shared((3, 4, 5), (5, 4, 9)) == (4, 5)\n",
    },
    {
        "task_id": "Mbpp/12",
        "entry_point": "inverse",
        "prompt": '"""\nInverse.\nassert inverse(2) == 0.5\n"""\n',
        "canonical_solution": "\ndef inverse(x):\n    return 1 / x\n",
        "base_input": [[2], [4]],
        "plus_input": [[0], [8]],
        "atol": 1e-6,  # 1/0 raises: that case is dropped
        "contract": "",
        "assertion": "\nassert inverse(2) == 0.5\n",
    },
    {
        "task_id": "Mbpp/13",
        "entry_point": "spin",
        "prompt": '"""\nSpin.\nassert spin(1) == 1\n"""\n',
        "canonical_solution": "\ndef spin(x):\n    while True:\n        pass\n",  # never returns: rejected
        "base_input": [[1]],
        "plus_input": [],
        "atol": 0,
        "contract": "",
        "assertion": "\nassert spin(1) == 1\n",
    },
]

SANITIZED = [
    {"source_file": "x", "task_id": 1, "prompt": "Sort a list.", "code": "", "test_imports": [], "test_list": []}
]


def _jsonl(rows: list[dict]) -> str:
    mbpp_defaults = {"test_setup_code": "", "challenge_test_list": []}
    return "".join(json.dumps({**mbpp_defaults, **r} if isinstance(r["task_id"], int) else r) + "\n" for r in rows)


def write_mirror(root: Path, malformed_line: bool = True) -> dict:
    files = {
        "mbpp/mbpp.jsonl": _jsonl(MBPP) + ("{not json\n" if malformed_line else ""),
        "mbpp/sanitized-mbpp.json": json.dumps(SANITIZED),
        "mbpp_plus/MbppPlus-v0.1.0.jsonl": _jsonl(MBPP_PLUS),
    }
    catalog = {"mbpp": [], "mbpp_plus": []}
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        sha = hashlib.sha256(text.encode()).hexdigest()
        dataset = rel.split("/")[0]
        catalog[dataset].append(SourceFile(dataset, rel, f"http://127.0.0.1:9/{rel}", sha, "test"))
    return {k: tuple(v) for k, v in catalog.items()}


# ---- a miniature Spider 1.0 -------------------------------------------------------------------

SHOP_SQL = """
CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city VARCHAR(20), joined DATE, score REAL);
CREATE TABLE "order" (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(id),
                      amount NUMERIC(10,2), placed DATETIME, note TEXT);
INSERT INTO customer VALUES (1, 'Ann', 'Paris', '2020-01-05', 4.5), (2, 'Bob', NULL, '2021-03-01', 3.25),
                            (3, 'Cé''line', '', '2019-12-31', NULL), (4, 'Dan "the man"', 'Oslo', NULL, 0.1);
INSERT INTO "order" VALUES (10, 1, 12.5, '2022-01-01 10:00:00', 'first, with comma'),
                           (11, 1, 7, '2022-02-01 11:30:00', NULL), (12, 2, 100.25, '2022-03-01 09:00:00', 'tab	x'),
                           (13, 3, 0.5, NULL, '日本'), (14, 9, 1, '2022-05-05 00:00:00', 'dangling customer');
"""

SPIDER_DEV = [
    ("shop", "How many customers are there?", "SELECT count(*) FROM customer"),
    ("shop", "List customer names in alphabetical order.", "SELECT name FROM customer ORDER BY name"),
    ("shop", "What is the average score?", "SELECT avg(score) FROM customer"),
    (
        "shop",
        "Total amount per customer name.",
        'SELECT T1.name, sum(T2.amount) FROM customer AS T1 JOIN "order" AS T2 ON T1.id = T2.customer_id '
        "GROUP BY T1.id",
    ),
    ("shop", "Which customers joined before 2021?", "SELECT name, joined FROM customer WHERE joined < '2021-01-01'"),
    ("shop", "Cities of customers named like 'a'.", "SELECT city FROM customer WHERE name LIKE '%a%'"),
    ("shop", "Notes of orders.", 'SELECT note FROM "order" WHERE note IS NOT NULL'),
    ("shop", "A query SQLite cannot run.", "SELECT nonexistent FROM customer"),
    ("gone", "A question on a database that is not in the raw sources.", "SELECT 1"),
]


def write_spider1(root: Path) -> dict:
    """Spider 1.0's layout: tables.json naming two databases (one present), dev.json, gold files."""
    import sqlite3

    db = root / "spider/database/shop/shop.sqlite"
    db.parent.mkdir(parents=True, exist_ok=True)
    db.unlink(missing_ok=True)
    with sqlite3.connect(db) as conn:
        conn.executescript(SHOP_SQL)
    conn.close()
    files = {
        "spider/tables.json": json.dumps([{"db_id": "shop"}, {"db_id": "gone"}]),
        "spider/dev.json": json.dumps([{"db_id": d, "question": q, "query": s} for d, q, s in SPIDER_DEV]),
        "spider/dev_gold.sql": "".join(f"{s}\t{d}\n" for d, _, s in SPIDER_DEV),
        "spider/train_gold.sql": "SELECT name FROM customer WHERE score > 3\tshop\nSELECT 1\tgone\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    entries = []
    for rel in [*files, "spider/database/shop/shop.sqlite"]:
        sha = hashlib.sha256((root / rel).read_bytes()).hexdigest()
        entries.append(SourceFile("spider1", rel, f"http://127.0.0.1:9/{rel}", sha, "test"))
    return {"spider1": tuple(entries)}


# ---- a miniature Spider 2.0-Lite (see tests/test_spider2.py for what it covers) -----------------

LITE = Path("spider2") / "spider2-lite"


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def _write_json(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")


def _table_doc(name: str, fullname: str, columns: list[tuple[str, str]], rows: list[dict]) -> dict:
    return {
        "table_name": name,
        "table_fullname": fullname,
        "column_names": [c for c, _ in columns],
        "column_types": [t for _, t in columns],
        "description": [None] * len(columns),
        "sample_rows": rows,
    }


def _sqlite_description(root: Path) -> None:
    folder = root / LITE / "resource/databases/sqlite/SQLITE_SHOP"
    _write_csv(
        folder / "DDL.csv",
        ["table_name", "DDL"],
        [
            ["customers", "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, born DATE)"],
            [
                "orders",
                "CREATE TABLE orders (id INTEGER, customer_id INTEGER REFERENCES customers(id), "
                "amount REAL, FOREIGN KEY (customer_id) REFERENCES customers(id))",
            ],
        ],
    )
    _write_json(
        folder / "customers.json",
        _table_doc(
            "customers",
            "customers",
            [("id", "INTEGER"), ("name", "TEXT"), ("born", "DATE")],
            [{"id": 1, "name": "Ann O'Neil", "born": "1990-01-02"}, {"id": 2, "name": "Zoë", "born": None}],
        ),
    )
    _write_json(
        folder / "orders.json",
        _table_doc(
            "orders",
            "orders",
            [("id", "INTEGER"), ("customer_id", "INTEGER"), ("amount", "REAL")],
            [{"id": 10, "customer_id": 1, "amount": 2.5}, {"id": 11, "customer_id": 2, "amount": 4.0}],
        ),
    )


def _bigquery_files(base: Path) -> None:
    ds = base / "bigquery/shop_bq/bigquery-public-data.shop"
    _write_csv(
        ds / "DDL.csv",
        ["table_name", "ddl"],
        [
            [
                "events_20200101",
                "CREATE TABLE `bigquery-public-data.shop.events_20200101`\n(\n  event_id INT64 NOT NULL,\n"
                "  ts TIMESTAMP,\n  payload STRUCT<kind STRING, n INT64>,\n  tags ARRAY<STRING>,\n  price NUMERIC,\n"
                "  area GEOGRAPHY\n)\nPARTITION BY DATE(ts);",
            ]
        ],
    )
    cols = [
        ("event_id", "INT64"),
        ("ts", "TIMESTAMP"),
        ("payload", "STRUCT<kind STRING, n INT64>"),
        ("tags", "ARRAY<STRING>"),
        ("price", "NUMERIC"),
        ("area", "GEOGRAPHY"),
    ]
    _write_json(
        ds / "events_20200101.json",
        _table_doc(
            "events_20200101",
            "bigquery-public-data.shop.events_20200101",
            cols,
            [
                {
                    "event_id": 1,
                    "ts": "2020-01-01 10:00:00+00:00",
                    "payload": {"kind": "view", "n": 2},
                    "tags": "['a b' 'c']",
                    "price": "12.500000000",
                    "area": "POINT(1 2)",
                },
                {"event_id": 2, "ts": "NaT", "payload": None, "tags": "[]", "price": None, "area": None},
            ],
        ),
    )
    # A dataset without DDL.csv: built from its JSON alone.
    _write_json(
        base / "bigquery/shop_bq/bigquery-public-data.extra/stats.json",
        _table_doc(
            "stats",
            "bigquery-public-data.extra.stats",
            [("day", "DATE"), ("hits", "ARRAY<INT64>")],
            [{"day": "2020-01-01", "hits": "[758 897   4]"}],
        ),
    )


def _snowflake_files(base: Path) -> None:
    ds = base / "snowflake/SHOP_SF/PUBLIC"
    _write_csv(
        ds / "DDL.csv",
        ["table_name", "description", "DDL"],
        [
            [
                "SHOP_SF.PUBLIC.ITEMS",
                "items",
                "create or replace TABLE SHOP_SF.PUBLIC.ITEMS (\n\tITEM_ID NUMBER(38,0) NOT NULL,\n\tATTRS VARIANT,\n"
                "\tUPDATED TIMESTAMP_LTZ(9),\n\tLABEL VARCHAR(16777216),\n\tRAW BINARY\n);",
            ]
        ],
    )
    _write_json(
        ds / "ITEMS.json",
        _table_doc(
            "PUBLIC.ITEMS",
            "SHOP_SF.PUBLIC.ITEMS",
            [
                ("ITEM_ID", "NUMBER(38,0)"),
                ("ATTRS", "VARIANT"),
                ("UPDATED", "TIMESTAMP_LTZ"),
                ("LABEL", "TEXT"),
                ("RAW", "BINARY"),
            ],
            [
                {
                    "ITEM_ID": 7,
                    "ATTRS": '{\n  "color": "red"\n}',
                    "UPDATED": "2021-05-01 08:30:00.000000-07:00",
                    "LABEL": "x",
                    "RAW": "bytearray(b'\\x00\\xff')",
                }
            ],
        ),
    )


def _tar(src: Path, top: str, archive: Path) -> None:
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / top, arcname=top)


def _questions_and_gold(root: Path) -> None:
    lite = root / LITE
    questions = [
        {
            "instance_id": "local001",
            "db": "sqlite-shop",
            "question": "Total per customer?",
            "external_knowledge": "rules.md",
        },
        {"instance_id": "local002", "db": "SQLITE_SHOP", "question": "No gold here.", "external_knowledge": None},
        {"instance_id": "bq001", "db": "shop_bq", "question": "Views?", "external_knowledge": None},
        {"instance_id": "sf001", "db": "NO_SUCH_DB", "question": "Lost?", "external_knowledge": None},
    ]
    lite.mkdir(parents=True, exist_ok=True)
    (lite / "spider2-lite.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    gold = lite / "evaluation_suite/gold/sql"
    gold.mkdir(parents=True)
    (gold / "local001.sql").write_text(
        "SELECT c.name, SUM(o.amount) AS total FROM customers c JOIN orders o ON o.customer_id = c.id "
        "GROUP BY c.name ORDER BY total DESC",
        encoding="utf-8",
    )
    (gold / "bq001.sql").write_text(
        "SELECT event_id, payload.kind FROM `bigquery-public-data.shop.events_*` WHERE event_id > 0", encoding="utf-8"
    )
    (lite / "resource/documents").mkdir(parents=True)
    (lite / "resource/documents/rules.md").write_text("# Totals\nSum amounts.\n", encoding="utf-8")
    with tarfile.open(lite / "evaluation_suite/gold/exec_result.tar.gz", "w:gz") as tar:
        for name, text in (("local001.csv", "name,total\nZoë,4.0\n"), ("bq001_a.csv", "event_id,kind\n1,view\n")):
            data = text.encode()
            info = tarfile.TarInfo(f"exec_result/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def write_spider2(root: Path, staging: Path) -> dict:
    """Spider 2.0-Lite's layout under root (archives built from staging); returns its catalog."""
    _sqlite_description(root)
    _bigquery_files(staging)
    _snowflake_files(staging)
    databases = root / LITE / "resource/databases"
    _tar(staging, "bigquery", databases / "bigquery.tar.gz")
    _tar(staging, "snowflake", databases / "snowflake.tar.gz")
    _questions_and_gold(root)
    entries = [
        SourceFile(
            "spider2_lite",
            str(p.relative_to(root)),
            f"http://127.0.0.1:9/{p.relative_to(root)}",
            hashlib.sha256(p.read_bytes()).hexdigest(),
            "test",
        )
        for p in sorted((root / LITE).rglob("*"))
        if p.is_file()
    ]
    return {"spider2_lite": tuple(entries)}
