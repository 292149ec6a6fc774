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


# -- the bounds: size downloaded, size unpacked, time; every failure a DownloadError -----------------


def test_default_bounds_are_stated_and_cover_scifact():
    from ragstage.pipeline.download import MAX_DOWNLOAD_BYTES, MAX_SECONDS, MAX_UNPACKED_BYTES

    assert MAX_DOWNLOAD_BYTES == 256 << 20 and MAX_UNPACKED_BYTES == 1 << 30 and MAX_SECONDS == 900
    assert MAX_DOWNLOAD_BYTES > 10 << 20 and MAX_UNPACKED_BYTES > 10 << 20  # SciFact: about 10 MB


def test_an_archive_that_unpacks_past_the_bound_is_refused(tmp_path):
    """Before: a 1 MiB archive that unpacks to 1 GiB was written until the disk filled."""
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in _beir_members().items():
            zf.writestr(name, data)
        zf.writestr("scifact/zeros.bin", b"\0" * (8 << 20))
    md5 = hashlib.md5(archive.read_bytes()).hexdigest()
    assert archive.stat().st_size < 100_000
    with pytest.raises(DownloadError, match="more than the limit of 4.0 MiB; nothing was cached"):
        fetch_beir_archive(archive.as_uri(), md5, tmp_path / "cache", max_unpacked_bytes=4 << 20)
    assert _leftovers(tmp_path / "cache") == []


def test_an_archive_whose_directory_lies_about_sizes_is_still_bounded(tmp_path):
    archive = tmp_path / "liar.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("scifact/corpus.jsonl", b"x" * (3 << 20))
    raw = bytearray(archive.read_bytes())
    central = raw.rfind(b"PK\x01\x02")
    raw[central + 24:central + 28] = (1).to_bytes(4, "little")  # uncompressed size claimed: 1 byte
    archive.write_bytes(bytes(raw))
    md5 = hashlib.md5(bytes(raw)).hexdigest()
    with pytest.raises(DownloadError, match="nothing was cached"):
        fetch_beir_archive(archive.as_uri(), md5, tmp_path / "cache", max_unpacked_bytes=1 << 20)
    assert _leftovers(tmp_path / "cache") == []


def _patched_zip(path: Path, patch) -> str:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in _beir_members().items():
            zf.writestr(name, data)
    raw = bytearray(path.read_bytes())
    patch(raw)
    path.write_bytes(bytes(raw))
    return hashlib.md5(bytes(raw)).hexdigest()


def _corrupt_deflate(raw: bytearray) -> None:
    name_len = int.from_bytes(raw[26:28], "little")
    start = 30 + name_len + int.from_bytes(raw[28:30], "little")
    raw[start:start + 64] = b"\xff" * 64  # an invalid deflate block type


def _unsupported_method(raw: bytearray) -> None:
    raw[8:10] = (99).to_bytes(2, "little")  # the local header's compression method
    central = raw.find(b"PK\x01\x02")
    raw[central + 10:central + 12] = (99).to_bytes(2, "little")


@pytest.mark.parametrize("patch, message", [(_corrupt_deflate, "corrupt compressed data"),
                                            (_unsupported_method, "unsupported compression method")])
def test_broken_compression_is_a_download_error(tmp_path, patch, message):
    """Before: zlib.error and NotImplementedError, shown by `ragstage run` as tracebacks."""
    archive = tmp_path / "broken.zip"
    md5 = _patched_zip(archive, patch)
    with pytest.raises(DownloadError, match=message):
        fetch_beir_archive(archive.as_uri(), md5, tmp_path / "cache")
    assert _leftovers(tmp_path / "cache") == []


@pytest.mark.parametrize("extra, message", [
    ([("scifact/corpus.jsonl", b"{}")], "appears twice"),
    ([("scifact/qrels", b"a file")], "both a file and a folder"),
    ([("scifact/queries.jsonl/x", b"")], "both a file and a folder"),
])
def test_clashing_names_are_a_download_error(tmp_path, extra, message):
    """Before: an OSError traceback (a file where a folder must go), or the last copy silently kept."""
    archive = tmp_path / "clash.zip"
    import warnings

    with warnings.catch_warnings(), zipfile.ZipFile(archive, "w") as zf:
        warnings.simplefilter("ignore")  # zipfile warns about a duplicate name while writing it
        for name, data in [*_beir_members().items(), *extra]:
            zf.writestr(name, data)
    md5 = hashlib.md5(archive.read_bytes()).hexdigest()
    with pytest.raises(DownloadError, match=message):
        fetch_beir_archive(archive.as_uri(), md5, tmp_path / "cache")
    assert _leftovers(tmp_path / "cache") == []


class _Server:
    """A local HTTP server on 127.0.0.1 whose handler ``respond(handler)`` writes the reply."""

    def __init__(self, respond):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server name
                try:
                    respond(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/scifact.zip"

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def _send(length: int | None, body_chunks, pause: float = 0.0):
    def respond(handler):
        handler.send_response(200)
        if length is not None:
            handler.send_header("Content-Length", str(length))
        handler.end_headers()
        for chunk in body_chunks():
            handler.wfile.write(chunk)
            handler.wfile.flush()
            if pause:
                import time

                time.sleep(pause)
    return respond


def test_a_download_past_the_size_bound_is_refused(tmp_path):
    announced = _send(3 << 20, lambda: [b"x" * (3 << 20)])
    with _Server(announced) as url, pytest.raises(DownloadError, match="announces 3.0 MiB, more than the limit"):
        fetch_beir_archive(url, "0" * 32, tmp_path / "cache", max_bytes=1 << 20)
    unannounced = _send(None, lambda: (b"x" * (256 << 10) for _ in range(12)))
    with _Server(unannounced) as url, pytest.raises(DownloadError, match="more than the limit of 1.0 MiB received"):
        fetch_beir_archive(url, "0" * 32, tmp_path / "cache", max_bytes=1 << 20)
    assert _leftovers(tmp_path / "cache") == []


def test_a_slow_server_is_cut_off_at_the_total_time_bound(tmp_path):
    """Before: a 3 s timeout let a server that trickles bytes take 24 s."""
    import time

    trickle = _send(None, lambda: (b"x" for _ in range(100)), pause=0.2)
    started = time.monotonic()
    with _Server(trickle) as url, pytest.raises(DownloadError, match="not finished within 1.5 s"):
        fetch_beir_archive(url, "0" * 32, tmp_path / "cache", timeout=3, max_seconds=1.5)
    assert time.monotonic() - started < 6
    assert _leftovers(tmp_path / "cache") == []
