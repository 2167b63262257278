"""The Dagster UI in a real browser: `plbench dev` on the session's fixture build, driven by headless
Chromium through Playwright, every page read cross-checked with the UI's own /graphql answers.

Facts about this machine's Chromium and the UI's selectors: ../shared/UI-NOTES.md. The lineage
screenshot lands in .cache/ui/ (a CI artifact).
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers import stop

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = REPO / ".cache" / "ui"
NODE_NAME = '[class*="AssetNode_assetName"]'
EDGE = 'path[marker-end^="url(#arrow"]'
FULL_NAME = f"{NODE_NAME} [data-tooltip]"  # a full node's name: data-tooltip holds the key's last part, uncut
LINEAGE_SVG = 'svg[class*="AssetNodeLineageGraph_sVGContainer"]'  # width and height: the layout's size
LEGIBLE_ZOOM = 0.7  # full nodes from a zoom of 0.6 up (dagster-webserver 1.13); 0.7 leaves the fit's padding room
STORED_ZOOM = "lineageGraphZoomLevel"  # the graph keeps its last zoom in localStorage and opens at it, not fitted
PAGE_CHROME_PX = 400  # the navigation column (240 px) and the header, tabs and lineage toolbar (160 px) around it
READY_S = 240  # `plbench dev` is ready in ~5 s on a quiet machine, ~70 s at a load average of 10
RUN_S = 240

pytestmark = [
    pytest.mark.ui,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (Debian's chromium; .ci/run installs it)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UI:
    """One `plbench dev`: its base URL and its GraphQL endpoint."""

    def __init__(self, url: str):
        self.url = url

    def graphql(self, query: str, **variables) -> dict:
        body = json.dumps({"query": query, "variables": variables}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.load(response)
        assert "errors" not in answer, answer
        return answer["data"]


def _wait_ready(ui: UI, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        assert server.poll() is None, f"plbench dev exited: {log.read_text()[-3000:]}"
        try:
            ui.graphql("mutation { setNuxSeen }")  # also keeps the community pop-up away
            return
        except OSError:
            time.sleep(1)
    raise AssertionError(f"plbench dev not ready after {READY_S} s: {log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def ui(fixture_build, tmp_path_factory):
    """`plbench dev` on 127.0.0.1 over the fixture build's instance, with the build's settings."""
    config, instance = fixture_build
    folder = tmp_path_factory.mktemp("ui")
    settings = folder / "settings.json"
    settings.write_text(json.dumps(config.to_settings()))
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": instance.root_directory, "PLBENCH_SETTINGS": str(settings)}
    log = folder / "dev.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "pipelines.cli", "dev", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the webserver, daemon and code server stop together
        )
    try:
        handle = UI(f"http://127.0.0.1:{port}")
        _wait_ready(handle, server, log)
        yield handle
    finally:
        # dagster dev's orderly shutdown took 17-19 s (the daemon's loops); nothing uses the server after
        # the tier, so its process group gets SIGKILL when SIGTERM has not ended it within 5 s.
        stop(server, group=True, grace_s=5)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1800, "height": 1400},
        )
        context.set_default_timeout(120_000)
        yield context
        context.close()


@pytest.fixture
def page(browser):
    page = browser.new_page()
    yield page
    page.close()


def _asset_nodes(ui: UI) -> dict[str, list[str]]:
    nodes = ui.graphql("{ assetNodes { assetKey { path } dependencyKeys { path } } }")["assetNodes"]
    return {"/".join(n["assetKey"]["path"]): ["/".join(d["path"]) for d in n["dependencyKeys"]] for n in nodes}


def _upstream(graph: dict[str, list[str]], asset: str) -> set[str]:
    seen, todo = set(), [asset]
    while todo:
        for parent in graph[todo.pop()]:
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def _legible_lineage(page, url: str) -> None:
    """Open the lineage at `url` on a viewport where zoom to fit draws full nodes: below a zoom of 0.6 the
    graph draws minimal nodes, whose names are cut to 18 characters and carry no data-tooltip. The viewport
    is sized from the layout the page reports (its SVG's width and height), so a larger graph still fits."""
    page.goto(url)
    layout = page.wait_for_selector(LINEAGE_SVG)
    width, height = layout.evaluate("svg => [svg.width.baseVal.value, svg.height.baseVal.value]")
    page.set_viewport_size(
        {
            "width": math.ceil(width * LEGIBLE_ZOOM) + PAGE_CHROME_PX,
            "height": math.ceil(height * LEGIBLE_ZOOM) + PAGE_CHROME_PX,
        }
    )
    page.evaluate(f"() => localStorage.removeItem('{STORED_ZOOM}')")
    page.goto(url)  # with no zoom stored, the page zooms to fit on load


def test_lineage_leads_from_every_raw_asset_to_release(ui, page):
    graph = _asset_nodes(ui)
    raw = {asset for asset, parents in graph.items() if not parents}
    assert raw == {"mbpp_raw", "mbpp_plus_raw", "spider1_raw", "spider2_lite_raw"}
    assert _upstream(graph, "release") | {"release"} == set(graph)  # no dead end: everything feeds the release
    _legible_lineage(page, f"{ui.url}/assets/release?view=lineage&lineageScope=upstream&lineageDepth=50")
    page.wait_for_function(
        f"n => {{ const names = Array.from(document.querySelectorAll('{NODE_NAME}'), e => e.textContent); "
        f"return document.querySelectorAll('{FULL_NAME}').length >= n && !names.some(t => t.includes('Loading')); }}",
        arg=len(graph),
    )
    assert page.locator(NODE_NAME).count() == len(graph)  # every node drawn full, none minimal
    names = page.eval_on_selector_all(FULL_NAME, "nodes => nodes.map(n => n.dataset.tooltip)")
    assert sorted(names) == sorted(graph)  # each asset once, under its own key (a visible name may be cut short)
    edges = sum(len(parents) for parents in graph.values())
    page.wait_for_function(f"n => document.querySelectorAll('{EDGE}').length >= n", arg=edges)  # drawn after nodes
    assert page.locator(EDGE).count() == edges
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "lineage.png"))
    assert (SCREENSHOTS / "lineage.png").stat().st_size > 10_000


