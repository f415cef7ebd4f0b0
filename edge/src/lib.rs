//! Public agent API and MCP server, deployed as a Cloudflare Worker.
