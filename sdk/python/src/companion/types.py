"""Shapes of the platform's answers (REST API v1), as ``TypedDict``s: the SDK returns the JSON
objects as sent, so these are for type checkers and editors."""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict

ConnectionStatus = Literal["not_connected", "connected"]


class FieldError(TypedDict):
    pointer: str
    detail: str


class Health(TypedDict):
    status: Literal["ok"]
    version: str


class AppSummary(TypedDict):
    id: str
    name: str
    description: str
    categories: List[str]
    tool_count: int


class App(AppSummary):
    connection_status: ConnectionStatus


class AppDocument(TypedDict):
    """A source document of an app."""

    id: str
    title: str
    version: str
    origin: str
    license: Optional[str]


class AppDetail(App):
    """One app in full (``get_app``); ``id`` is the canonical slug."""

    aliases: List[str]
    former_ids: List[str]
    logo_url: Optional[str]
    documents: List[AppDocument]
    auth: List[str]


class CatalogPage(TypedDict):
    apps: List[AppSummary]
    next_cursor: Optional[str]


class AppsPage(TypedDict):
    apps: List[App]
    next_cursor: Optional[str]


class ConnectLink(TypedDict):
    id: str
    app: str
    auth: Literal["oauth2", "api_key", "basic"]
    url: str
    expires_at: str


class Connection(TypedDict):
    id: str
    app: str
    label: Optional[str]
    identity: Optional[str]
    status: Literal["active", "needs_reauth", "revoked"]
    auth: str
    is_default: bool
    created_at: str
    expires_at: Optional[str]


class ConnectionsPage(TypedDict):
    connections: List[Connection]
    next_cursor: Optional[str]


class ToolHit(TypedDict):
    name: str
    app: str
    description: str
    score: float
    matched_terms: List[str]
    connection_status: ConnectionStatus


class FindToolsResult(TypedDict):
    tools: List[ToolHit]
    hint: Optional[str]


class ToolAuth(TypedDict):
    """One accepted way to authenticate a tool's runs: kinds and scopes only, never a secret."""

    #: ``oauth2``, ``api_key``, ``basic``, ``bearer``, ``openid_connect`` (``none``: no
    #: credentials is accepted); kinds used together are joined with ``+``.
    kind: str
    scopes: List[str]
    #: Names of the schemes used together (the API document's ``securitySchemes`` keys).
    schemes: List[str]


class Tool(TypedDict):
    """A tool's detail: what a run will do, before it runs."""

    name: str
    app: str
    description: str
    input_schema: Dict[str, Any]
    #: HTTP method of a run (``POST``); ``None`` when the catalog does not say (MCP custom tools).
    method: Optional[str]
    #: Path template relative to ``server_url``, e.g. ``/repos/{owner}/{repo}/issues``.
    path: Optional[str]
    #: Where a run goes; variables without a default stay ``{name}`` templates.
    server_url: Optional[str]
    #: Accepted ways to authenticate (any one suffices); empty when none is needed or unknown.
    auth: List[ToolAuth]
    #: One input that satisfies ``input_schema`` (required fields only).
    example_input: Optional[Dict[str, Any]]
    connection_status: ConnectionStatus


class RunResult(TypedDict):
    run_id: str
    tool: str
    app: str
    status: Literal["succeeded"]
    http_status: int
    data: Any
    duration_ms: int
    connection_id: Optional[str]


class Run(TypedDict):
    id: str
    tool: str
    app: str
    status: Literal["succeeded", "failed", "connection_required"]
    duration_ms: int
    started_at: str
    error: Optional[str]
    arguments: Any


class RunList(TypedDict):
    runs: List[Run]
    next_cursor: None


class CustomTool(TypedDict):
    name: str
    description: str


class CustomConnector(TypedDict):
    id: str
    name: str
    kind: Literal["mcp", "rest"]
    url: Optional[str]
    tool_count: int
    tools: List[CustomTool]
    created_at: str
    refreshed_at: str


class CustomConnectorsPage(TypedDict):
    custom_connectors: List[CustomConnector]
    next_cursor: Optional[str]


class TriggerEvent(TypedDict):
    name: str
    app: str
    kind: Literal["poll", "webhook"]
    description: str
    tool: Optional[str]


class TriggerEvents(TypedDict):
    events: List[TriggerEvent]


class TriggerHealth(TypedDict):
    last_poll_at: Optional[str]
    last_event_at: Optional[str]
    last_error: Optional[str]
    consecutive_failures: int
    state: str


class _TriggerBase(TypedDict):
    id: str
    app: str
    event: str
    webhook_url: str
    status: str
    created_at: str
    health: TriggerHealth


class Trigger(_TriggerBase, total=False):
    secret: str
    """Only in the answer of ``create_trigger``."""


class TriggersPage(TypedDict):
    triggers: List[Trigger]
    next_cursor: Optional[str]


class AccountEvent(TypedDict):
    id: str
    type: str
    created_at: str
    data: Any


class AccountEvents(TypedDict):
    events: List[AccountEvent]


class TriggerDeliveryData(TypedDict):
    trigger_id: str
    app: str
    event: str
    item: Any


class TriggerDelivery(TypedDict):
    type: str
    timestamp: str
    data: TriggerDeliveryData