METADATA = """query ($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) { ... on AssetNode {
  assetMaterializations(limit: 1) { runId metadataEntries { label
    ... on IntMetadataEntry { intValue } ... on FloatMetadataEntry { floatValue }
    ... on JsonMetadataEntry { jsonString } } }
  assetChecksOrError { ... on AssetChecks { checks { name executionForLatestMaterialization { status } } } } } } }"""


def test_an_asset_page_shows_counts_rejections_timings_and_check_results(ui, page, fixture_build):
    node = ui.graphql(METADATA, path=["mbpp_tasks"])["assetNodeOrError"]
    entries = {e["label"]: e for e in node["assetMaterializations"][0]["metadataEntries"]}
    assert {"count_in", "count_out", "rejected_tasks", "seconds"} <= set(entries)
    page.goto(f"{ui.url}/assets/mbpp_tasks")
    page.get_by_text("count_in", exact=True).wait_for()
    text = page.inner_text("body")
    for label in ("count_in", "count_out", "rejected_tasks", "seconds"):
        assert label in text
    assert str(entries["count_in"]["intValue"]) in text and str(entries["count_out"]["intValue"]) in text
    for reason in json.loads(entries["rejected_tasks"]["jsonString"]):  # {"unsupported_value": 2}
        assert reason in text
    [check] = node["assetChecksOrError"]["checks"]
    assert (check["name"], check["executionForLatestMaterialization"]["status"]) == (
        "mbpp_tasks_reconcile",
        "SUCCEEDED",
    )
    page.goto(f"{ui.url}/assets/mbpp_tasks?view=checks")
    page.get_by_text("Evaluation result").wait_for()
    text = page.inner_text("body")
    assert "mbpp_tasks_reconcile" in text and "Passed" in text and "This is a blocking asset check." in text


def test_the_database_partitions_are_shown(ui, page):
    query = """{ assetNodeOrError(assetKey: {path: ["normalized_databases_postgres"]}) { ... on AssetNode {
      partitionKeysByDimension { partitionKeys } } } }"""
    [dimension] = ui.graphql(query)["assetNodeOrError"]["partitionKeysByDimension"]
    keys = dimension["partitionKeys"]
    assert "spider1.shop" in keys and len(keys) == 4  # Spider 1.0's one loadable database, Spider 2.0-Lite's three
    page.goto(f"{ui.url}/assets/normalized_databases_postgres?view=partitions")
    page.get_by_text(f"Materialized ({len(keys)})").wait_for()
    text = page.inner_text("body")
    assert all(key in text for key in keys)


RUN = """query ($id: ID!) { runOrError(runId: $id) { ... on Run { status pipelineName stepKeysToExecute
  stepStats { stepKey status } } } }"""
LATEST = """query ($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) { ... on AssetNode {
  assetMaterializations(limit: 1) { runId } } } }"""


def _latest_run(ui: UI, asset: str) -> str:
    return ui.graphql(LATEST, path=[asset])["assetNodeOrError"]["assetMaterializations"][0]["runId"]


def test_materializing_replay_from_its_page_reruns_it_alone_on_stored_upstream_values(ui, page):
    build_run = _latest_run(ui, "mbpp_tasks")
    page.goto(f"{ui.url}/assets/replay_validation_postgres")
    page.get_by_text("Latest materialization").wait_for()
    page.locator("button", has_text="Materialize").first.click()
    toast = page.get_by_text("Launched run").first
    toast.wait_for()
    short_id = toast.inner_text().split()[-1]
    runs = ui.graphql("{ runsOrError(limit: 5) { ... on Runs { results { runId } } } }")["runsOrError"]["results"]
    [run_id] = [r["runId"] for r in runs if r["runId"].startswith(short_id)]
    deadline = time.monotonic() + RUN_S
    while (run := ui.graphql(RUN, id=run_id)["runOrError"])["status"] not in ("SUCCESS", "FAILURE", "CANCELED"):
        assert time.monotonic() < deadline, f"run {run_id} still {run['status']} after {RUN_S} s"
        time.sleep(2)
    assert run["status"] == "SUCCESS", run
    assert run["pipelineName"] == "Stage_replay"  # the run list says what it did, not __ASSET_JOB
    shard_step = "replay_validation_postgres.replay_validation_postgres_{}"  # a task-sharded asset's steps
    assert {s["stepKey"]: s["status"] for s in run["stepStats"]} == {
        shard_step.format("shards"): "SUCCESS",
        shard_step.format("shard[shard_0]"): "SUCCESS",  # in process: one shard
        shard_step.format("merge"): "SUCCESS",
        "replay_validation_postgres_retention_floor": "SUCCESS",
    }
    assert _latest_run(ui, "replay_validation_postgres") == run_id
    assert _latest_run(ui, "mbpp_tasks") == build_run  # read from storage, not recomputed
    page.goto(f"{ui.url}/runs/{run_id}")
    page.get_by_text("replay_validation_postgres").first.wait_for()
    assert "Success" in page.inner_text("body")
