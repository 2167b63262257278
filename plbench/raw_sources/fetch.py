"""Turn a catalog entry into a local, checksum-verified file.

Two modes: a read-only local mirror (nothing is ever written into it), or a
download into a cache folder. Either way the caller only ever sees a path whose
sha256 matches the catalog; every other outcome is a `RawSourceError`.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import tempfile
import urllib.request
import zlib
from pathlib import Path
from typing import BinaryIO

from plbench.raw_sources.catalog import SourceFile

CHUNK = 1 << 20
DEFAULT_TIMEOUT = 60.0


class RawSourceError(Exception):
    """A raw file is missing, corrupt or could not be downloaded; the message says which and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in chunks so large files need no memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def resolve(source: SourceFile, raw_dir: Path | None, cache_dir: Path, timeout: float = DEFAULT_TIMEOUT) -> Path:
    """A local path to `source` whose sha256 matches the catalog.

    With `raw_dir` the file must already be in that mirror (no download fallback,
    so a broken mirror is noticed); without it the file is downloaded into
    `cache_dir`, or reused from there when its checksum still matches.
    """
    if raw_dir is not None:
        return _from_mirror(source, Path(raw_dir))
    return _from_cache_or_download(source, Path(cache_dir), timeout)


def _from_mirror(source: SourceFile, raw_dir: Path) -> Path:
    path = raw_dir / source.relative_path
    if not path.is_file():
        raise RawSourceError(f"{source.relative_path}: not found in the raw mirror {raw_dir} (looked for {path})")
    actual = sha256_file(path)
    if actual != source.sha256:
        raise RawSourceError(
            f"{source.relative_path}: checksum mismatch in the raw mirror {raw_dir}: "
            f"expected sha256 {source.sha256}, actual {actual}"
        )
    return path


def _from_cache_or_download(source: SourceFile, cache_dir: Path, timeout: float) -> Path:
    final = cache_dir / source.relative_path
    if final.is_file():
        if sha256_file(final) == source.sha256:
            return final
        # A stale or truncated cache entry goes now, so that a failed download
        # cannot leave a bad file under the final name.
        final.unlink()
    final.parent.mkdir(parents=True, exist_ok=True)
    # The temp file lives in the destination folder so the final rename is atomic:
    # a reader never sees a half-written or unverified file under the final name.
    fd, tmp_name = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            actual = _download(source, out, timeout)
        if actual != source.sha256:
            raise RawSourceError(
                f"{source.relative_path}: checksum mismatch after downloading {source.url}: "
                f"expected sha256 {source.sha256}, actual {actual}"
            )
        # mkstemp makes the file owner-only; a cache is ordinary readable data.
        os.chmod(tmp, 0o644)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return final


def _download(source: SourceFile, out: BinaryIO, timeout: float) -> str:
    """Stream `source.url` (decompressed if gzip) into `out`; return the sha256 of what was written."""
    digest = hashlib.sha256()
    request = urllib.request.Request(source.url, headers={"User-Agent": "plbench"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            stream = gzip.GzipFile(fileobj=response) if source.compression == "gzip" else response
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
    # URLError/HTTPError/timeouts/BadGzipFile are all OSError subclasses; truncated
    # gzip streams raise EOFError, corrupt ones zlib.error.
    except (OSError, http.client.HTTPException, EOFError, zlib.error) as exc:
        raise RawSourceError(f"{source.relative_path}: downloading {source.url} failed: {exc}") from exc
    return digest.hexdigest()
