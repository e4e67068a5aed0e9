-- wrk: the calls `make bench` drives, JSON or binary.
--   wrk ... -s bench/calls.lua -- delete TOKEN_FILE json|proto PACE_MS FIRST_ITEM ITEMS_PER_THREAD VAULTS
--   wrk ... -s bench/calls.lua -- mint TOKENS_FILE json|proto PACE_MS
-- delete: DeleteItem of a fresh item per call: item n is b-n in vault v-(n % VAULTS)
--   (bench/seed.py); thread t deletes FIRST_ITEM + t * ITEMS_PER_THREAD onwards.
-- mint: MintUserApiToken, each call with the next token of the file (one principal's per line).
-- PACE_MS > 0: each connection waits that long before each call, starting at a random
--   phase so that the connections' calls spread evenly instead of arriving in bursts.
-- Tokens come from files, so that none is on a command line.
local threads = {}
local PHASED_CALLS = 100 -- at least the connections of one thread

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
  math.randomseed(tid + 1)
  delays = 0
  if rpc == "delete" then
    next_item = tonumber(args[5]) + tid * tonumber(args[6])
    vaults = tonumber(args[7])
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
  -- The first calls of a thread are its connections' first: give each a random phase.
  delays = delays + 1
  if delays <= PHASED_CALLS then
    return math.random(0, pace)
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
