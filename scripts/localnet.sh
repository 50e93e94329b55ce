#!/usr/bin/env bash
# Runs a local 4-validator network of processes on 127.0.0.1 (docs/operators.md "Run a
# local 4-node network"; the docker testnet is scripts/testnet.sh): creates the homes with
# `testnet init` (four validators and the two auditor-only homes it adds), starts a
# `trust-node run` process for every home, waits for blocks, bonds more stake for
# node1's auditor through node2's API (the transaction is gossiped and ordered by all
# four), shows every node's status, then stops the nodes and verifies each ledger. Homes
# and logs are kept in ./out/localnet (or the directory given).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-out/localnet}"
base="${TRUST_BASE_PORT:-26600}"
cargo build --release --locked -p trust-node
bin="${CARGO_TARGET_DIR:-target}/release/trust-node"
rm -rf "$dir"
"$bin" testnet init --nodes 4 --home "$dir" --base-port "$base"
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop EXIT
homes=$(ls -d "$dir"/node* | wc -l)
last=$((homes - 1))
for i in $(seq 0 "$last"); do
  "$bin" run --home "$dir/node$i" 2> "$dir/node$i.log" &
  pids+=($!)
done
api() { echo "127.0.0.1:$((base + 10 * $1 + 2))"; }
height() { "$bin" status --api "$(api "$1")" --json 2>/dev/null | sed -n 's/.*"height":\([0-9]*\).*/\1/p'; }
echo "== waiting for the $homes nodes to hold blocks"
for i in $(seq 0 "$last"); do
  for _ in $(seq 1 120); do [ "$(height "$i")" -ge 3 ] 2>/dev/null && break; sleep 0.5; done
done
echo "== node1 bonds 500 more stake, sent to node2's API"
"$bin" auditor register --tier computer --stake 500 --home "$dir/node1" --api "$(api 2)"
node1=$("$bin" status --api "$(api 1)" --json | sed -n 's/.*"node_id":"\([0-9a-f]*\)".*/\1/p')
for _ in $(seq 1 60); do
  stake=$(curl -s "http://$(api 3)/v1/auditors/$node1" | sed -n 's/.*"stake":\([0-9]*\).*/\1/p')
  [ "$stake" = "10500" ] && break; sleep 0.5
done
echo "node1's stake as node3 sees it: $stake"
for i in $(seq 0 "$last"); do echo "== node$i"; "$bin" status --api "$(api "$i")"; done
stop; trap - EXIT
for i in $(seq 0 "$last"); do "$bin" ledger verify --home "$dir/node$i"; done
