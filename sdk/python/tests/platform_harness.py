"""Test harness: the real platform (``api --local``) over DynamoDB Local, on a table of its own.

``PLATFORM_API_BIN`` names the ``api`` binary and ``DDB_ENDPOINT`` the DynamoDB Local endpoint;
both are required (.ci/test sets them): a missing one fails the tests, it never skips them.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FIXTURE_CATALOG = ROOT / "lambdas/platform/tests/fixtures/catalog.json"
SRC = Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))


def required(name: str, what: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise AssertionError(f"{name} must be set: {what}")
    return value


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Platform:
    def __init__(self) -> None:
        self.bin = required("PLATFORM_API_BIN", "the path of the platform's `api` binary")
        ddb = required("DDB_ENDPOINT", "the DynamoDB Local endpoint, e.g. http://127.0.0.1:8000")
        self.table = f"sdk-py-{int(time.time() * 1000)}-{secrets.token_hex(4)}"
        self.env = {
            **os.environ,
            "DDB_ENDPOINT": ddb,
            "TABLE_NAME": self.table,
            "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "local"),
            "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "local"),
            "AWS_REGION": os.environ.get("AWS_REGION", "us-east-1"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "CATALOG_PATH": str(FIXTURE_CATALOG),
            # For the integration endpoints (connections, runs, connectors, triggers): local
            # upstreams and webhook receivers on loopback allowed, credentials sealed with a
            # test key.
            "PLATFORM_OUTBOUND_ALLOW": "127.0.0.1,localhost",
            "CREDENTIALS_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            "RUST_LOG": "warn",
        }
        self.proc: subprocess.Popen | None = None
        self.base_url = ""
        self._log: list[bytes] = []
        self._table_created = False

    def admin(self, *args: str) -> dict:
        out = subprocess.run([self.bin, "admin", *args], env=self.env, capture_output=True, timeout=60)
        if out.returncode != 0:
            raise AssertionError(f"api admin {args[0]} failed: {out.stderr.decode(errors='replace')}")
        return json.loads(out.stdout)

    def account(self, label: str = "acct") -> str:
        """A new account; returns its API key."""
        return self.admin("create-account", "--email", f"{label}-{secrets.token_hex(6)}@example.com")["api_key"]

    def start(self, env: dict | None = None) -> "Platform":
        """Starts ``api --local``; ``env`` adds variables (e.g. OAUTH_APPS)."""
        if not self._table_created:
            self.admin("create-table")
            self._table_created = True
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        self.run_env = {**self.env, "PUBLIC_BASE_URL": self.base_url, **(env or {})}
        self.proc = subprocess.Popen(
            [self.bin, "--local", f"127.0.0.1:{port}"],
            env=self.run_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        if not re.match(r"^listening on http://", line):
            self.stop()
            raise AssertionError(f"api --local did not start: {line!r}\n{b''.join(self._log).decode(errors='replace')[-5000:]}")
        threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True).start()
        return self

    def _drain(self, stream) -> None:
        for chunk in iter(lambda: stream.readline(), b""):
            self._log.append(chunk)
            del self._log[:-200]

    def jobs_once(self) -> str:
        """One round of the jobs function (trigger polls and webhook deliveries) against this
        platform's table and configuration: ``jobs --once``. PLATFORM_JOBS_BIN names the binary."""
        jobs = required("PLATFORM_JOBS_BIN", "the path of the platform's `jobs` binary")
        out = subprocess.run([jobs, "--once"], env=self.run_env, capture_output=True, timeout=120)
        if out.returncode != 0:
            raise AssertionError(f"jobs --once failed: {out.stderr.decode(errors='replace')[-3000:]}")
        return out.stdout.decode()

    def stop(self) -> None:
        if not self.proc:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
