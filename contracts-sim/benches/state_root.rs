//! What the state root costs per block as the ledger ages.
//!
//! A state holding 1k, 10k and 100k decided outcomes (8 segments each) and 64 accounts.
//! `block/incremental` applies one small block (8 transfers, then `end_block`, which
//! writes the touched entries to the Merkle tree) and reads the root: what a node pays
//! per block today. `block/full_rehash` is what it paid before: `sha256` over the bincode
//! encoding of the whole state (measured here on the same states). The first must stay
//! flat as outcomes accumulate; the second grows with them. `block/clone_contract` is the
//! copy the node makes to execute a block on, which still grows with the state.
// criterion's macros generate the benchmark's entry points without docs.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use trust_contracts::{
    BlockCtx, CastVote, Contract, Coverage, FailureBound, Genesis, GenesisAccount, Outcome, Params,
    SegmentOutcome, SegmentVerdict, State, TraceVerdict, VoteCounts,
};
use trust_protocol::{
    Hash, Keypair,
    tx::{Call, Tier, Tx},
    units::Ppm,
};

const ACCOUNTS: usize = 64;
const TRANSFERS: usize = 8;

fn outcome(provider: Hash, i: u64) -> Outcome {
    let seg = SegmentOutcome {
        id: Hash::ZERO,
        verdict: SegmentVerdict::Valid,
        tier: Tier::Computer,
        escalated: false,
        k: 3,
        q: 2,
        votes: VoteCounts {
            valid: 3,
            ..VoteCounts::default()
        },
        honeypot: None,
        supports: None,
        conclusion: false,
        // Three seats' votes with reasons of the length a checker writes.
        votes_cast: (0..3u8)
            .map(|s| CastVote {
                seat: trust_protocol::PublicKey([s; 32]),
                round: 0,
                vote: trust_protocol::Vote::Valid,
                reason: "the calculation 3/4 + 1/4 = 1 holds".into(),
                counted: true,
            })
            .collect(),
    };
    Outcome {
        provider: trust_protocol::PublicKey(provider.0),
        opened_at: i,
        drawn_at: i + 1,
        decided_at: i + 5,
        segments: vec![seg; 8],
        left_out: Vec::new(),
        trace: TraceVerdict::Pass,
        passing_weight: 8,
        undecided_weight: 0,
        total_weight: 8,
        error_at_conclusion: false,
        conclusion_judged: true,
        conclusion_sound: true,
        coverage: Coverage {
            judged: 8,
            segments: 8,
            left_out: [0; 3],
        },
        beta: Ppm(700_000),
        bound: FailureBound {
            expected_pass_weight_micro: 7_900_000,
            hoeffding_neg_ln_milli: 1_234,
        },
        mapping: Some(Hash::of_parts("bench-map", &[&i.to_le_bytes()])),
        rewards_paid: 30,
        refunded: 0,
        disputed_honeypots: 0,
        bond_burned: 0,
        honeypots_forfeited: false,
        starved_seats: 0,
        starved_paid: 0,
        payload_seats: 0,
        payload_paid: 0,
        appeals: Default::default(),
        quorum: trust_protocol::tx::QuorumParams {
            k: [3; 3],
            extra_seats: 0,
            tau: Ppm(600_000),
            beta: Ppm(600_000),
        },
        terms: Default::default(),
        domain: String::new(),
    }
}

fn setup(outcomes: u64) -> (Contract, Vec<Keypair>) {
    let keys: Vec<Keypair> = (0..ACCOUNTS)
        .map(|i| Keypair::from_label(&format!("bench-{i}")))
        .collect();
    let genesis = Genesis {
        params: Params::default(),
        accounts: keys
            .iter()
            .map(|k| GenesisAccount {
                id: k.public(),
                balance: 1 << 40,
                stake: 0,
            })
            .collect(),
        auditors: vec![],
    };
    let mut state: State = Contract::new(&genesis).unwrap().state().clone();
    for i in 0..outcomes {
        let id = Hash::of_parts("bench-session", &[&i.to_le_bytes()]);
        state.outcomes.insert(id, outcome(id, i));
    }
    (Contract::from_state(state), keys)
}

fn full_rehash(state: &State) -> Hash {
    let cfg = bincode::config::standard()
        .with_little_endian()
        .with_fixed_int_encoding();
    let bytes = bincode::serde::encode_to_vec(state, cfg).unwrap();
    Hash::sha256(&bytes)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("block");
    g.sample_size(10);
    for n in [1_000u64, 10_000, 100_000] {
        let (mut contract, keys) = setup(n);
        let mut height = contract.state().height;
        let mut round = 0usize;
        g.bench_with_input(BenchmarkId::new("incremental", n), &n, |b, _| {
            b.iter(|| {
                height += 1;
                let ctx = BlockCtx {
                    height,
                    block_hash: Hash::of_parts("bench-block", &[&height.to_le_bytes()]),
                };
                for t in 0..TRANSFERS {
                    let from = &keys[(round + t) % ACCOUNTS];
                    let to = keys[(round + t + 1) % ACCOUNTS].public();
                    let tx = Tx {
                        nonce: contract.nonce(&from.public()),
                        call: Call::Transfer { to, amount: 1 },
                    };
                    contract.apply_verified(&ctx, from.public(), &tx).unwrap();
                }
                round += TRANSFERS;
                contract.end_block(&ctx);
                contract.state_root()
            })
        });
        g.bench_with_input(BenchmarkId::new("full_rehash", n), &n, |b, _| {
            b.iter(|| full_rehash(contract.state()))
        });
        // Not the root's cost, but a per-block cost the node still pays: it executes each
        // block on a copy of the contract (state and tree).
        g.bench_with_input(BenchmarkId::new("clone_contract", n), &n, |b, _| {
            b.iter(|| contract.clone())
        });
        // The tree holds one version: nodes stay proportional to the entries.
        let entries = contract.state().outcomes.len() + contract.state().accounts.len() + 1;
        eprintln!(
            "outcomes {n}: {entries} leaves, {} tree nodes in memory after the blocks",
            contract.tree_nodes()
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
