"""Start and stop a throw-away JupyterLab server, and find the browser, for tests/integration/test_browser.py.

The server never touches the user's Jupyter setup: config, data, runtime, IPython, user
settings and workspaces all live in a temporary folder, it listens on a free loopback port
with a random token, and news and update checks are off (the test machines have no
network). :meth:`LabServer.stop` shuts the kernels down through the REST API, then the
server, and kills by pid whatever of the processes it started is still alive.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

import requests

#: Where Debian's ``apt-get install chromium`` puts the browser (what .ci/run installs).
CHROMIUM = "/usr/bin/chromium"
#: Flags for Chromium as root on a machine without network: no sandbox (root), no GPU, and
#: none of the background traffic (component updates, sync, QUIC probes) that floods a
#: closed network and slows the page down.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

#: JupyterLab user settings for the test: no news, no update check, no autosave (the
#: notebook on disk must stay as it was), and every cell kept in the DOM so that selectors
#: see the whole notebook.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def in_ci() -> bool:
    """True on a CI machine (``CI=true``, as GitHub Actions, GitLab and most others set it)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def require_distributions(names: Sequence[str], what: str) -> None:
    """Skip ``what`` when a distribution it needs is not installed, or fail it under ``CI=true``
    (the names are distributions: importing ``phoenix`` itself takes half a minute)."""
    import importlib.metadata

    import pytest

    missing = []
    for name in names:
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        message = f"{what} needs {', '.join(missing)}: pip install -e '.[exports]'"
        if in_ci():
            pytest.fail(f"CI=true and {message}")
        pytest.skip(message)


def find_chromium() -> str | None:
    """The Chromium executable: ``RAGSTAGE_CHROMIUM``, else Debian's, else ``chromium`` on PATH."""
    for candidate in (os.environ.get("RAGSTAGE_CHROMIUM"), CHROMIUM, shutil.which("chromium")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def chromium_or_skip() -> str:
    """Chromium's path, with Playwright importable; else skip the test (locally) or fail it (CI)."""
    import pytest

    problem = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        problem = f"the playwright package is not installed ({exc}); pip install -e '.[dev]'"
    path = find_chromium()
    if problem is None and path is None:
        problem = ("no Chromium at /usr/bin/chromium (or RAGSTAGE_CHROMIUM, or `chromium` on PATH); "
                   "install Debian's: apt-get install chromium (never `playwright install`)")
    if problem:
        if in_ci():
            pytest.fail(f"CI=true and the browser test cannot run: {problem}. .ci/run installs chromium.")
        pytest.skip(problem)
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def jupyter_lab_command() -> list[str]:
    """``jupyter lab`` of this environment, as ``make lab`` runs it (``.venv/bin/jupyter lab``)."""
    jupyter = Path(sys.executable).with_name("jupyter")
    if jupyter.is_file():
        return [str(jupyter), "lab"]
    return [sys.executable, "-m", "jupyterlab"]


def _children(pid: int) -> list[int]:
    """Pids of the live direct children of ``pid`` (Linux /proc; empty elsewhere)."""
    out = []
    proc = Path("/proc")
    if not proc.is_dir():
        return out
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may contain spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie still answers kill(0); it is gone for our purposes
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
        return state[state.rfind(")") + 2:].split()[0] != "Z"
    except OSError:
        return True


class LabServer:
    """``jupyter lab`` on a free loopback port with a temporary token and temporary dirs.

    ``cwd`` is where the command runs and ``args`` are passed before the options (e.g. the
    notebook to open, as ``make lab`` does). ``root_dir`` is passed as
    ``--ServerApp.root_dir`` when given; otherwise Jupyter picks it as it would for a reader.
    """

    def __init__(self, cwd: Path, state_dir: Path, args: Sequence[str] = (), root_dir: Path | None = None,
                 start_timeout: float = 60.0) -> None:
        self.cwd = Path(cwd)
        self.root_dir = Path(root_dir) if root_dir is not None else None
        self.state_dir = Path(state_dir)
        self.args = list(args)
        self.start_timeout = start_timeout
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = self.state_dir / "jupyterlab.log"
        self.proc: subprocess.Popen | None = None
        self._log = None

    # -- urls -------------------------------------------------------------------------------
    def url(self, path: str) -> str:
        """``path`` on this server with the token appended."""
        sep = "&" if "?" in path else "?"
        return f"{self.base}/{path.lstrip('/')}{sep}token={self.token}"

    def get(self, path: str, timeout: float = 10.0) -> requests.Response:
        return requests.get(self.url(path), timeout=timeout)

    def log_tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no server log)"
        return "\n".join(lines[-n:])

    # -- lifecycle --------------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        for name, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                          ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
            path = self.state_dir / sub
            path.mkdir(parents=True, exist_ok=True)
            env[name] = str(path)
        env.pop("JUPYTER_TOKEN", None)
        env.pop("JUPYTER_PLATFORM_DIRS", None)
        # tests/conftest.py sets MPLBACKEND=Agg for pytest; the kernel should plot inline as
        # a reader's kernel does.
        env.pop("MPLBACKEND", None)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def _write_settings(self) -> Path:
        settings = self.state_dir / "user-settings"
        for rel, value in LAB_SETTINGS.items():
            path = settings / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value, indent=2), encoding="utf-8")
        return settings

    def command(self) -> list[str]:
        settings = self._write_settings()
        workspaces = self.state_dir / "workspaces"
        workspaces.mkdir(parents=True, exist_ok=True)
        cmd = [*jupyter_lab_command(), *self.args,
               "--no-browser",
               "--ip=127.0.0.1",
               f"--port={self.port}",
               "--port-retries=0",
               f"--IdentityProvider.token={self.token}",
               f"--LabApp.user_settings_dir={settings}",
               f"--LabApp.workspaces_dir={workspaces}",
               "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly",
               "--ServerApp.shutdown_no_activity_timeout=600",
               "--MappingKernelManager.cull_idle_timeout=0"]
        if self.root_dir is not None:
            cmd.append(f"--ServerApp.root_dir={self.root_dir}")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # CI containers run as root
        return cmd

    def start(self) -> "LabServer":
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.command(), cwd=self.cwd, env=self._env(), stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"jupyter lab exited with code {self.proc.returncode} before answering:\n"
                                   f"{self.log_tail()}")
            try:
                response = self.get("api/status", timeout=2)
                if response.status_code == 200:
                    return self
                last = f"HTTP {response.status_code}"
            except requests.RequestException as exc:
                last = type(exc).__name__
            time.sleep(0.25)
        self.stop()
        raise TimeoutError(f"jupyter lab did not answer /api/status within {self.start_timeout:.0f}s "
                           f"(last: {last}):\n{self.log_tail()}")

    def stop(self, timeout: float = 15.0) -> None:
        """Shut down kernels and server; kill (by pid) any process of ours still alive."""
        proc = self.proc
        if proc is None:
            return
        ours = _descendants(proc.pid)  # kernels run in their own sessions: remember them now
        if proc.poll() is None:
            try:
                for kernel in self.get("api/kernels", timeout=5).json():
                    requests.delete(self.url(f"api/kernels/{kernel['id']}"), timeout=10)
            except (requests.RequestException, ValueError, KeyError, TypeError):
                pass
            try:
                requests.post(self.url("api/shutdown"), timeout=5)
            except requests.RequestException:
                pass
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        for pid in ours:
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "LabServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
