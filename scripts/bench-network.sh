#!/usr/bin/env bash
# Network benchmark (BENCHMARKS.md "Network"): a 4-validator testnet on loopback, every
# node a `trust-node run` process; measures blocks/s with no load, then finalized
# transactions/s and blocks/s under the load generator, and each node's RSS.
#   scripts/bench-network.sh [txs per account, default 500] [block time ms, default 200]
set -euo pipefail
cd "$(dirname "$0")/.."
per="${1:-500}"
bt="${2:-200}"
cargo build --release --locked -p trust-node --bin trust-node --example loadgen
bin="${CARGO_TARGET_DIR:-target}/release/trust-node"
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
"$bin" testnet init --nodes 4 --auditor-nodes 0 --home "$dir" --base-port 27600 > /dev/null
pids=()
for i in 0 1 2 3; do
  RUST_LOG=warn "$bin" run --home "$dir/node$i" --block-time-ms "$bt" 2> "$dir/node$i.log" &
  pids+=($!)
done
height() { curl -s "http://127.0.0.1:$((27600 + 10 * $1 + 2))/v1/status" | sed -n 's/.*"height":\([0-9]*\).*/\1/p'; }
until [ "$(height 0 || true)" -ge 2 ] 2>/dev/null; do sleep 0.5; done
h0=$(height 0); t0=$(date +%s.%N); sleep 20; h1=$(height 0); t1=$(date +%s.%N)
echo "{\"idle_blocks\": $((h1 - h0)), \"idle_seconds\": $(echo "$t1 - $t0" | bc), \"block_time_ms\": $bt}"
"${CARGO_TARGET_DIR:-target}"/release/examples/loadgen "$dir" 4 "$per"
for i in 0 1 2 3; do
  echo "node$i rss_kib $(awk '/VmRSS/ {print $2}' /proc/${pids[$i]}/status)"
done
