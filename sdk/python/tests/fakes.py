"""Third parties on loopback for the integration tests: an OAuth 2.0 provider that approves at
once, the app's API (answers every call with what it received), an OpenAPI document for a custom
REST connector, and a webhook receiver that keeps raw bodies for signature checks."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

OPENAPI = {
    "openapi": "3.0.3",
    "info": {"title": "Echo", "version": "1.0.0"},
    "paths": {
        "/api/echo": {
            "post": {
                "operationId": "echo",
                "summary": "Echo a message back",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}}}},
                "responses": {"200": {"description": "The message."}},
            }
        }
    },
}


class Fakes:
    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.deliveries: list[dict] = []
        self.tokens = 0
        self.dirs: list[Path] = []
        fakes = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                url = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(url.query))
                if url.path == "/authorize":
                    back = q["redirect_uri"]
                    sep = "&" if "?" in back else "?"
                    self.send_response(302)
                    self.send_header("Location", back + sep + urllib.parse.urlencode({"code": "code_from_fake", "state": q.get("state", "")}))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if url.path == "/token":
                    fakes.tokens += 1
                    return self._json(200, {"access_token": f"tok_{fakes.tokens}", "token_type": "bearer", "expires_in": 3600, "refresh_token": "refresh_fake"})
                if url.path == "/done":
                    return self._json(200, q)
                if url.path == "/hook":
                    fakes.deliveries.append({"headers": {k.lower(): v for k, v in self.headers.items()}, "body": raw})
                    return self._json(200, {"received": True})
                if url.path == "/openapi.json":
                    return self._json(200, OPENAPI)
                fakes.calls.append({"method": self.command, "path": url.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": raw})
                self._json(200, {"ok": True, "method": self.command, "path": url.path, "items": [{"id": f"item_{len(fakes.calls)}", "title": "from the fake"}]})

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815

            def _json(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> "Fakes":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def oauth_apps_file(self, apps: list[str]) -> str:
        """OAUTH_APPS for the given catalog apps, all served by this fake."""
        conf = {
            app: {
                "client_id": f"client_{app}",
                "client_secret": f"secret_{app}",
                "authorize_url": f"{self.url}/authorize",
                "token_url": f"{self.url}/token",
                "base_url": self.url,
                "pkce": True,
            }
            for app in apps
        }
        self.dirs.append(Path(tempfile.mkdtemp(prefix="sdk-oauth-")))
        path = self.dirs[-1] / "oauth_apps.json"
        path.write_text(json.dumps(conf))
        return str(path)

    def runnable_catalog_file(self, fixture: Path) -> str:
        """The fixture catalog made runnable against this fake: each app gets ``base_url`` and an
        OAuth 2.0 scheme, each tool an operation (``method``, ``path``) and an input schema in the
        catalog's path/query/header/body groups."""
        catalog = json.loads(Path(fixture).read_text())
        for app in catalog["apps"]:
            app["base_url"] = self.url
            app["security_schemes"] = {
                "oauth": {"type": "oauth2", "flows": {"authorizationCode": {"authorizationUrl": f"{self.url}/authorize", "tokenUrl": f"{self.url}/token", "scopes": {"write": "write"}}}}
            }
            app["security"] = [{"oauth": ["write"]}]
            for tool in app["tools"]:
                # List tools read (GET): triggers poll them; the rest write.
                tool["method"] = "GET" if "_list_" in tool["name"] else "POST"
                tool["path"] = f"/api/{tool['name']}"
                schema = tool.get("input_schema", {"type": "object"})
                if tool["method"] == "GET":
                    tool["input_schema"] = {"type": "object", "properties": {"query": schema}}
                else:
                    tool["input_schema"] = {"type": "object", "required": ["body"], "properties": {"body": schema}}
        self.dirs.append(Path(tempfile.mkdtemp(prefix="sdk-catalog-")))
        path = self.dirs[-1] / "catalog.json"
        path.write_text(json.dumps(catalog))
        return str(path)

    def stop(self) -> None:
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)
        self.server.shutdown()
        self.server.server_close()
