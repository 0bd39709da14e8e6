-- Uploads: args are the body file, its Content-Type and the bearer tokens. The requests are formatted once per
-- thread; each thread takes them in turn (round robin over the accounts), starting at its own offset.
local requests = {}
local n = 0
local counter = 0
setup = function(thread)
  counter = counter + 1
  thread:set("offset", counter)
end
init = function(args)
  local f = assert(io.open(args[1], "rb"))
  local body = f:read("*a")
  f:close()
  for i = 3, #args do
    requests[#requests + 1] = wrk.format("POST", wrk.path, { ["Authorization"] = "Bearer " .. args[i], ["Content-Type"] = args[2] }, body)
  end
  n = (offset or 0) % #requests
end
request = function()
  n = n % #requests + 1
  return requests[n]
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
