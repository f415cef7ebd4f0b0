"""The HTTP client: key handling, JSON requests, problem+json errors, retries and every operation
of the REST API v1."""

from __future__ import annotations

import email.utils
import json
import os
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, cast

from .types import (
    AccountEvents,
    App,
    AppDetail,
    AppsPage,
    AppSummary,
    CatalogPage,
    ConnectLink,
    Connection,
    ConnectionsPage,
    CustomConnector,
    CustomConnectorsPage,
    FieldError,
    FindToolsResult,
    Health,
    RunList,
    RunResult,
    Tool,
    Trigger,
    TriggerEvents,
    TriggersPage,
)

VERSION = "1.0.0"
DEFAULT_BASE_URL = "https://platform.example.com"
_RETRY_STATUSES = frozenset({429, 503})


class CompanionError(Exception):
    """An error answer of the platform (or a local failure: ``status`` 0 for a timeout or a
    network error), carrying the RFC 9457 problem fields."""

    def __init__(self, status: int, problem: Optional[Mapping[str, Any]] = None) -> None:
        problem = dict(problem or {})
        self.status = status
        self.code: Optional[str] = problem.get("code")
        self.detail: Optional[str] = problem.get("detail")
        self.request_id: Optional[str] = problem.get("request_id")
        self.retry_after: Optional[int] = problem.get("retry_after")
        self.connect_url: Optional[str] = problem.get("connect_url")
        self.errors: List[FieldError] = list(problem.get("errors") or [])
        #: Everything the server said (e.g. ``app``, ``run_id``, ``upstream_status``), as sent.
        self.problem: Dict[str, Any] = problem
        super().__init__(self.detail or problem.get("title") or f"HTTP {status}")

    def __repr__(self) -> str:
        return f"CompanionError(status={self.status}, code={self.code!r}, detail={self.detail!r}, request_id={self.request_id!r})"


