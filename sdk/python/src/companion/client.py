"""HTTP client core: key handling, JSON requests and problem+json errors."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

VERSION = "1.0.0"
DEFAULT_BASE_URL = "https://platform.example.com"


class CompanionError(Exception):
    """An error response of the platform, carrying the RFC 9457 problem fields."""

    def __init__(self, status: int, problem: dict[str, Any] | None = None) -> None:
        problem = problem or {}
        self.status = status
        self.code: str | None = problem.get("code")
        self.detail: str | None = problem.get("detail")
        self.request_id: str | None = problem.get("request_id")
        self.retry_after: float | None = problem.get("retry_after")
        self.connect_url: str | None = problem.get("connect_url")
        super().__init__(self.detail or problem.get("title") or f"HTTP {status}")


class Client:
    """A client bound to one API key (from ``COMPANION_API_KEY`` unless given)."""

    def __init__(self, api_key: str | None = None, base_url: str | None = None, timeout: float = 30.0) -> None:
        self.api_key = api_key if api_key is not None else os.environ.get("COMPANION_API_KEY")
        self.base_url = (base_url or os.environ.get("COMPANION_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.timeout = timeout

    def __repr__(self) -> str:
        # Never show the key: reprs end up in logs and tracebacks.
        return f"Client(base_url={self.base_url!r})"

    def catalog(self, cursor: str | None = None, category: str | None = None) -> Any:
        """The public app catalog (no key needed)."""
        query = {k: v for k, v in (("cursor", cursor), ("category", category)) if v}
        path = "/catalog" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        return self.request("GET", path, auth=False)

    def request(self, method: str, path: str, body: Any = None, auth: bool = True) -> Any:
        headers = {"Accept": "application/json", "User-Agent": f"companion-python/{VERSION}"}
        if auth:
            if not self.api_key:
                raise CompanionError(401, {"code": "missing_api_key", "detail": "No API key: pass api_key or set COMPANION_API_KEY."})
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(f"{self.base_url}/api/v1{path}", data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return _decode(resp.status, resp.read())
        except urllib.error.HTTPError as err:
            raise CompanionError(err.code, _decode(err.code, err.read(), strict=False) or {}) from None


def _decode(status: int, raw: bytes, strict: bool = True) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        if strict:
            raise CompanionError(status, {"detail": f"Response is not JSON: {raw[:200]!r}"}) from None
        return {"detail": raw[:200].decode(errors="replace")}
