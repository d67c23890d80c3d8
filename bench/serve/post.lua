-- wrk script of bench/serve/load.sh: POSTs the body in BODY_FILE (with the
-- Inference-Header-Content-Length of HEADER_LENGTH when set) and prints one
-- JSON line: requests, seconds, non-2xx responses, socket errors, latency.
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
local header_length = os.getenv("HEADER_LENGTH")
if header_length and header_length ~= "" then
  wrk.headers["Inference-Header-Content-Length"] = header_length
  wrk.headers["Content-Type"] = "application/octet-stream"
else
  wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"seconds":%.3f,"non_2xx":%d,"socket_errors":%d,"p50_ms":%.3f,"p99_ms":%.3f}\n',
    summary.requests, summary.duration / 1e6, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
