"""The source catalog: every raw file the pipeline reads, as plain data.

`relative_path` uses the same layout as the shared raw mirror, so a file is found
at `<mirror>/<relative_path>` or downloaded to `raw_sources/downloads/<relative_path>`.
`sha256` is the checksum of the file as stored there, i.e. after decompression,
so one value verifies both a mirror copy and a download.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from plbench.paths import project_root

COMPRESSIONS = (None, "gzip")


@dataclass(frozen=True)
class SourceFile:
    """One raw file: where it lives under the raw root, where to download it, and its checksum."""

    dataset: str
    relative_path: str
    url: str
    sha256: str
    licence: str
    compression: str | None = None  # "gzip" when `url` serves a .gz of the stored file

    def __post_init__(self) -> None:
        # Fail at import time on a typo in the table rather than at download time.
        if self.compression not in COMPRESSIONS:
            raise ValueError(f"{self.relative_path}: unknown compression {self.compression!r}")
        if len(self.sha256) != 64 or any(c not in "0123456789abcdef" for c in self.sha256):
            raise ValueError(f"{self.relative_path}: sha256 must be 64 lower-case hex digits")


# The catalog a user reads: raw_sources/catalog.json at the checkout's top. Checksums are those of the
# shared mirror (its manifest.json), re-computed with hashlib; the mirror copies were not byte-compared
# with the URLs (see MANIFEST.md): if upstream differs, a download fails verification loudly instead of
# silently using other data. Spider entries also name the public repository and commit in their URL.
CATALOG_PATH = project_root() / "raw_sources" / "catalog.json"


def read_catalog(path: Path = CATALOG_PATH) -> dict[str, tuple[SourceFile, ...]]:
    return catalog_from_table(json.loads(path.read_text(encoding="utf-8")))


def catalog_from_table(table: dict) -> dict[str, tuple[SourceFile, ...]]:
    """The catalog from its JSON form (catalog.json's `licences` and `datasets`)."""
    return {
        dataset: tuple(
            SourceFile(
                dataset, row["path"], row["url"], row["sha256"], table["licences"][dataset], row.get("compression")
            )
            for row in rows
        )
        for dataset, rows in table["datasets"].items()
    }


def catalog_table(catalog: dict[str, tuple[SourceFile, ...]]) -> dict:
    """The JSON form of a catalog, as `catalog_from_table` reads it (one licence per dataset)."""
    return {
        "licences": {dataset: files[0].licence for dataset, files in catalog.items() if files},
        "datasets": {
            dataset: [
                {"path": f.relative_path, "url": f.url, "sha256": f.sha256}
                | ({"compression": f.compression} if f.compression else {})
                for f in files
            ]
            for dataset, files in catalog.items()
        },
    }


CATALOG: dict[str, tuple[SourceFile, ...]] = read_catalog()
