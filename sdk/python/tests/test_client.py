"""Wire-level behaviour the platform cannot be made to show on demand (a 503 that clears, a
server that never answers, an HTTP-date Retry-After), against a real HTTP server on loopback.
What the platform itself answers is tested in test_platform.py."""

import email.utils
import json
import os
import sys
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from companion import VERSION, Client, CompanionError  # noqa: E402


class Handler(BaseHTTPRequestHandler):
    seen: list = []
    script: list = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        Handler.seen.append((self.path, dict(self.headers)))
        step = Handler.script.pop(0) if Handler.script else None
        if step is None:
            self._send(200, "application/json", {"apps": [{"id": "slack"}], "next_cursor": None})
        elif step == "hang":
            time.sleep(1.5)
        elif step == "stall":
            # Headers, then part of the body, then nothing.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"{")
            self.wfile.flush()
            time.sleep(1.5)
        else:
            status, code, extra = step
            self._send(status, "application/problem+json", {"status": status, "code": code, "detail": "scripted", "request_id": "req_0000000000000001"}, extra)

    def _send(self, status: int, ctype: str, body: dict, extra: dict | None = None) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args) -> None:
        pass


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        cls.server.daemon_threads = True
        cls.thread = threading.Thread(target=cls.server.serve_forever, daemon=True)
        cls.thread.start()
        cls.base_url = f"http://127.0.0.1:{cls.server.server_address[1]}"

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self) -> None:
        Handler.script = []

    def test_user_agent_and_public_calls_without_the_key(self) -> None:
        page = Client(api_key="cpk_secret", base_url=self.base_url).catalog(category="messaging")
        self.assertEqual(page["apps"], [{"id": "slack"}])
        path, headers = Handler.seen[-1]
        self.assertEqual(path, "/api/v1/catalog?category=messaging")
        self.assertNotIn("Authorization", headers)
        self.assertEqual(headers["User-Agent"], f"companion-python/{VERSION}")
        self.assertEqual(VERSION, "1.0.0")

    def test_503_is_retried_with_growing_backoff_then_succeeds(self) -> None:
        Handler.script = [(503, "store_unavailable", {}), (503, "store_unavailable", {})]
        waits: list = []
        page = Client(api_key="cpk_x", base_url=self.base_url, retry_base_delay=0.1, sleep=waits.append).apps()
        self.assertEqual(page["apps"][0]["id"], "slack")
        self.assertEqual(len(waits), 2)
        self.assertTrue(0.05 <= waits[0] <= 0.1 and 0.1 <= waits[1] <= 0.2, waits)

    def test_retry_after_as_http_date_is_honoured(self) -> None:
        at = email.utils.formatdate(time.time() + 5, usegmt=True)
        Handler.script = [(429, "rate_limited", {"Retry-After": at})]
        waits: list = []
        Client(api_key="cpk_x", base_url=self.base_url, sleep=waits.append).apps()
        self.assertEqual(len(waits), 1)
        self.assertTrue(3 <= waits[0] <= 6, waits)

    def test_other_errors_are_not_retried(self) -> None:
        Handler.script = [(500, "internal", {})]
        before = len(Handler.seen)

        def no_wait(_: float) -> None:
            raise AssertionError("no retry")

        with self.assertRaises(CompanionError) as ctx:
            Client(api_key="cpk_x", base_url=self.base_url, sleep=no_wait).apps()
        self.assertEqual(ctx.exception.status, 500)
        self.assertEqual(len(Handler.seen) - before, 1)

    def test_a_server_that_does_not_answer_times_out(self) -> None:
        Handler.script = ["hang"]
        with self.assertRaises(CompanionError) as ctx:
            Client(api_key="cpk_x", base_url=self.base_url, timeout=0.3).apps()
        self.assertEqual((ctx.exception.status, ctx.exception.code), (0, "timeout"))

    def test_a_server_that_stalls_after_the_headers_times_out(self) -> None:
        Handler.script = ["stall"]
        with self.assertRaises(CompanionError) as ctx:
            Client(api_key="cpk_x", base_url=self.base_url, timeout=0.3).apps()
        self.assertEqual(ctx.exception.code, "timeout")

    def test_an_unreachable_platform_is_a_network_error(self) -> None:
        with self.assertRaises(CompanionError) as ctx:
            Client(api_key="cpk_x", base_url="http://127.0.0.1:9", max_retries=0).apps()
        self.assertEqual(ctx.exception.code, "network_error")

    def test_environment_defaults_and_the_key_never_shown(self) -> None:
        env = {"COMPANION_API_KEY": "cpk_from_env", "COMPANION_BASE_URL": self.base_url + "/"}
        with mock.patch.dict(os.environ, env):
            client = Client()
            self.assertEqual(client.base_url, self.base_url)
            client.apps()
            self.assertEqual(Handler.seen[-1][1]["Authorization"], "Bearer cpk_from_env")
            self.assertNotIn("cpk_from_env", repr(client))
            self.assertNotIn("cpk_from_env", str(client))


if __name__ == "__main__":
    unittest.main()
