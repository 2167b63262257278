"""The mirror tier's one build, started in another process when the session starts, so it runs while the
rest of the suite does (the two fill the machine's 2 cores) and its tests, collected last, read its release.

The build is `plbench build` (the command a user runs; its stage lines go to the build's log) on a
PostgreSQL server of its own: the suite's shared server sees no sessions or schemas of the build, so
tests that count those stay exact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from plbench.config import BuildConfig
from tests.helpers import stop

REPO = Path(__file__).resolve().parent.parent
VERSION = "mirror"
BUILD_PIDS: set[int] = set()  # running builds: their sandbox children are not the suite's to count


class BackgroundBuild:
    """One `plbench build` over `raw_dir` in a folder of its own: its settings, DAGSTER_HOME, server, log."""

    def __init__(self, raw_dir: Path, folder: Path):
        import pgserver

        self.folder = folder
        self.server = pgserver.get_server(str(folder / "pg"), cleanup_mode="stop")
        self.config = BuildConfig(
            raw_dir=raw_dir,
            cache_dir=folder / "cache",
            out_dir=folder / "releases",
            normalized_dir=folder / "normalized",
            validation_dir=folder / "validation",
            pg_dsn=self.server.get_uri(),
            version=VERSION,
        )
        settings = folder / "settings.json"
        settings.write_text(json.dumps(self.config.to_settings()))
        env = {**os.environ, "PLBENCH_SETTINGS": str(settings), "DAGSTER_HOME": str(folder / "dagster")}
        self.log = folder / "build.log"
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pipelines.cli", "build"],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the build and its sandbox children stop together
            )
        BUILD_PIDS.add(self.process.pid)

    def manifest(self) -> dict:
        """The release's manifest, once the build has ended; the build must have succeeded."""
        code = self.process.wait()
        assert code == 0, f"plbench build exited with {code}: {self.log.read_text()[-3000:]}"
        return json.loads((self.config.out_dir / VERSION / "manifest.json").read_text())

    def stop(self) -> None:
        """End the build if it still runs (a session stopped early), then its server."""
        if self.process.poll() is None:
            stop(self.process, group=True)
        BUILD_PIDS.discard(self.process.pid)
        self.server.cleanup()
