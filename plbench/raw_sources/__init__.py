"""Raw sources: what to fetch (catalog), how to get it verified (fetch), how to read it (readers)."""

from plbench.raw_sources.catalog import CATALOG, SourceFile
from plbench.raw_sources.fetch import RawSourceError, resolve, sha256_file
from plbench.raw_sources.mbpp import read_mbpp, read_mbpp_plus

__all__ = [
    "CATALOG",
    "RawSourceError",
    "SourceFile",
    "read_mbpp",
    "read_mbpp_plus",
    "resolve",
    "sha256_file",
]
