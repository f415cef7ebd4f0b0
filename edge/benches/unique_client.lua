-- wrk script: every request from a new client address, so each one passes through the rate
-- limiter's Durable Object (a loopback client is exempt in wrangler dev). Threads get distinct
-- ids in setup() so their address sequences never collide.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

local counter = 0
request = function()
  counter = counter + 1
  local ip = string.format("2001:db8:%x:%x::%x", tid, os.time() % 65536, counter)
  return wrk.format("GET", nil, { ["CF-Connecting-IP"] = ip })
end
