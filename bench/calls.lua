-- wrk: the calls `make bench` drives, JSON or binary.
--   wrk ... -s bench/calls.lua -- delete TOKEN_FILE json|proto PACE_MS THREADS CONNECTIONS FIRST_ITEM ITEMS_PER_THREAD VAULTS
--   wrk ... -s bench/calls.lua -- mint TOKENS_FILE json|proto PACE_MS THREADS CONNECTIONS
-- delete: DeleteItem of a fresh item per call: item n is b-n in vault v-(n % VAULTS)
--   (bench/seed.py); thread t deletes FIRST_ITEM + t * ITEMS_PER_THREAD onwards.
-- mint: MintUserApiToken, each call with the next token of the file (one principal's per line).
-- PACE_MS > 0: each connection waits that long before each call, the connections staggered
--   evenly over the first PACE_MS (as wrk2 -R does), so calls arrive at a steady rate rather
--   than in bursts. THREADS and CONNECTIONS are wrk's -t and -c, for the stagger.
-- Tokens come from files, so that none is on a command line.
local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local function lines(path)
  local found = {}
  for line in io.lines(path) do
    table.insert(found, line)
  end
  return found
end

local function field(number, value)
  return string.char(number * 8 + 2, #value) .. value
end

function init(args)
  rpc = args[1]
  tokens = lines(args[2])
  codec = args[3]
  pace = tonumber(args[4])
  thread_count = tonumber(args[5])
  connections = tonumber(args[6])
  delays = 0
  if rpc == "delete" then
    next_item = tonumber(args[7]) + tid * tonumber(args[8])
    vaults = tonumber(args[9])
  else
    index = tid
  end
  if codec == "proto" then
    content_type = "application/proto"
    -- tenant_id = 1, requested_scopes = 2, requested_ttl_seconds = 3 (300 as a varint)
    mint_body = field(1, "bench") .. field(2, "vault.items.delete") .. string.char(24, 172, 2)
  else
    content_type = "application/json"
    mint_body = '{"tenantId":"bench","requestedScopes":["vault.items.delete"],"requestedTtlSeconds":300}'
  end
end

function delay()
  -- A thread's first calls are its connections' first: connection k of thread t starts
  -- at slot k * threads + t of `connections` slots spread over one pace.
  delays = delays + 1
  if pace > 0 and delays <= connections / thread_count then
    return math.floor(((delays - 1) * thread_count + tid) * pace / connections)
  end
  return pace
end

local function delete_body()
  local n = next_item
  next_item = next_item + 1
  local item, vault = "b-" .. n, "v-" .. (n % vaults)
  if codec == "proto" then
    return field(1, vault) .. field(2, item) .. string.char(3 * 8, 1)
  end
  return '{"vaultId":"' .. vault .. '","itemId":"' .. item .. '","baseVersion":"1"}'
end

function request()
  local path, token, body
  if rpc == "delete" then
    path, token, body = "/platform.v1.VaultService/DeleteItem", tokens[1], delete_body()
  else
    index = index % #tokens + 1
    path, token, body = "/platform.v1.BrokerService/MintUserApiToken", tokens[index], mint_body
  end
  return wrk.format("POST", path, {
    ["Content-Type"] = content_type,
    ["Connect-Protocol-Version"] = "1",
    ["Authorization"] = "Bearer " .. token,
  }, body)
end
