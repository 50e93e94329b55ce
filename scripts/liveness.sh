#!/usr/bin/env bash
# Liveness with a validator down or slow (BENCHMARKS.md "Faults: restart, liveness"): a
# 4-validator network on 127.0.0.1 with short blocks; for each phase (all up, one killed
# with SIGKILL, one paused with SIGSTOP) it counts the blocks node0 commits and the longest
# gap between two of them, read from node0's own log ("block committed" lines, at DEBUG
# under the target trust::blocks, which the default filter here turns on), and prints
# a table. Only node3 is ever killed or paused.
#   scripts/liveness.sh [seconds per phase, default 30] [block time ms, default 300]
# Extra `trust-node run` flags may be given in TRUST_RUN_ARGS, a log filter in LIVENESS_LOG;
# KEEP=1 keeps the homes and logs.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-30}"
bt="${2:-300}"
target="${CARGO_TARGET_DIR:-target}"
bin="${TRUST_NODE_BIN:-$target/debug/trust-node}"
[ -x "$bin" ] || cargo build --locked -p trust-node --bin trust-node
base="${TRUST_BASE_PORT:-27800}"
dir=$(mktemp -d)
pids=()
cleanup() {
  [ "${#pids[@]}" -gt 3 ] && kill -CONT "${pids[3]}" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "logs kept in $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
"$bin" testnet init --nodes 4 --auditor-nodes 0 --home "$dir" --base-port "$base" > /dev/null
start() {
  # shellcheck disable=SC2086
  RUST_LOG="${LIVENESS_LOG:-info,libp2p=warn,arc_malachitebft=warn,trust::blocks=debug}" NO_COLOR=1 "$bin" run --home "$dir/node$1" \
    --block-time-ms "$bt" ${TRUST_RUN_ARGS:-} 2>> "$dir/node$1.log" &
  pids[$1]=$!
}
height() { curl -s --max-time 2 "http://127.0.0.1:$((base + 10 * $1 + 2))/v1/status" | sed -n 's/.*"height":\([0-9]*\).*/\1/p'; }
wait_height() {
  for _ in $(seq 1 240); do
    [ "$(height "$1" || true)" -ge "$2" ] 2>/dev/null && return 0
    sleep 0.5
  done
  echo "node$1 did not reach height $2" >&2
  exit 1
}
for i in 0 1 2 3; do start "$i"; done
for i in 0 1 2 3; do wait_height "$i" 3; done

rows=()
measure() {
  local name=$1 t0 t1
  t0=$(date -u +%s.%N)
  sleep "$secs"
  t1=$(date -u +%s.%N)
  rows+=("$(python3 - "$dir/node0.log" "$t0" "$t1" "$name" <<'PY'
import re, sys
from datetime import datetime, timezone
log, t0, t1, name = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
ts = []
for line in open(log, errors="replace"):
    if "block committed" not in line:
        continue
    m = re.search(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z", line)
    if not m:
        continue
    s = m.group(1)
    if "." in s:
        head, frac = s.split(".")
        s = head + "." + frac[:6]
        t = datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f")
    else:
        t = datetime.strptime(s, "%Y-%m-%dT%H:%M:%S")
    t = t.replace(tzinfo=timezone.utc).timestamp()
    if t0 <= t <= t1:
        ts.append(t)
edges = [t0] + ts + [t1]
gap = max(b - a for a, b in zip(edges, edges[1:]))
print(f"{name:<22} {len(ts):>7} {len(ts) / (t1 - t0):>9.2f} {gap:>15.2f}")
PY
)")
}
measure "all up"
kill -9 "${pids[3]}"
wait "${pids[3]}" 2>/dev/null || true
measure "node3 killed"
start 3
wait_height 3 "$(height 0)"
sleep 3
kill -STOP "${pids[3]}"
measure "node3 paused (SIGSTOP)"
kill -CONT "${pids[3]}"
echo "4 validators, block time ${bt} ms, ${secs} s per phase, $(nproc) cores, $(date -u +%F)"
printf '%-22s %7s %9s %15s\n' phase blocks blocks/s "longest gap (s)"
for r in "${rows[@]}"; do echo "$r"; done
