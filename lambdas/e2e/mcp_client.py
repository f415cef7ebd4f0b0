"""Lists the platform's MCP tools and calls find_tools with the official PyPI `mcp` client (2.3.0).

Usage: PLATFORM_MCP_URL=http://127.0.0.1:PORT/mcp/k/<KEY> mcp_client.py MODE, where MODE is
`legacy` (the 2025-11-25 initialize handshake), `auto` (probes server/discover) or a modern
version such as `2026-07-28`. The URL comes by environment so the key is not in the process
list. Exits non-zero on the first failed expectation; run by mcp_clients.mjs.
"""

import asyncio
import os
import sys

import mcp

TOOLS = ["search_apps", "connect_app", "list_connections", "find_tools", "get_tool", "run_tool"]


async def main(url: str, mode: str) -> None:
    async with mcp.Client(url, mode=mode, raise_exceptions=True) as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        assert names == TOOLS, names
        for tool in listed.tools:
            assert tool.description, tool.name
            assert tool.input_schema.get("type") == "object", tool.name

        found = await client.call_tool("find_tools", {"query": "create a github issue"})
        assert not found.is_error, found
        first = found.structured_content["tools"][0]
        assert first["app"] == "github" and "issue" in first["name"], first
        assert first["connection_status"] == "not_connected", first

        later = await client.call_tool("run_tool", {"tool": first["name"], "arguments": {}})
        text = later.content[0].text
        if later.is_error:
            # Without a credentials key / PUBLIC_BASE_URL, or without an OAuth client for GitHub.
            assert "not configured" in text or "oauth_not_configured" in text, later
        else:
            assert later.structured_content["status"] == "connection_required", later
    print(f"ok: mode={mode} tools={names}")


if __name__ == "__main__":
    asyncio.run(main(os.environ["PLATFORM_MCP_URL"], sys.argv[1]))
