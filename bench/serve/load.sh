#!/usr/bin/env bash
# Load test of spindle serve: wrk POSTs one infer body (JSON tensors, or the
# binary tensor data extension) for a fixed duration at each concurrency and
# reports throughput, p50/p99 latency, non-2xx responses and socket errors, next to the
# in-process throughput of spindle bench on the same input shapes.
#
#   bench/serve/load.sh MODEL.onnx [--build DIR] [--duration S] [--threads N]
#                       [--concurrent-runs N] [--body json|binary] [--concurrency "1 2 4 8 16 32"]
#                       [--shape NAME=DIMS]...   (dynamic dimensions not given are 1)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
model=${1:?usage: load.sh MODEL.onnx [options]}
shift
build=$here/../../build duration=10 threads=0 runs=1 body=json levels="1 2 4 8 16 32" given=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2 ;;
    --duration) duration=$2 ;;
    --threads) threads=$2 ;;
    --concurrent-runs) runs=$2 ;;
    --body) body=$2 ;;
    --concurrency) levels=$2 ;;
    --shape) given+=("$2") ;;
    *) echo "load.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
spindle=$build/spindle
command -v wrk >/dev/null || { echo "load.sh: wrk is not installed (scripts/setup-deps.sh)" >&2; exit 1; }
work=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/repo/m/1"
ln -s "$(realpath "$model")" "$work/repo/m/1/model.onnx"
"$spindle" serve --model-repository "$work/repo" --http-port 0 --threads "$threads" \
  --concurrent-runs "$runs" --max-queue 4096 > "$work/server.log" 2>&1 &
server=$!
port=""
for _ in $(seq 300); do
  port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/server.log")
  [ -n "$port" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "load.sh: the server did not start" >&2; exit 1; }
mapfile -t made < <(/usr/bin/python3 "$here/make_body.py" "$port" m "$work/body" "$body" "${given[@]}")
header_length=${made[0]}
[ "$header_length" = "-" ] && header_length=""
shapes=${made[1]}
url=http://127.0.0.1:$port/v2/models/m/infer
# In process: the same shapes, as many callers as the server runs at once,
# before and after the HTTP levels (the machine may be shared).
inprocess() {
  # shellcheck disable=SC2086
  "$spindle" bench "$model" $shapes --concurrency "$runs" --threads "$([ "$threads" = 0 ] && nproc || echo "$threads")" \
    --runs 2000 --warmup 50 --json | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); r=r[0] if isinstance(r,list) else r; print("%.1f req/s, p50 %.2f ms" % (r["throughput_per_s"], r["latency_ms"]["p50"]))'
}
before=$(inprocess)
export BODY_FILE=$work/body HEADER_LENGTH=$header_length
echo "model $(basename "$model"), body $body ($(stat -c %s "$work/body") bytes), server --threads $threads --concurrent-runs $runs, ${duration}s per level, commit $(git -C "$here" rev-parse --short HEAD)"
wrk -t 1 -c 1 -d 2s -s "$here/post.lua" "$url" > /dev/null  # warm-up
printf "%-12s %10s %9s %9s %8s %14s\n" concurrency "req/s" "p50 ms" "p99 ms" "non-2xx" "socket errors"
for c in $levels; do
  t=$(( c < 2 ? c : 2 ))
  line=$(wrk -t "$t" -c "$c" -d "${duration}s" --timeout 30s -s "$here/post.lua" "$url" | grep '^{"requests"')
  /usr/bin/python3 -c '
import json, sys
r = json.loads(sys.argv[2])
print("%-12s %10.1f %9.2f %9.2f %8d %14d" % (sys.argv[1], r["requests"] / r["seconds"], r["p50_ms"], r["p99_ms"],
                                              r["non_2xx"], r["socket_errors"]))' "$c" "$line"
done
echo "in-process (spindle bench, concurrency $runs): before $before; after $(inprocess)"
