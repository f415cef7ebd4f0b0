-- wrk script: MCP tools/call find_tools over POST /mcp, Bearer key round-robin from $KEYS.
local keys = {}
for k in string.gmatch(os.getenv("KEYS") or "", "%S+") do
  table.insert(keys, k)
end
assert(#keys > 0, "set KEYS")
local body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find_tools",'
  .. '"arguments":{"query":"send a message to a slack channel"}}}'
local i = 0
request = function()
  i = i % #keys + 1
  return wrk.format("POST", nil, {
    ["Authorization"] = "Bearer " .. keys[i],
    ["Accept"] = "application/json, text/event-stream",
    ["Content-Type"] = "application/json",
    ["MCP-Protocol-Version"] = "2025-06-18",
  }, body)
end
