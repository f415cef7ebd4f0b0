-- wrk script: POST /api/v1/tools/find with the request bodies in $BODIES (one JSON body per line,
-- the evaluation's task queries), bodies and Bearer keys ($KEYS) taken round-robin, so every
-- request is a different search over the whole catalog and the per-key limit does not cap it.
local keys = {}
for k in string.gmatch(os.getenv("KEYS") or "", "%S+") do
  table.insert(keys, k)
end
assert(#keys > 0, "set KEYS")
local bodies = {}
local path = os.getenv("BODIES")
assert(path, "set BODIES")
for line in io.lines(path) do
  table.insert(bodies, line)
end
assert(#bodies > 0, "BODIES is empty")
local i, j = 0, 0
request = function()
  i = i % #keys + 1
  j = j % #bodies + 1
  return wrk.format("POST", nil, {
    ["Authorization"] = "Bearer " .. keys[i],
    ["Content-Type"] = "application/json",
  }, bodies[j])
end
