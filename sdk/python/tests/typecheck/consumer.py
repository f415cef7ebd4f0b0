"""Checked by test_typing.py with mypy --strict: the types describe how the SDK is used."""

from companion import Client, CompanionError, verify_webhook
from companion.types import FindToolsResult, RunResult

c = Client(api_key="k", base_url="http://x")
found: FindToolsResult = c.find_tools("x", limit=3)
name: str = found["tools"][0]["name"]
tool = c.get_tool(name)
method: str | None = tool["method"]
kinds: list[str] = [a["kind"] for a in tool["auth"]]
example: dict[str, object] | None = tool["example_input"]
run: RunResult = c.run_tool(name, {"a": 1}, connection_id="conn_1")
code: int = run["http_status"]
product = c.get_app("twilio_api_v2010")
docs: list[str] = [d["id"] for d in product["documents"]]
logo: str | None = product["logo_url"]
for app in c.iter_catalog(category="x"):
    n: int = app["tool_count"]
t = c.create_trigger("github", "issue.created", "https://x", connection_id="c")
s: str = t["secret"]
try:
    c.runs()
except CompanionError as e:
    ra: int | None = e.retry_after
payload = verify_webhook("whsec_x", {}, b"{}", now=1.0)
