"""The client against a real HTTP server on loopback: what goes on the wire and how problems come back."""

import json
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from companion import Client, CompanionError  # noqa: E402


class Handler(BaseHTTPRequestHandler):
    seen: list = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        Handler.seen.append((self.path, dict(self.headers)))
        if self.path.startswith("/api/v1/catalog"):
            self._send(200, "application/json", {"apps": [{"id": "slack"}], "next_cursor": None})
        else:
            self._send(401, "application/problem+json", {"title": "Unauthorized", "status": 401, "code": "invalid_api_key", "detail": "Unknown key.", "request_id": "req_1"})

    def _send(self, status: int, ctype: str, body: dict) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args) -> None:
        pass


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        cls.thread = threading.Thread(target=cls.server.serve_forever, daemon=True)
        cls.thread.start()
        cls.base_url = f"http://127.0.0.1:{cls.server.server_address[1]}"

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.shutdown()
        cls.server.server_close()

    def test_catalog_is_fetched_without_the_key(self) -> None:
        page = Client(api_key="ck_secret", base_url=self.base_url).catalog(category="messaging")
        self.assertEqual(page["apps"], [{"id": "slack"}])
        path, headers = Handler.seen[-1]
        self.assertEqual(path, "/api/v1/catalog?category=messaging")
        self.assertNotIn("Authorization", headers)
        self.assertEqual(headers["User-Agent"], "companion-python/1.0.0")

    def test_problem_becomes_error_with_fields(self) -> None:
        client = Client(api_key="ck_bad", base_url=self.base_url)
        with self.assertRaises(CompanionError) as ctx:
            client.request("GET", "/connections")
        err = ctx.exception
        self.assertEqual((err.status, err.code, err.request_id), (401, "invalid_api_key", "req_1"))
        self.assertEqual(Handler.seen[-1][1]["Authorization"], "Bearer ck_bad")

    def test_repr_never_shows_the_key(self) -> None:
        self.assertNotIn("ck_secret", repr(Client(api_key="ck_secret", base_url=self.base_url)))


if __name__ == "__main__":
    unittest.main()
