"""Fetch a BEIR archive once, check it, unpack it safely, and reuse it afterwards.

The cache only ever holds complete, verified datasets: the archive is streamed to a
temporary file, its md5 checked, unpacked into a temporary folder and moved into place with
one atomic rename. A failed download, a wrong checksum or a broken archive therefore leaves
nothing behind that a later call could mistake for the data.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import stat
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from .data import BeirData, load_beir

__all__ = ["SCIFACT_URL", "SCIFACT_MD5", "DownloadError", "default_cache_dir", "fetch_beir_archive", "scifact"]

SCIFACT_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"
SCIFACT_MD5 = "5f7d1de60b170fc8027bb7898e2efca1"
_CHUNK = 1 << 20


class DownloadError(ValueError):
    """The archive could not be fetched, did not match its md5, or could not be unpacked safely."""


def default_cache_dir() -> Path:
    """``$RAGSTAGE_CACHE`` when set, else ``~/.cache/ragstage``."""
    return Path(os.environ.get("RAGSTAGE_CACHE") or Path.home() / ".cache" / "ragstage")


def _download(url: str, dest: Path, timeout: float) -> str:
    """Stream ``url`` into ``dest``; return the md5 of the bytes received."""
    from tqdm.auto import tqdm

    digest = hashlib.md5()
    with urllib.request.urlopen(url, timeout=timeout) as response, open(dest, "wb") as out:
        total = response.headers.get("Content-Length") if hasattr(response, "headers") else None
        with tqdm(total=int(total) if total else None, unit="B", unit_scale=True,
                  desc=f"download {PurePosixPath(urllib.parse.urlparse(url).path).name}") as bar:
            while chunk := response.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
                bar.update(len(chunk))
    return digest.hexdigest()


def _unsafe_member(info: zipfile.ZipInfo) -> str | None:
    """Why a member must not be extracted, or None when it stays inside the target folder."""
    name = info.filename
    if stat.S_ISLNK(info.external_attr >> 16):
        return "is a symbolic link"
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or (path.parts and path.parts[0].endswith(":")):
        return "has an absolute path"
    if ".." in path.parts:
        return "contains '..'"
    return None


def _extract(archive: Path, dest: Path, url: str) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                reason = _unsafe_member(info)
                if reason:
                    raise DownloadError(f"{url}: archive member {info.filename!r} {reason}; refusing to extract")
            bad = zf.testzip()
            if bad is not None:
                raise DownloadError(f"{url}: archive member {bad!r} is corrupt (CRC mismatch)")
            zf.extractall(dest)
    except (zipfile.BadZipFile, EOFError) as exc:
        raise DownloadError(f"{url}: not a readable zip archive ({exc})") from None


def _dataset_root(folder: Path) -> Path:
    """BEIR archives wrap the files in one folder named after the dataset; accept both layouts."""
    if (folder / "corpus.jsonl").exists():
        return folder
    subdirs = [p for p in folder.iterdir() if p.is_dir() and (p / "corpus.jsonl").exists()]
    if len(subdirs) != 1:
        raise DownloadError(f"{folder}: expected corpus.jsonl at the top or in exactly one sub-folder")
    return subdirs[0]


def fetch_beir_archive(url: str, md5: str, cache_dir: str | Path | None = None, *,
                       timeout: float = 60.0) -> Path:
    """Return the folder of a verified, unpacked BEIR archive, downloading it on first use.

    The cache entry is named after the archive and its md5, so asking for another checksum
    (a new release) never returns the old files.
    """
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    name = PurePosixPath(urllib.parse.urlparse(url).path).stem or "dataset"
    target = root / "datasets" / f"{name}-{md5[:12]}"
    if target.is_dir():
        return _dataset_root(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=target.parent) as tmp:
        archive = Path(tmp) / "archive.zip"
        try:
            found = _download(url, archive, timeout)
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise DownloadError(f"could not download {url} ({reason}); expected md5 {md5}, "
                                f"found none: nothing was cached") from None
        if found != md5:
            raise DownloadError(f"{url}: md5 mismatch, expected {md5}, found {found} "
                                f"(truncated or changed archive); nothing was cached")
        unpacked = Path(tmp) / "unpacked"
        unpacked.mkdir()
        _extract(archive, unpacked, url)
        _dataset_root(unpacked)  # fail before the rename when the layout is wrong
        try:
            os.replace(unpacked, target)
        except OSError:
            if not target.is_dir():  # another process may have finished the same download first
                raise
            shutil.rmtree(unpacked, ignore_errors=True)
    return _dataset_root(target)


def scifact(cache_dir: str | Path | None = None, split: str = "test", *, url: str = SCIFACT_URL,
            md5: str = SCIFACT_MD5) -> BeirData:
    """BEIR's SciFact (5,183 abstracts; 300 test claims), downloaded once into the cache.

    ``url`` and ``md5`` are parameters so a mirror or a local copy (``file://...``) can be used.
    """
    folder = fetch_beir_archive(url, md5, cache_dir)
    data = load_beir(folder, split)
    data.meta.update({"url": url, "md5": md5})
    return data
