#!/usr/bin/env bash
# Audit latency benchmark (BENCHMARKS.md "Audit"): a 4-validator testnet on loopback, node0
# the provider, Computer seats on the other three. Submits the sample traces one after
# the other with --wait (latency of one session), then a batch at once (sessions/s), and
# reports blocks per session, Bitswap fetches and each node's RSS.
#   scripts/bench-audit.sh [sequential sessions, default 10] [batch, default 20] [block time ms, default 300]
set -euo pipefail
cd "$(dirname "$0")/.."
seq_n="${1:-10}"
batch="${2:-20}"
bt="${3:-300}"
cargo build --release --locked -p trust-node --bin trust-node
bin="${CARGO_TARGET_DIR:-target}/release/trust-node"
dir="${BENCH_DIR:-$(mktemp -d)}"   # BENCH_DIR keeps the homes and node logs for a look
rm -rf "$dir"; mkdir -p "$dir"
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${BENCH_DIR:-}" ] || rm -rf "$dir"' EXIT
base=27700
"$bin" testnet init --nodes 4 --auditor-nodes 0 --home "$dir" --base-port "$base" > /dev/null
pids=()
for i in 0 1 2 3; do
  RUST_LOG=warn "$bin" run --home "$dir/node$i" --block-time-ms "$bt" 2> "$dir/node$i.log" &
  pids+=($!)
done
api="127.0.0.1:$((base + 2))"
until "$bin" status --api "$api" > /dev/null 2>&1; do sleep 0.5; done
height() { "$bin" status --api "$api" --json | sed -n 's/.*"height":\([0-9]*\).*/\1/p'; }
traces=(examples/traces/fraction-incorrect.txt examples/traces/fraction-correct.txt)

h0=$(height); t0=$(date +%s.%N)
for n in $(seq 1 "$seq_n"); do
  "$bin" submit "${traces[$((n % 2))]}" --api "$api" --home "$dir/node0" --wait > "$dir/seq$n.out"
done
t1=$(date +%s.%N); h1=$(height)
echo "{\"sequential_sessions\": $seq_n, \"seconds\": $(echo "$t1 - $t0" | bc), \"blocks\": $((h1 - h0)), \"block_time_ms\": $bt}"

sessions=()
for n in $(seq 1 "$batch"); do
  sessions+=("$("$bin" submit "${traces[$((n % 2))]}" --api "$api" --home "$dir/node0" | sed -n 's/^session *//p')")
done
t2=$(date +%s.%N)
for s in "${sessions[@]}"; do
  until "$bin" query "$s" --api "$api" --json 2>/dev/null | grep -q '"status":"decided"'; do sleep 0.2; done
done
t3=$(date +%s.%N); h3=$(height)
echo "{\"batch_sessions\": $batch, \"seconds_to_all_decided\": $(echo "$t3 - $t2" | bc), \"blocks\": $((h3 - h1))}"
# Verdict counts over every session of the run (missing = seats that did not vote).
undecided=0; missing=0
for s in "${sessions[@]}"; do
  j=$("$bin" query "$s" --api "$api" --json)
  undecided=$((undecided + $(echo "$j" | grep -o '"verdict":"Undecided"' | wc -l)))
  missing=$((missing + $(echo "$j" | grep -o '"missing":[0-9]*' | cut -d: -f2 | paste -sd+ | bc)))
done
echo "{\"batch_undecided_segments\": $undecided, \"batch_missing_votes\": $missing}"
for i in 0 1 2 3; do
  m=$(curl -s "http://127.0.0.1:$((base + 10 * i + 2))/metrics")
  echo "node$i rss_kib $(awk '/VmRSS/ {print $2}' /proc/${pids[$i]}/status)" \
    "bitswap_fetched $(echo "$m" | awk '/^trust_net_blobs_fetched/ {print $2}')" \
    "committed $(echo "$m" | awk '/^trust_seat_votes_committed_total/ {print $2}')"
done
