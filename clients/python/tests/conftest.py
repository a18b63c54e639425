"""The real server for the client's tests: one ``verdict serve`` per database (SQLite,
then PostgreSQL) for the whole session, seeded through the CLI.

``VERDICT_BIN`` names the binary (required: the tests talk HTTP to it, nothing is
mocked). ``TEST_DATABASE_URL`` names a PostgreSQL server, on which each session makes a
database of its own and drops it after; without it the PostgreSQL tests are skipped,
unless ``VERDICT_REQUIRE_POSTGRES=1``, which makes that a failure.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from helpers import PASSWORD

from verdict_client import AsyncClient, Client

#: The accounts each server is seeded with, by username, and their roles.
ACCOUNTS = {"admin": "admin", "lead": "lead", "rater": "rater", "rater2": "rater"}


def binary() -> Path:
    """The server binary from ``VERDICT_BIN``; the session fails without it."""
    given = os.environ.get("VERDICT_BIN")
    if not given:
        pytest.fail("set VERDICT_BIN to a verdict binary (cargo build; target/debug/verdict)")
    path = Path(given).resolve()
    if not os.access(path, os.X_OK):
        pytest.fail(f"VERDICT_BIN={given} is not an executable file")
    return path


@dataclass
class Server:
    """A running ``verdict serve`` on its own database, with an API token per account."""

    backend: str
    database_url: str
    base_url: str
    tokens: dict[str, str]
    log: Path
    process: subprocess.Popen = field(repr=False)

    def client(self, username: str, **options) -> Client:
        """A blocking client signed in as ``username``."""
        return Client(self.base_url, self.tokens[username], **options)

    def async_client(self, username: str) -> AsyncClient:
        """An asyncio client signed in as ``username``."""
        return AsyncClient(self.base_url, self.tokens[username])


def run(bin_path: Path, env: dict[str, str], *args: str, stdin: str = "") -> str:
    """Runs a CLI command of the server; its standard output, or the test fails with
    what it printed."""
    done = subprocess.run(
        [str(bin_path), *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        pytest.fail(f"verdict {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def start(bin_path: Path, backend: str, database_url: str, workdir: Path) -> Server:
    """Seeds the database through the CLI and starts the server on a free port."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "RUST_LOG": "warn",
        "VERDICT_NO_PYODIDE_INSTALL": "1",
    }
    run(bin_path, env, "migrate")
    tokens = {}
    for username, role in ACCOUNTS.items():
        run(
            bin_path,
            env,
            "user",
            "add",
            "--username",
            username,
            "--role",
            role,
            "--password-stdin",
            stdin=PASSWORD + "\n",
        )
        tokens[username] = run(
            bin_path, env, "token", "create", "--username", username, "--name", "pytest"
        ).strip()
    log = workdir / f"server-{backend}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(bin_path), "serve", "--bind", "127.0.0.1:0"],
            env={**env, "RUST_LOG": "info,sqlx=warn,tower_http=warn"},
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )
    # The server binds first, then says where: port 0 needs no guess and no retry.
    deadline = time.monotonic() + 60
    address = None
    while address is None:
        if process.poll() is not None:
            pytest.fail(f"verdict serve exited ({process.returncode}):\n{log.read_text()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"verdict serve did not say where it listens:\n{log.read_text()}")
        found = re.search(r"listening on (http://[0-9.]+:[0-9]+)", log.read_text())
        address = found.group(1) if found else None
        time.sleep(0.05)
    assert httpx.get(f"{address}/healthz", timeout=10).status_code == 200
    return Server(backend, database_url, address, tokens, log, process)


def stop(server: Server) -> None:
    """SIGTERM (the server finishes what is under way), then SIGKILL after 10 s."""
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


def postgres_url() -> str | None:
    """The PostgreSQL server to test on, or ``None`` (then the tests skip, or fail when
    ``VERDICT_REQUIRE_POSTGRES=1``)."""
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        return url
    if os.environ.get("VERDICT_REQUIRE_POSTGRES") == "1":
        pytest.fail("VERDICT_REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set")
    pytest.skip("TEST_DATABASE_URL is not set: no PostgreSQL to test on")
    return None


def psql(url: str, sql: str) -> None:
    """Runs one statement on the PostgreSQL server at ``url``."""
    if shutil.which("psql") is None:
        pytest.fail("psql is needed to make the test database")
    subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qc", sql], check=True, timeout=60)


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """A seeded server per database, shared by every test of the session: each test
    makes batches of its own (see ``name``), so they do not meet."""
    bin_path = binary()
    workdir = Path(tempfile.mkdtemp(prefix=f"verdict-py-{request.param}-"))
    created = None
    try:
        if request.param == "sqlite":
            url = f"sqlite://{workdir}/verdict.db"
        else:
            admin_url = postgres_url()
            assert admin_url is not None
            created = f"verdict_py_{secrets.token_hex(6)}"
            psql(admin_url, f"CREATE DATABASE {created}")
            parts = urllib.parse.urlsplit(admin_url)
            url = urllib.parse.urlunsplit(parts._replace(path="/" + created))
        running = start(bin_path, request.param, url, workdir)
        try:
            yield running
        finally:
            stop(running)
            errors = [
                line
                for line in running.log.read_text().splitlines()
                if " ERROR " in line or "panicked" in line
            ]
            assert not errors, "errors in the server's log:\n" + "\n".join(errors[:20])
    finally:
        if created is not None:
            psql(admin_url, f"DROP DATABASE IF EXISTS {created} WITH (FORCE)")
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def admin(server: Server) -> Iterator[Client]:
    with server.client("admin") as client:
        yield client


@pytest.fixture
def lead(server: Server) -> Iterator[Client]:
    with server.client("lead") as client:
        yield client


@pytest.fixture
def rater(server: Server) -> Iterator[Client]:
    with server.client("rater") as client:
        yield client


@pytest.fixture
def rater2(server: Server) -> Iterator[Client]:
    with server.client("rater2") as client:
        yield client


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A batch name no other test uses."""
    return f"{request.node.originalname}-{uuid.uuid4().hex[:8]}"
