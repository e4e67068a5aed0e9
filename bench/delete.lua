-- wrk: DeleteItem of a fresh item per request, JSON or binary.
-- wrk ... -s bench/delete.lua -- TOKEN_FILE json|proto FIRST_ITEM ITEMS_PER_THREAD VAULTS PACE_MS
-- Item n is b-n in vault v-(n % VAULTS) (bench/seed.py). PACE_MS > 0 makes each
-- connection wait that long between calls: a load below the peak, for latency at a set rate.
local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  local file = assert(io.open(args[1]))  -- a file, so the token is not on a command line
  token = file:read("l")
  file:close()
  codec = args[2]
  base = tonumber(args[3]) + tid * tonumber(args[4])
  vaults = tonumber(args[5])
  pace = tonumber(args[6])
  counter = 0
end

function delay()
  return pace
end

local function field(number, value)
  return string.char(number * 8 + 2, #value) .. value
end

function request()
  local n = base + counter
  counter = counter + 1
  local item = "b-" .. n
  local vault = "v-" .. (n % vaults)
  local body, content_type
  if codec == "proto" then
    body = field(1, vault) .. field(2, item) .. string.char(3 * 8, 1)
    content_type = "application/proto"
  else
    body = '{"vaultId":"' .. vault .. '","itemId":"' .. item .. '","baseVersion":"1"}'
    content_type = "application/json"
  end
  return wrk.format("POST", "/platform.v1.VaultService/DeleteItem", {
    ["Content-Type"] = content_type,
    ["Connect-Protocol-Version"] = "1",
    ["Authorization"] = "Bearer " .. token,
  }, body)
end