def _retry_after(value: Optional[str]) -> Optional[int]:
    """``Retry-After`` as whole seconds: delta-seconds or an HTTP date; None when unusable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0, int(at.timestamp() - time.time() + 0.999))


def _query(**params: Any) -> str:
    kept = {k: str(v) for k, v in params.items() if v is not None and v != ""}
    return f"?{urllib.parse.urlencode(kept)}" if kept else ""


def _seg(value: str) -> str:
    return urllib.parse.quote(str(value), safe="")


class Client:
    """A client bound to one API key.

    ``api_key`` defaults to ``COMPANION_API_KEY`` and ``base_url`` to ``COMPANION_BASE_URL``.
    Answers with 429 or 503 are retried up to ``max_retries`` times, waiting ``Retry-After``
    when the server gives it (else an exponential, jittered backoff from ``retry_base_delay``);
    a wait longer than ``max_retry_delay`` seconds is not made: the error is raised at once with
    ``retry_after`` set. ``timeout`` (seconds) applies to each attempt.
    """

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        max_retry_delay: float = 60.0,
        retry_base_delay: float = 0.5,
        user_agent: Optional[str] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_key = api_key if api_key is not None else os.environ.get("COMPANION_API_KEY")
        self.base_url = (base_url or os.environ.get("COMPANION_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_delay = max_retry_delay
        self.retry_base_delay = retry_base_delay
        self.user_agent = user_agent or f"companion-python/{VERSION}"
        self._sleep = sleep

    def __repr__(self) -> str:
        # Never show the key: reprs end up in logs and tracebacks.
        return f"Client(base_url={self.base_url!r})"

    # --- catalog and apps -----------------------------------------------------------------------

    def health(self) -> Health:
        """``GET /health`` (no key needed)."""
        return cast(Health, self.request("GET", "/health", auth=False))

    def catalog(self, *, category: Optional[str] = None, cursor: Optional[str] = None, limit: Optional[int] = None) -> CatalogPage:
        """One page of the public app catalog (no key needed)."""
        return cast(CatalogPage, self.request("GET", "/catalog" + _query(category=category, cursor=cursor, limit=limit), auth=False))

    def iter_catalog(self, *, category: Optional[str] = None, limit: Optional[int] = None) -> Iterator[AppSummary]:
        """Every app of the catalog, page after page."""
        return self._iterate("apps", lambda cursor: self.catalog(category=category, cursor=cursor, limit=limit))

    def apps(self, *, search: Optional[str] = None, cursor: Optional[str] = None, limit: Optional[int] = None) -> AppsPage:
        """One page of apps with this account's connection status; ``search`` filters by words."""
        return cast(AppsPage, self.request("GET", "/apps" + _query(search=search, cursor=cursor, limit=limit)))

    def iter_apps(self, *, search: Optional[str] = None, limit: Optional[int] = None) -> Iterator[App]:
        return self._iterate("apps", lambda cursor: self.apps(search=search, cursor=cursor, limit=limit))

    def get_app(self, app: str) -> AppDetail:
        """One app by its slug, an alias or title ("gh", "google sheets") or an id an earlier
        catalog gave one of its documents; the answer names the canonical app (``id``)."""
        return cast(AppDetail, self.request("GET", f"/apps/{_seg(app)}"))

    # --- connections ----------------------------------------------------------------------------

    def connect(self, app: str, *, label: Optional[str] = None, redirect_url: Optional[str] = None) -> ConnectLink:
        """A one-time connect link for ``app``: send the user to its ``url``.

        ``redirect_url``, where the page sends the browser when done, must be ``https`` (plain
        ``http`` only to localhost, 127.0.0.0/8 or [::1]); anything else is an
        ``invalid_request`` error.
        """
        body: Dict[str, Any] = {}
        if label is not None:
            body["label"] = label
        if redirect_url is not None:
            body["redirect_url"] = redirect_url
        return cast(ConnectLink, self.request("POST", f"/apps/{_seg(app)}/connect", body))

    def connections(self, *, app: Optional[str] = None, cursor: Optional[str] = None, limit: Optional[int] = None) -> ConnectionsPage:
        return cast(ConnectionsPage, self.request("GET", "/connections" + _query(app=app, cursor=cursor, limit=limit)))

    def iter_connections(self, *, app: Optional[str] = None, limit: Optional[int] = None) -> Iterator[Connection]:
        return self._iterate("connections", lambda cursor: self.connections(app=app, cursor=cursor, limit=limit))

    def delete_connection(self, connection_id: str) -> None:
        """Revokes a connection and erases its secrets."""
        self.request("DELETE", f"/connections/{_seg(connection_id)}")

    # --- tools and runs -------------------------------------------------------------------------

    def find_tools(self, query: str, *, app: Optional[str] = None, limit: Optional[int] = None) -> FindToolsResult:
        """Tools for a task in plain words, best first."""
        body: Dict[str, Any] = {"query": query}
        if app is not None:
            body["app"] = app
        if limit is not None:
            body["limit"] = limit
        return cast(FindToolsResult, self.request("POST", "/tools/find", body))

    def get_tool(self, name: str) -> Tool:
        """One tool's detail: ``method``, ``path``, ``server_url``, ``auth`` (kinds and scopes),
        ``input_schema`` and ``example_input``. A name an earlier catalog issued answers with the
        tool under its current name."""
        return cast(Tool, self.request("GET", f"/tools/{_seg(name)}"))

    def run_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None, *, connection_id: Optional[str] = None) -> RunResult:
        """Runs a tool with an arguments object; ``connection_id`` picks a connection other than
        the app's default one."""
        body: Dict[str, Any] = {"arguments": dict(arguments or {})}
        if connection_id is not None:
            body["connection_id"] = connection_id
        return cast(RunResult, self.request("POST", f"/tools/{_seg(name)}/run", body))

    def runs(self) -> RunList:
        """The 25 latest runs, newest first."""
        return cast(RunList, self.request("GET", "/runs"))

    # --- custom connectors ----------------------------------------------------------------------

    def create_custom_connector(self, spec: Mapping[str, Any]) -> CustomConnector:
        """Registers an MCP server (``{"kind": "mcp", "url", "name"?, "headers"?}``) or a REST API
        from an OpenAPI document (``{"kind": "rest", "openapi" | "url", "name"?, "base_url"?,
        "headers"?}``)."""
        return cast(CustomConnector, self.request("POST", "/custom-connectors", dict(spec)))

    def custom_connectors(self, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> CustomConnectorsPage:
        return cast(CustomConnectorsPage, self.request("GET", "/custom-connectors" + _query(cursor=cursor, limit=limit)))

    def iter_custom_connectors(self, *, limit: Optional[int] = None) -> Iterator[CustomConnector]:
        return self._iterate("custom_connectors", lambda cursor: self.custom_connectors(cursor=cursor, limit=limit))

    def get_custom_connector(self, connector_id: str) -> CustomConnector:
        return cast(CustomConnector, self.request("GET", f"/custom-connectors/{_seg(connector_id)}"))

    def refresh_custom_connector(self, connector_id: str) -> CustomConnector:
        """Reloads the connector's tool list from its URL (one created from an inline document
        has nothing to fetch again: 422 ``not_refreshable``)."""
        return cast(CustomConnector, self.request("POST", f"/custom-connectors/{_seg(connector_id)}/refresh"))

    def delete_custom_connector(self, connector_id: str) -> None:
        self.request("DELETE", f"/custom-connectors/{_seg(connector_id)}")

    # --- triggers and account events ------------------------------------------------------------

    def trigger_events(self, *, app: str) -> TriggerEvents:
        """The events triggers can listen for in one app (the platform requires the app)."""
        return cast(TriggerEvents, self.request("GET", "/triggers/events" + _query(app=app)))

    def create_trigger(
        self,
        app: str,
        event: str,
        webhook_url: str,
        *,
        connection_id: Optional[str] = None,
        filter: Optional[Mapping[str, Any]] = None,
        params: Optional[Mapping[str, Any]] = None,
    ) -> Trigger:
        """A new trigger. The answer's ``secret`` (``whsec_…``) is shown only here: keep it to
        verify deliveries with :func:`companion.verify_webhook`."""
        body: Dict[str, Any] = {"app": app, "event": event, "webhook_url": webhook_url}
        if connection_id is not None:
            body["connection_id"] = connection_id
        if filter is not None:
            body["filter"] = dict(filter)
        if params is not None:
            body["params"] = dict(params)
        return cast(Trigger, self.request("POST", "/triggers", body))

    def triggers(self, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> TriggersPage:
        return cast(TriggersPage, self.request("GET", "/triggers" + _query(cursor=cursor, limit=limit)))

    def iter_triggers(self, *, limit: Optional[int] = None) -> Iterator[Trigger]:
        return self._iterate("triggers", lambda cursor: self.triggers(cursor=cursor, limit=limit))

    def get_trigger(self, trigger_id: str) -> Trigger:
        return cast(Trigger, self.request("GET", f"/triggers/{_seg(trigger_id)}"))

    def delete_trigger(self, trigger_id: str) -> None:
        self.request("DELETE", f"/triggers/{_seg(trigger_id)}")

    def enable_trigger(self, trigger_id: str) -> Trigger:
        """Re-enables a trigger the platform disabled (e.g. after failed deliveries)."""
        return cast(Trigger, self.request("POST", f"/triggers/{_seg(trigger_id)}/enable"))

    def events(self, *, limit: Optional[int] = None) -> AccountEvents:
        """Account events (``connection.expired``, ``trigger.disabled``, …), newest first."""
        return cast(AccountEvents, self.request("GET", "/events" + _query(limit=limit)))

    # --- core -----------------------------------------------------------------------------------

    @staticmethod
    def _iterate(field: str, fetch_page: Callable[[Optional[str]], Any]) -> Iterator[Any]:
        cursor: Optional[str] = None
        while True:
            page = fetch_page(cursor)
            yield from page.get(field) or []
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def request(self, method: str, path: str, body: Any = None, *, auth: bool = True) -> Any:
        """One API call: JSON in and out, problems raised as :class:`CompanionError`, 429/503
        retried with backoff (honouring ``Retry-After``)."""
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if auth:
            if not self.api_key:
                raise CompanionError(0, {"code": "missing_api_key", "detail": "No API key: pass api_key or set COMPANION_API_KEY."})
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        url = f"{self.base_url}/api/v1{path}"
        attempt = 0
        while True:
            status, raw, retry_header = self._send(method, url, headers, data)
            if 200 <= status < 300:
                return _decode(status, raw)
            problem = _problem(raw)
            retry_after = _retry_after(retry_header)
            if retry_after is not None and problem.get("retry_after") is None:
                problem["retry_after"] = retry_after
            error = CompanionError(status, problem)
            if status not in _RETRY_STATUSES or attempt >= self.max_retries:
                raise error
            if retry_after is not None:
                delay = float(retry_after)
            else:
                base = self.retry_base_delay * (2**attempt)
                delay = min(self.max_retry_delay, base / 2 + random.random() * base / 2)
            # A wait longer than allowed would only hold the caller up: give the error back now,
            # with retry_after saying when to come back.
            if delay > self.max_retry_delay:
                raise error
            self._sleep(delay)
            attempt += 1

    def _send(self, method: str, url: str, headers: Dict[str, str], data: Optional[bytes]) -> "tuple[int, bytes, Optional[str]]":
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        where = f"{method} {url.split('?')[0]}"
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.read(), resp.headers.get("Retry-After")
        except urllib.error.HTTPError as err:
            with err:
                return err.code, err.read(), err.headers.get("Retry-After")
        except (socket.timeout, TimeoutError):
            raise CompanionError(0, {"code": "timeout", "detail": f"No response within {self.timeout} s: {where}"}) from None
        except urllib.error.URLError as err:
            if isinstance(err.reason, (socket.timeout, TimeoutError)):
                raise CompanionError(0, {"code": "timeout", "detail": f"No response within {self.timeout} s: {where}"}) from None
            raise CompanionError(0, {"code": "network_error", "detail": f"{where} failed: {err.reason}"}) from None
        except OSError as err:
            raise CompanionError(0, {"code": "network_error", "detail": f"{where} failed: {err}"}) from None


def _decode(status: int, raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise CompanionError(status, {"code": "invalid_response", "detail": f"Response is not JSON: {raw[:200]!r}"}) from None


def _problem(raw: bytes) -> Dict[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"detail": raw[:200].decode(errors="replace")}
    return dict(value) if isinstance(value, dict) else {}
