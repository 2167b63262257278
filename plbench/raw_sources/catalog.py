"""The source catalog: every raw file the pipeline reads, as plain data.

`relative_path` uses the same layout as the shared raw mirror, so a file is found
at `<mirror>/<relative_path>` or downloaded to `<cache>/<relative_path>`.
`sha256` is the checksum of the file as stored there, i.e. after decompression,
so one value verifies both a mirror copy and a download.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

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


_MBPP_BASE = "https://raw.githubusercontent.com/google-research/google-research/master/mbpp"
_MBPP_PLUS_RELEASE = "https://github.com/evalplus/mbppplus_release/releases/download/v0.1.0"

# Checksums are those of the shared mirror (manifest.json), re-computed with hashlib.
# The mirror copies were not byte-compared with the URLs (see MANIFEST.md): if upstream
# differs, a download fails verification loudly instead of silently using other data.
CATALOG: dict[str, tuple[SourceFile, ...]] = {
    "mbpp": (
        SourceFile(
            dataset="mbpp",
            relative_path="mbpp/mbpp.jsonl",
            url=f"{_MBPP_BASE}/mbpp.jsonl",
            sha256="ccf64ceae9c5403bf50a044cb6d505bfd2a2963ee58338ba268fd65beab92a9f",
            licence="CC-BY-4.0",
        ),
        SourceFile(
            dataset="mbpp",
            relative_path="mbpp/sanitized-mbpp.json",
            url=f"{_MBPP_BASE}/sanitized-mbpp.json",
            sha256="7fec016546acaee11dbe14f9f0bb670e59f41919f7b522a59fba34871da78551",
            licence="CC-BY-4.0",
        ),
    ),
    "mbpp_plus": (
        SourceFile(
            dataset="mbpp_plus",
            relative_path="mbpp_plus/MbppPlus-v0.1.0.jsonl",
            url=f"{_MBPP_PLUS_RELEASE}/MbppPlus-v0.1.0.jsonl.gz",
            sha256="a855b9de667baea8e2f8aa61f898767a7336872208a85222b35622545e819fe9",
            licence="Apache-2.0",
            compression="gzip",
        ),
    ),
}


# Spider 1.0 and Spider 2.0-Lite are hundreds of files (one SQLite file per database, one gold
# SQL file per question): their entries live in spider_catalog.json, made from the mirror's
# manifest.json (path, sha256, and the public repository and commit each file was taken from).
_SPIDER_LICENCES = {"spider1": "CC-BY-SA-4.0", "spider2_lite": "MIT"}


def _spider_entries() -> dict[str, tuple[SourceFile, ...]]:
    table = json.loads((Path(__file__).with_name("spider_catalog.json")).read_text(encoding="utf-8"))
    return {
        subset: tuple(
            SourceFile(subset, row["path"], row["url"], row["sha256"], _SPIDER_LICENCES[subset]) for row in rows
        )
        for subset, rows in table.items()
    }


CATALOG.update(_spider_entries())
