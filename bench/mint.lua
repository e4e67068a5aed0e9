-- wrk: MintUserApiToken, each call by the next of many principals, JSON or binary.
-- wrk ... -s bench/mint.lua -- TOKENS_FILE json|proto PACE_MS
-- TOKENS_FILE holds one token per line; each thread walks them all in turn, from its own start.
local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  tokens = {}
  for line in io.lines(args[1]) do
    table.insert(tokens, line)
  end
  codec = args[2]
  pace = tonumber(args[3])
  index = tid
  if codec == "proto" then
    -- tenant_id = 1, requested_scopes = 2, requested_ttl_seconds = 3 (300 as a varint)
    body = string.char(10, 5) .. "bench" .. string.char(18, 18) .. "vault.items.delete" .. string.char(24, 172, 2)
    content_type = "application/proto"
  else
    body = '{"tenantId":"bench","requestedScopes":["vault.items.delete"],"requestedTtlSeconds":300}'
    content_type = "application/json"
  end
end

function delay()
  return pace
end

function request()
  index = index % #tokens + 1
  return wrk.format("POST", "/platform.v1.BrokerService/MintUserApiToken", {
    ["Content-Type"] = content_type,
    ["Connect-Protocol-Version"] = "1",
    ["Authorization"] = "Bearer " .. tokens[index],
  }, body)
end
