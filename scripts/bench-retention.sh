#!/usr/bin/env bash
# 2,000 sessions on a 4-node network with outcome_retention 20: state, disk, block time.
set -u
OUT=${OUT:-/tmp/trust-retention-out}; mkdir -p "$OUT"
B=${TRUST_NODE:-target/release/trust-node}
H=${HOME_DIR:-/tmp/trust-retention}
rm -rf $H; $B testnet init --nodes 4 --auditor-nodes 0 --home $H --base-port 34000 --outcome-retention 20 > ${OUT:-/tmp/trust-retention-out}/init.log 2>&1
for i in 0 1 2 3; do (nohup $B run --home $H/node$i > $H/log$i 2>&1 &); done
sleep 5
T=(examples/traces/bakery-correct.txt examples/traces/bakery-wrong.txt examples/traces/fraction-correct.txt examples/traces/fraction-incorrect.txt)
start=$(date +%s)
( while true; do
    now=$(date +%s); s=$($B status --home $H/node0 --json 2>/dev/null)
    echo "$((now-start)) $s" >> ${OUT:-/tmp/trust-retention-out}/samples.jsonl
    sleep 10
  done ) &
SAMPLER=$!
ok=0; retries=0
for n in $(seq 0 1999); do
  t=${T[$((n % ${#T[@]}))]}
  until $B submit "$t" --home $H/node0 > /dev/null 2>&1; do retries=$((retries+1)); sleep 0.2; done
  ok=$((ok+1))
done
echo "submitted $ok retries $retries at $(( $(date +%s)-start )) s" >> ${OUT:-/tmp/trust-retention-out}/summary
# until every outcome has left the state
while true; do
  s=$($B status --home $H/node0 --json 2>/dev/null)
  live=$(echo "$s" | python3 -c "import json,sys; v=json.load(sys.stdin); st=v['storage']; print(st['live_sessions']+st['outcomes'])" 2>/dev/null || echo 1)
  [ "$live" = "0" ] && break
  sleep 5
done
sleep 12
kill $SAMPLER
echo "done at $(( $(date +%s)-start )) s" >> ${OUT:-/tmp/trust-retention-out}/summary
du -sm $H/node*/data >> ${OUT:-/tmp/trust-retention-out}/summary
