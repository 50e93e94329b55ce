#!/usr/bin/env bash
# The README's main job. Builds trust-node and runs what works today, on embedded
# defaults, writing reports to ./out (or the directory given as the first argument):
#   1. the economics check of the paper's worked example (Theorem 1 dials),
#   2. the trace-failure sweep of Figure 4 (exact DP vs Hoeffding vs Chernoff),
#   3. the seeded contract simulation of Figure 6 and the corruption sweep of Table 1.
# Until the network node lands, this is the local job; see README "Status".
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out}"
mkdir -p "$out"

echo "== building trust-node (release; the first build takes a few minutes)"
cargo build --release --locked -p trust-node
bin=target/release/trust-node

echo
echo "== 1. economics check of the paper's worked example"
# The paper's example violates its own p_min dial, so this check exits 1 by design.
"$bin" econ check || echo "(exit $?: a dial failed, as the paper's example does)"

echo
echo "== 2. trace failure probability vs beta (Figure 4, left)"
"$bin" quorum sweep --spec examples/quorum/figure4.json --svg "$out/figure4.svg"

if "$bin" simulate --help >/dev/null 2>&1 && [ "${TRUST_DEMO_SKIP_SIM:-0}" != 1 ]; then
  echo
  echo "== 3. seeded contract simulation (Figure 6) and corruption sweep (Table 1)"
  "$bin" simulate --seed 7 --out "$out/sim"
  "$bin" simulate sweep --seed 7 --corruption 0,0.05,0.1,0.15,0.2 --out "$out/sweep"
fi

echo
echo "reports written to $out/"
ls -R "$out"
