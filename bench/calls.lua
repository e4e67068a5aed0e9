-- wrk: the calls `make bench` drives, JSON or binary (every call but delete and mint: JSON only).
--   wrk ... -s bench/calls.lua -- delete|update TOKEN_FILE json|proto PACE_MS THREADS CONNECTIONS FIRST_ITEM ITEMS_PER_THREAD VAULTS
--   wrk ... -s bench/calls.lua -- create TOKEN_FILE json PACE_MS THREADS CONNECTIONS RUN VAULTS
--   wrk ... -s bench/calls.lua -- get TOKEN_FILE json PACE_MS THREADS CONNECTIONS ITEMS VAULTS
--   wrk ... -s bench/calls.lua -- list-first|list-last TOKEN_FILE json PACE_MS THREADS CONNECTIONS VAULT PAGE_TOKEN_FILE
--   wrk ... -s bench/calls.lua -- changes-first|changes-last TOKEN_FILE json PACE_MS THREADS CONNECTIONS VAULT SINCE
--   wrk ... -s bench/calls.lua -- mint TOKENS_FILE json|proto PACE_MS THREADS CONNECTIONS
--   wrk ... -s bench/calls.lua -- list-tokens TOKEN_FILE json PACE_MS THREADS CONNECTIONS
--   wrk ... -s bench/calls.lua -- revoke TOKEN_FILE json PACE_MS THREADS CONNECTIONS FIRST_ID IDS_PER_THREAD IDS_FILE
-- delete: DeleteItem of a fresh item per call: item n is b-n in vault v-(n % VAULTS)
--   (bench/seed.py); thread t deletes FIRST_ITEM + t * ITEMS_PER_THREAD onwards.
-- update: UpdateItem of a fresh item per call, chosen as delete chooses, at base version 1
--   (seeded items are at version 1, and each is updated once), with new content.
-- create: CreateItem of a new item per call: thread t's n-th is c{RUN}-{t}-{n}, RUN distinct for
--   every wrk run on one server, spread over the vaults.
-- get: GetItem of seeded items in turn (thread t from item t * 7919), deleted or not.
-- list-first|list-last: ListItems of a 100-item page of VAULT, from the page token on the
--   file's first line (none: the first page).
-- changes-first|changes-last: ListChanges of a 100-change page of VAULT after the cursor SINCE.
-- mint: MintUserApiToken, each call with the next token of the file (one principal's per line).
-- list-tokens: ListTokens of a 100-token page of the caller's own tokens.
-- revoke: RevokeToken of a fresh token per call, by its id: IDS_FILE has one id of the caller's
--   own tokens a line; thread t revokes the IDS_PER_THREAD after line FIRST_ID + t * IDS_PER_THREAD.
--   Past those (or the file's end), an id no token has, which answers NOT_FOUND: a load that ran
--   out of tokens shows as errors, not as revokes of tokens already revoked (which answer 200).
-- PACE_MS > 0: each connection waits that long before each call, the connections staggered
--   evenly over the first PACE_MS (as wrk2 -R does), so calls arrive at a steady rate rather
--   than in bursts. THREADS and CONNECTIONS are wrk's -t and -c, for the stagger.
-- Tokens (and page tokens, and token ids) come from files, so that none is on a command line.
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
  if rpc == "delete" or rpc == "update" then
    next_item = tonumber(args[7]) + tid * tonumber(args[8])
    vaults = tonumber(args[9])
  elseif rpc == "create" then
    run, next_item, vaults = args[7], 0, tonumber(args[8])
  elseif rpc == "get" then
    items, vaults = tonumber(args[7]), tonumber(args[8])
    next_item = (tid * 7919) % items
  elseif rpc == "list-first" or rpc == "list-last" then
    local page_token = lines(args[8])[1] or ""
    list_body = '{"vaultId":"' .. args[7] .. '","pageSize":100,"pageToken":"' .. page_token .. '"}'
  elseif rpc == "changes-first" or rpc == "changes-last" then
    list_body = '{"vaultId":"' .. args[7] .. '","sinceSequence":"' .. args[8] .. '","pageSize":100}'
  elseif rpc == "list-tokens" then
    list_body = '{"pageSize":100}'
  elseif rpc == "revoke" then
    next_item = tonumber(args[7]) + tid * tonumber(args[8])
    last_item = next_item + tonumber(args[8])
    revocable = lines(args[9])
  else
    index = tid
  end
  if rpc ~= "delete" and rpc ~= "mint" and codec ~= "json" then
    error(rpc .. " is driven with JSON only")
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

-- What a client stores: ciphertext and a wrapped key, base64url (bench/seed.py's shapes).
local function content(ciphertext)
  return '"kind":"note","titleHash":"dGl0bGUtaGFzaC10aXRsZS1oYXNo",'
    .. '"encryptedPayload":{"alg":"A256GCM","nonce":"bm9uY2Vub25jZQ","aad":"YWFk","ciphertext":"'
    .. ciphertext .. '","version":1},'
    .. '"wrappedKeys":[{"recipientId":"owner","wrapAlg":"A256KW","wrappedKey":"a2V5LWtleS1rZXkta2V5LWtleS1rZXk"}]'
end

local function create_body()
  local n = next_item
  next_item = next_item + 1
  local vault = "v-" .. ((n * thread_count + tid) % vaults)
  local item = "c" .. run .. "-" .. tid .. "-" .. n
  return '{"vaultId":"' .. vault .. '","itemId":"' .. item .. '",' .. content("Y3JlYXRlZC1jcmVhdGVkLWNyZWF0ZWQ") .. "}"
end

local function update_body()
  local n = next_item
  next_item = next_item + 1
  local item, vault = "b-" .. n, "v-" .. (n % vaults)
  return '{"vaultId":"' .. vault .. '","itemId":"' .. item .. '","baseVersion":"1",'
    .. content("dXBkYXRlZC11cGRhdGVkLXVwZGF0ZWQ") .. "}"
end

local function get_body()
  local n = next_item
  next_item = (next_item + 1) % items
  return '{"vaultId":"v-' .. (n % vaults) .. '","itemId":"b-' .. n .. '"}'
end

local function revoke_body()
  next_item = next_item + 1
  local id = next_item <= last_item and revocable[next_item] or "tok_000000000000000000000000"
  return '{"tokenId":"' .. id .. '"}'
end

local paths = {
  create = "CreateItem", update = "UpdateItem", get = "GetItem", ["list-first"] = "ListItems", ["list-last"] = "ListItems",
  ["changes-first"] = "ListChanges", ["changes-last"] = "ListChanges",
}

function request()
  local path, token, body
  if rpc == "delete" then
    path, token, body = "/platform.v1.VaultService/DeleteItem", tokens[1], delete_body()
  elseif paths[rpc] then
    path, token = "/platform.v1.VaultService/" .. paths[rpc], tokens[1]
    if rpc == "create" then
      body = create_body()
    elseif rpc == "update" then
      body = update_body()
    elseif rpc == "get" then
      body = get_body()
    else
      body = list_body
    end
  elseif rpc == "list-tokens" then
    path, token, body = "/platform.v1.BrokerService/ListTokens", tokens[1], list_body
  elseif rpc == "revoke" then
    path, token, body = "/platform.v1.BrokerService/RevokeToken", tokens[1], revoke_body()
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
