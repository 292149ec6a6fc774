"""The SciFact download path, on small archives built here: nothing reaches the network."""

from __future__ import annotations

import hashlib
import http.server
import os
import socket
import stat
import threading
import zipfile
from pathlib import Path

import pytest
from pipeline_helpers import MINI

from ragstage.pipeline import DownloadError, fetch_beir_archive, scifact


def _zip(path: Path, members: dict[str, bytes], symlinks: dict[str, str] | None = None) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return hashlib.md5(path.read_bytes()).hexdigest()


def _beir_members(prefix: str = "scifact/") -> dict[str, bytes]:
    return {f"{prefix}{name}": (MINI / name).read_bytes()
            for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")}


def _leftovers(cache: Path) -> list[str]:
    folder = cache / "datasets"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_good_archive_is_verified_extracted_and_reused(tmp_path):
    archive = tmp_path / "scifact.zip"
    md5 = _zip(archive, _beir_members())
    cache = tmp_path / "cache"
    data = scifact(cache, url=archive.as_uri(), md5=md5)
    assert len(data.queries) == 13 and data.meta["md5"] == md5
    archive.unlink()  # the second call must not need the archive any more
    again = scifact(cache, url=archive.as_uri(), md5=md5)
    assert again.corpus == data.corpus
    assert _leftovers(cache) == [f"scifact-{md5[:12]}"]


def test_wrong_md5_names_url_and_both_checksums_and_caches_nothing(tmp_path):
    archive = tmp_path / "scifact.zip"
    found = _zip(archive, _beir_members())
    expected = "0" * 32
    with pytest.raises(DownloadError) as info:
        fetch_beir_archive(archive.as_uri(), expected, tmp_path / "cache")
    message = str(info.value)
    assert archive.as_uri() in message and expected in message and found in message
    assert _leftovers(tmp_path / "cache") == []


def test_truncated_archive_is_rejected_by_checksum_and_by_zip_check(tmp_path):
    archive = tmp_path / "scifact.zip"
    full = _zip(archive, _beir_members())
    archive.write_bytes(archive.read_bytes()[:-300])
    with pytest.raises(DownloadError, match=f"expected {full}"):
        fetch_beir_archive(archive.as_uri(), full, tmp_path / "cache")
    # even when the checksum is that of the truncated file, the archive is not unpacked
    truncated = hashlib.md5(archive.read_bytes()).hexdigest()
    with pytest.raises(DownloadError, match="not a readable zip"):
        fetch_beir_archive(archive.as_uri(), truncated, tmp_path / "cache")
    assert _leftovers(tmp_path / "cache") == []


@pytest.mark.parametrize("members, symlinks, reason", [
    ({"../escape.txt": b"x"}, None, "contains '..'"),
    ({"scifact/../../escape.txt": b"x"}, None, "contains '..'"),
    ({"/tmp/escape.txt": b"x"}, None, "absolute path"),
    ({}, {"scifact/link": "/etc/passwd"}, "symbolic link"),
])
def test_members_that_escape_the_cache_are_refused(tmp_path, members, symlinks, reason):
    archive = tmp_path / "evil.zip"
    md5 = _zip(archive, {**_beir_members(), **members}, symlinks)
    cache = tmp_path / "deep" / "cache"
    with pytest.raises(DownloadError, match=reason):
        fetch_beir_archive(archive.as_uri(), md5, cache)
    assert not (tmp_path / "deep" / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()
    assert _leftovers(cache) == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_network_is_a_clear_error(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/scifact.zip"  # nothing listens there
    with pytest.raises(DownloadError) as info:
        fetch_beir_archive(url, "5f7d1de60b170fc8027bb7898e2efca1", tmp_path / "cache", timeout=5)
    assert url in str(info.value) and "5f7d1de60b170fc8027bb7898e2efca1" in str(info.value)
    assert _leftovers(tmp_path / "cache") == []


def test_download_over_http_from_a_local_server(tmp_path, monkeypatch):
    served = tmp_path / "www"
    served.mkdir()
    md5 = _zip(served / "scifact.zip", _beir_members())

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("RAGSTAGE_CACHE", str(tmp_path / "envcache"))
        data = scifact(url=f"http://127.0.0.1:{server.server_address[1]}/scifact.zip", md5=md5)
    finally:
        server.shutdown()
        thread.join(5)
    assert len(data.corpus) == 46
    assert _leftovers(tmp_path / "envcache") == [f"scifact-{md5[:12]}"]
    assert not any(p.name.startswith(".") for p in (tmp_path / "envcache" / "datasets").iterdir())
    assert os.listdir(tmp_path / "envcache" / "datasets" / f"scifact-{md5[:12]}") == ["scifact"]
