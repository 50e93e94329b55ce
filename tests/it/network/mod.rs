//! Multi-node scenarios on loopback: real `trust-node run` processes, real libp2p swarms
//! (ours and Malachite's), real sled ledgers in temp dirs, driven through the shared
//! [`Network`](crate::fixtures::network::Network) harness.

mod adversary;
mod agent;
mod appeal;
mod assurance;
mod audit;
mod chain;
mod cli;
mod crash;
mod events;
mod faults;
mod joining;
mod lifecycle;
mod llm;
mod llm_honeypots;
mod long;
mod misbehave;
mod python;
mod restart;
mod shutdown;
