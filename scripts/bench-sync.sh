#!/usr/bin/env bash
# State sync against sync from genesis, and a pruning node's disk against an archive's
# (BENCHMARKS.md "State sync and pruning"). Needs a release build (cargo build --release
# -p trust-node); TARGET (height, default 2000) and BT (block time ms, default 50).
set -u
B=${B:-${CARGO_TARGET_DIR:-target}/release/trust-node}
D=${D:-/tmp/trust-bench-sync}; rm -rf $D; mkdir -p $D
$B testnet init --nodes 5 --auditor-nodes 0 --home $D/net --base-port 32100 > $D/init.txt 2>&1 || { cat $D/init.txt; exit 1; }
# node3 prunes: `[ledger]` (written last by testnet init) gets keep_blocks beside snapshot_every.
sed -i 's/^snapshot_every = .*/snapshot_every = 100\nkeep_blocks = 200/' $D/net/node3/config.toml
api() { echo "127.0.0.1:$((32100 + 10*$1 + 2))"; }
h() { curl -s "http://$(api $1)/v1/status" | python3 -c "import json,sys; print(json.load(sys.stdin)['height'])" 2>/dev/null || echo 0; }
for i in 0 1 2 3; do RUST_LOG=warn $B run --home $D/net/node$i --block-time-ms ${BT:-50} > $D/node$i.log 2>&1 & done
target=${TARGET:-2000}
while [ "$(h 0)" -lt "$target" ]; do sleep 2; done
start=$(h 0)
echo "network at height $start"
t0=$(date +%s.%N)
# Past the genesis unbonding horizon a joining node needs a block it trusts: node0's tip,
# as `status` prints it (docs/operators.md, "State sync").
trust=$(curl -s "http://$(api 0)/v1/status" | python3 -c "import json,sys; s=json.load(sys.stdin); print(f\"{s['height']}:{s['tip_hash']}\")")
RUST_LOG=info $B run --home $D/net/node4 --block-time-ms ${BT:-50} --state-sync "$(api 0)" --state-sync-trust "$trust" > $D/node4-ss.log 2>&1 &
p4=$!
while [ "$(h 4)" -lt "$start" ]; do sleep 0.2; done
t1=$(date +%s.%N)
ss_oldest=$(curl -s "http://$(api 4)/v1/status" | python3 -c "import json,sys; print(json.load(sys.stdin)['oldest_block'])")
kill -TERM $p4; wait $p4
ss_bytes=$(du -sb $D/net/node4/data | cut -f1)
rm -rf $D/net/node4/data
start2=$(h 0)
t2=$(date +%s.%N)
RUST_LOG=warn $B run --home $D/net/node4 --block-time-ms ${BT:-50} > $D/node4-g.log 2>&1 &
p4=$!
while [ "$(h 4)" -lt "$start2" ]; do sleep 0.2; done
t3=$(date +%s.%N)
kill -TERM $p4; wait $p4
g_bytes=$(du -sb $D/net/node4/data | cut -f1)
a_bytes=$(du -sb $D/net/node0/data | cut -f1)
p_bytes=$(du -sb $D/net/node3/data | cut -f1)
p_oldest=$(curl -s "http://$(api 3)/v1/status" | python3 -c "import json,sys; print(json.load(sys.stdin)['oldest_block'])")
end=$(h 0)
pkill -f "$D/net/node"
python3 - <<PY
print(f"state sync: to height {$start} in {float('$t1')-float('$t0'):.1f} s, base {$ss_oldest}, data {int('$ss_bytes')/1e6:.2f} MB")
print(f"from genesis: to height {$start2} in {float('$t3')-float('$t2'):.1f} s, data {int('$g_bytes')/1e6:.2f} MB")
print(f"archive node0 at ~{$end}: {int('$a_bytes')/1e6:.2f} MB; pruning node3 (keep 200, snapshots every 100): {int('$p_bytes')/1e6:.2f} MB, oldest {$p_oldest}")
PY
