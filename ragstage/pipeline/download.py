"""Fetch a BEIR archive once, check it, unpack it safely, and reuse it afterwards.

The cache only ever holds complete, verified datasets: the archive is streamed to a
temporary file, its md5 checked, unpacked into a temporary folder and moved into place with
one atomic rename. A failed download, a wrong checksum or a broken archive therefore leaves
nothing behind that a later call could mistake for the data.

Every fetch is bounded, so a wrong URL, a hostile archive or a stalled server cannot fill the
disk or hang a run: at most :data:`MAX_DOWNLOAD_BYTES` downloaded, at most
:data:`MAX_UNPACKED_BYTES` unpacked (counted while writing, whatever the archive's directory
claims), and at most :data:`MAX_SECONDS` for the whole download (``timeout`` bounds each
wait for the server on top). SciFact is about 10 MB, far inside the bounds. Every failure (no
network, too large, too slow, wrong md5, corrupt or unsupported compression, unsafe or
clashing member names) is a :class:`DownloadError` that says nothing was cached.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import stat
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from .data import BeirData, load_beir

__all__ = ["SCIFACT_URL", "SCIFACT_MD5", "DownloadError", "default_cache_dir", "fetch_beir_archive", "scifact",
           "MAX_DOWNLOAD_BYTES", "MAX_UNPACKED_BYTES", "MAX_SECONDS"]

SCIFACT_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"
SCIFACT_MD5 = "5f7d1de60b170fc8027bb7898e2efca1"
#: Default bounds of one fetch: bytes downloaded, bytes unpacked, seconds for the whole download.
MAX_DOWNLOAD_BYTES = 256 << 20
MAX_UNPACKED_BYTES = 1 << 30
MAX_SECONDS = 900.0
_CHUNK = 1 << 20


class DownloadError(ValueError):
    """The archive could not be fetched, did not match its md5, or could not be unpacked safely."""


def default_cache_dir() -> Path:
    """``$RAGSTAGE_CACHE`` when set, else ``~/.cache/ragstage``."""
    return Path(os.environ.get("RAGSTAGE_CACHE") or Path.home() / ".cache" / "ragstage")


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def _download(url: str, dest: Path, timeout: float, max_bytes: int, max_seconds: float) -> str:
    """Stream ``url`` into ``dest`` within the bounds; return the md5 of the bytes received."""
    from tqdm.auto import tqdm

    deadline = time.monotonic() + max_seconds
    digest = hashlib.md5()
    received = 0
    with urllib.request.urlopen(url, timeout=min(timeout, max_seconds)) as response, open(dest, "wb") as out:
        total = response.headers.get("Content-Length") if hasattr(response, "headers") else None
        if total and total.isdigit() and int(total) > max_bytes:
            raise DownloadError(f"{url}: the server announces {_mib(int(total))}, more than the limit of "
                                f"{_mib(max_bytes)}; nothing was cached")
        read = getattr(response, "read1", response.read)  # read1: what has arrived, so the clock is checked
        with tqdm(total=int(total) if total and total.isdigit() else None, unit="B", unit_scale=True,
                  desc=f"download {PurePosixPath(urllib.parse.urlparse(url).path).name}") as bar:
            while chunk := read(_CHUNK):
                received += len(chunk)
                if received > max_bytes:
                    raise DownloadError(f"{url}: more than the limit of {_mib(max_bytes)} received; "
                                        "nothing was cached")
                if time.monotonic() > deadline:
                    raise DownloadError(f"{url}: not finished within {max_seconds:g} s ({_mib(received)} "
                                        "received); nothing was cached")
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


def _check_names(infos: list[zipfile.ZipInfo], url: str) -> None:
    """Refuse unsafe members, and names that clash: twice the same, or a file where a folder must be."""
    files: set[PurePosixPath] = set()
    folders: set[PurePosixPath] = set()
    for info in infos:
        reason = _unsafe_member(info)
        if reason:
            raise DownloadError(f"{url}: archive member {info.filename!r} {reason}; refusing to extract")
        path = PurePosixPath(info.filename.replace("\\", "/"))
        parents = set(path.parents) - {PurePosixPath(".")}
        if not info.is_dir() and path in files:
            raise DownloadError(f"{url}: archive member {info.filename!r} appears twice; refusing to extract")
        clash = (parents & files) | ({path} & (files if info.is_dir() else folders))
        if clash:
            raise DownloadError(f"{url}: archive member {str(min(clash))!r} is both a file and a folder; "
                                "refusing to extract")
        (folders if info.is_dir() else files).add(path)
        folders |= parents


def _extract(archive: Path, dest: Path, url: str, max_bytes: int) -> None:
    """Unpack member by member, counting the bytes written (a zip's stated sizes can lie)."""
    written = 0
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            _check_names(infos, url)
            if sum(info.file_size for info in infos) > max_bytes:
                raise DownloadError(f"{url}: the archive unpacks to {_mib(sum(i.file_size for i in infos))}, "
                                    f"more than the limit of {_mib(max_bytes)}; nothing was cached")
            for info in infos:
                target = dest.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as member, open(target, "xb") as out:
                    while chunk := member.read(_CHUNK):
                        written += len(chunk)
                        if written > max_bytes:
                            raise DownloadError(f"{url}: the archive unpacks to more than the limit of "
                                                f"{_mib(max_bytes)}; nothing was cached")
                        out.write(chunk)
    except (zipfile.BadZipFile, EOFError) as exc:
        raise DownloadError(f"{url}: not a readable zip archive ({exc}); nothing was cached") from None
    except zlib.error as exc:
        raise DownloadError(f"{url}: corrupt compressed data ({exc}); nothing was cached") from None
    except NotImplementedError as exc:
        raise DownloadError(f"{url}: {exc} (an unsupported compression method); nothing was cached") from None
    except (RuntimeError, OSError) as exc:  # an encrypted member, a name the file system refuses
        raise DownloadError(f"{url}: cannot unpack ({exc}); nothing was cached") from None


def _dataset_root(folder: Path) -> Path:
    """BEIR archives wrap the files in one folder named after the dataset; accept both layouts."""
    if (folder / "corpus.jsonl").exists():
        return folder
    subdirs = [p for p in folder.iterdir() if p.is_dir() and (p / "corpus.jsonl").exists()]
    if len(subdirs) != 1:
        raise DownloadError(f"{folder}: expected corpus.jsonl at the top or in exactly one sub-folder")
    return subdirs[0]


def fetch_beir_archive(url: str, md5: str, cache_dir: str | Path | None = None, *,
                       timeout: float = 60.0, max_bytes: int = MAX_DOWNLOAD_BYTES,
                       max_unpacked_bytes: int = MAX_UNPACKED_BYTES, max_seconds: float = MAX_SECONDS) -> Path:
    """Return the folder of a verified, unpacked BEIR archive, downloading it on first use.

    The cache entry is named after the archive and its md5, so asking for another checksum
    (a new release) never returns the old files. ``timeout`` bounds each wait for the server,
    ``max_seconds`` the whole download; ``max_bytes`` and ``max_unpacked_bytes`` the sizes.
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
            found = _download(url, archive, timeout, max_bytes, max_seconds)
        except DownloadError:
            raise
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise DownloadError(f"could not download {url} ({reason}); expected md5 {md5}, "
                                f"found none: nothing was cached") from None
        if found != md5:
            raise DownloadError(f"{url}: md5 mismatch, expected {md5}, found {found} "
                                f"(truncated or changed archive); nothing was cached")
        unpacked = Path(tmp) / "unpacked"
        unpacked.mkdir()
        _extract(archive, unpacked, url, max_unpacked_bytes)
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
