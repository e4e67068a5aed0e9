-- wrk: DeleteItem of a fresh item per request, JSON or binary.
-- wrk ... -s bench/delete.lua -- TOKEN json|proto FIRST_ITEM ITEMS_PER_THREAD
local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  token = args[1]
  codec = args[2]
  base = tonumber(args[3]) + tid * tonumber(args[4])
  counter = 0
end

local function field(number, value)
  return string.char(number * 8 + 2, #value) .. value
end

function request()
  counter = counter + 1
  local item = "b-" .. (base + counter)
  local body, content_type
  if codec == "proto" then
    body = field(1, "bench") .. field(2, item) .. string.char(3 * 8, 1)
    content_type = "application/proto"
  else
    body = '{"vaultId":"bench","itemId":"' .. item .. '","baseVersion":"1"}'
    content_type = "application/json"
  end
  return wrk.format("POST", "/platform.v1.VaultService/DeleteItem", {
    ["Content-Type"] = content_type,
    ["Connect-Protocol-Version"] = "1",
    ["Authorization"] = "Bearer " .. token,
  }, body)
end
