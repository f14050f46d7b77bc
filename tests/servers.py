"""Helpers for tests that need real server processes or a throwaway PostgreSQL database."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.settings import ROOT

POSTGRES_ENV = "KB_TEST_POSTGRES_URL"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def postgres_database():
    """A fresh database on the test server, dropped afterwards; skips (fails in CI) without a server."""
    admin_url = os.environ.get(POSTGRES_ENV)
    if not admin_url:
        pytest.skip(f"{POSTGRES_ENV} is not set (CI sets it and requires these tests)")
    name = f"kb_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


class ServerProcess:
    """`kb serve` in its own process (so it can be killed with SIGKILL), on a free loopback port."""

    def __init__(self, env: dict[str, str], log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "KB_RELEASES_DIR": str(ROOT / "data" / "verl"),
            **env,
            "KB_HOST": "127.0.0.1",
            "KB_PORT": str(self.port),
        }
        self.log = log
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> ServerProcess:
        handle = open(self.log, "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app", "serve"], cwd=ROOT, env=self.env, stdout=handle, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            time.sleep(0.2)
        raise RuntimeError(f"server not healthy in {timeout}s: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
