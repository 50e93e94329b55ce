//! Cross-crate and multi-node scenarios, one module per scenario, shared fixtures in
//! [`fixtures`] (the shape of Malachite's `tests/it/`).
//!
//! | module | what runs |
//! |---|---|
//! | `api_schema` | schemathesis (PyPI) against a live node's OpenAPI document: generated requests, every answer checked against the document |
//! | `browser` | the audit form in a real headless Chromium (Debian `chromium`) over the DevTools protocol, on a network of four validators and one Human node: log in, vote, follow the verdict, screenshots |
//! | `network::*` | real `trust-node run` processes on loopback (ours and Malachite's swarms, sled ledgers in temp dirs): ordering, sync, audits end to end, crashes, faults, LLM seats, shutdown. Nextest runs them one at a time (`.config/nextest.toml`, group `networks`) so networks do not starve each other of the machine's cores. |
//! | `fuzz_seeds` | the fuzz targets' checks (`fuzz/checks/`) on every committed seed corpus, in the ordinary build |
//! | `swarm` | our libp2p swarm actor in-process: gossip, Kademlia, bans, sync, Bitswap, and a real Kubo fetching a block from us |
//! | `kubo_rpc` | the Kubo RPC client against a stand-in server (no Kubo HTTP API can run here) |
//! | `layering` | every crate's module graph and file graph, read from its sources, is a hierarchy |
//! | `llm_endpoints` | an LLM seat against misbehaving stand-in endpoints |
//! | `llm_injection` | a step that instructs the LLM judge, against a gullible stand-in model: the old question and fixed probes vote it Valid, a seat does not |
//! | `llm_model` | an LLM seat through a real llama.cpp server |
//!
//! The network scenarios run the `trust-node` binary next to this test binary
//! (`target/<profile>/trust-node`), or the one `TRUST_NODE_BIN` names. `scripts/test.sh`
//! builds it first; see [`fixtures::bin`].

mod api_schema;
mod browser;
mod fixtures;
mod fuzz_seeds;
mod kubo_rpc;
mod layering;
mod llm_endpoints;
mod llm_injection;
mod llm_model;
mod network;
mod swarm;
