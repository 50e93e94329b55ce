#!/usr/bin/env bash
# An appeal on your machine, in one command (docs/providers.md "Try an appeal"): the
# smallest local network an appeal can be heard on at k = 1. An appeal of a segment draws
# 2k + 1 fresh seats of its tier, none of whom sat on it, so a Computer segment judged by
# one seat needs 1 + 3 = 4 Computer auditors besides the appellant: four validators (each
# a Computer auditor) and a provider node that submits and appeals. `--dev-floors` lets a
# session ask for k = 1 (a public network keeps k >= 3, where an appeal needs 3 + 7 = 10).
#
# It submits the fraction chain with a wrong step (`5x = 9x − 20`) with one seat per
# segment, appeals the step its seat found Invalid, and waits for the three fresh seats:
# they uphold the verdict, so the appellant's bond goes to them. Then the session becomes
# final, the nodes stop and every ledger is verified. Homes and logs in ./out/appeal (or
# the directory given). TRUST_NODE_BIN runs a binary already built instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-out/appeal}"
base="${TRUST_BASE_PORT:-26700}"
if [ -n "${TRUST_NODE_BIN:-}" ]; then
  bin="$TRUST_NODE_BIN"
else
  cargo build --release --locked -p trust-node
  bin="${CARGO_TARGET_DIR:-target}/release/trust-node"
fi
rm -rf "$dir"
"$bin" testnet init --nodes 4 --auditor-nodes 0 --provider-nodes 1 --dev-floors --appeal-window 30 \
  --home "$dir" --base-port "$base"
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop EXIT
for i in 0 1 2 3 4; do
  "$bin" run --home "$dir/node$i" 2> "$dir/node$i.log" &
  pids+=($!)
done
provider="$dir/node4"
for _ in $(seq 1 120); do
  "$bin" status --home "$provider" >/dev/null 2>&1 && break
  sleep 0.5
done
echo "== the provider's plan at k = 1: what an appeal would need"
"$bin" submit examples/traces/fraction-incorrect.txt --seats 1 --plan --home "$provider"
echo "== submit with one seat per segment, and wait for the verdict"
"$bin" submit examples/traces/fraction-incorrect.txt --seats 1 --wait --json \
  --home "$provider" > "$dir/submit.json"
session=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["session"])' "$dir/submit.json")
"$bin" query "$session" --home "$provider"
# The index of step O2 (the wrong one) among the session's segments.
segment=$(python3 -c '
import json, sys
print(next(s["index"] for s in json.load(open(sys.argv[1]))["steps"] if s["name"] == "O2"))' "$dir/submit.json")
echo "== appeal segment #$segment (O2)"
"$bin" appeal "$session" --segments "$segment" --wait --home "$provider"
echo "== the session once its appeal window has passed"
for _ in $(seq 1 240); do
  "$bin" query "$session" --home "$provider" | grep -q '^final ' && break
  sleep 0.5
done
"$bin" query "$session" --home "$provider" | grep -E '^(verdict|final|appeal)'
stop; trap - EXIT
for i in 0 1 2 3 4; do "$bin" ledger verify --home "$dir/node$i"; done
