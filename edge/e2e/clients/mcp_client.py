"""Lists and calls the edge MCP tools with the official PyPI `mcp` client (2.3.0).

Usage: mcp_client.py BASE_URL MODE, where MODE is `legacy` (the 2025-11-25 initialize
handshake), `auto` (probes server/discover) or a modern version such as `2026-07-28`.
Exits non-zero with a message on the first failed expectation; run by clients/mcp_python.mjs.
"""

import asyncio
import json
import sys

import mcp


async def main(base_url: str, mode: str) -> None:
    async with mcp.Client(f"{base_url}/mcp", mode=mode, raise_exceptions=True) as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        assert names == [
            "site_info", "search_pages", "read_page",
            "list_products", "create_checkout", "get_checkout",
        ], names
        for tool in listed.tools:
            assert tool.description, tool.name
            assert tool.input_schema.get("type") == "object", tool.name
            assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name

        info = await client.call_tool("site_info", {})
        assert not info.is_error, info
        assert info.structured_content["name"] == "Presence sensing", info.structured_content

        found = await client.call_tool("search_pages", {"query": "pricing"})
        assert not found.is_error, found
        assert found.structured_content["results"][0]["path"] == "/pricing", found.structured_content

        page = await client.call_tool("read_page", {"path": "/safety"})
        assert not page.is_error, page
        assert "life-safety" in page.structured_content["markdown"]
        text = page.content[0].text
        assert json.loads(text) == page.structured_content

        missing = await client.call_tool("read_page", {"path": "/no-such-page"})
        assert missing.is_error, missing

        # Commerce (against the Stripe fake): the client checks results against outputSchema.
        offers = await client.call_tool("list_products", {})
        assert not offers.is_error, offers
        assert offers.structured_content["offers"][0]["id"] == "pro_monthly", offers.structured_content
        checkout = await client.call_tool("create_checkout", {"offer_id": "pro_monthly"})
        assert not checkout.is_error, checkout
        assert set(checkout.structured_content) == {"id", "continue_url"}, checkout.structured_content
        got = await client.call_tool("get_checkout", {"id": checkout.structured_content["id"]})
        assert not got.is_error, got
        assert got.structured_content["status"] == "requires_escalation", got.structured_content
    print(f"ok: mode={mode} tools={names}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
