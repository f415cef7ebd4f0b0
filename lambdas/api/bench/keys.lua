-- wrk script: GET the path given to wrk with a Bearer key taken round-robin from $KEYS
-- (space-separated), so the 120/min per-key limit does not cap the load.
local keys = {}
for k in string.gmatch(os.getenv("KEYS") or "", "%S+") do
  table.insert(keys, k)
end
assert(#keys > 0, "set KEYS")
local i = 0
request = function()
  i = i % #keys + 1
  return wrk.format("GET", nil, { ["Authorization"] = "Bearer " .. keys[i] })
end
