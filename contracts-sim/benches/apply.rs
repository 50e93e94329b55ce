//! How fast the contract applies segment votes, and how long the simulator takes.
//!
//! `apply/commit` and `apply/reveal` apply 500 signed votes (100 segments x 5 seats) on a
//! copy of a state sitting in the commit (resp. reveal) window, signature checks included;
//! criterion reports elements per second = segment votes per second. `sim/sessions` runs
//! the default simulator for 200 sessions.
// criterion's macros generate the benchmark's entry points without docs.
#![allow(missing_docs)]

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use trust_contracts::{
    BlockCtx, Contract, Event, Genesis, GenesisAccount, Params,
    sim::{Sim, SimConfig},
};
use trust_protocol::{
    AccountId, Hash, Keypair, Salt, SealingPublicKey, Signed, Vote, commitment, mapping_commitment,
    tx::{Call, QuorumParams, SegmentEntry, SessionManifest, Tier, Tx},
    units::Ppm,
};

const SEGMENTS: u16 = 100;

/// A session of `segments` with `k` seats per segment in every tier, paying the minimum fee.
fn manifest(segments: Vec<SegmentEntry>, k: u8) -> SessionManifest {
    let mut m = SessionManifest {
        segments,
        mapping_commitment: mapping_commitment(&Hash::ZERO, &Salt([0; 32])),
        quorum: QuorumParams {
            k: [k; 3],
            extra_seats: 0,
            tau: Ppm(600_000),
            beta: Ppm(800_000),
        },
        fee: 0,
        domain: String::new(),
        left_out: Vec::new(),
        terms: trust_protocol::tx::SessionTerms::default(),
        honeypot_set: Hash::ZERO,
    };
    m.fee = trust_contracts::minimum_fee(&Params::default(), &m).unwrap();
    m
}

fn ctx(h: u64) -> BlockCtx {
    BlockCtx {
        height: h,
        block_hash: Hash::of_parts("bench", &[&h.to_le_bytes()]),
    }
}

/// A contract with 40 auditors and one 100-segment session whose seats are drawn, plus
/// the signed commits and reveals of every seat.
fn setup() -> (Contract, Vec<Signed<Tx>>, Vec<Signed<Tx>>) {
    let keys: Vec<Keypair> = (0..40)
        .map(|i| Keypair::from_label(&format!("a{i}")))
        .collect();
    let provider = Keypair::from_label("provider");
    let mut accounts: Vec<GenesisAccount> = keys
        .iter()
        .map(|k| GenesisAccount {
            id: k.public(),
            balance: 1_000,
            stake: 0,
        })
        .collect();
    accounts.push(GenesisAccount {
        id: provider.public(),
        balance: 1 << 40,
        stake: 0,
    });
    let mut c = Contract::new(&Genesis {
        params: Params::default(),
        accounts,
        auditors: vec![],
    })
    .unwrap();
    for k in &keys {
        let call = Call::RegisterAuditor {
            tier: Tier::Llm,
            expertise: vec![],
            sealing_key: SealingPublicKey([1; 32]),
            stake: 1_000,
        };
        c.apply(
            &ctx(1),
            &Signed::sign(k, &trust_protocol::Hash::ZERO, Tx { nonce: 0, call }),
        )
        .unwrap();
    }
    let segments: Vec<SegmentEntry> = (0..SEGMENTS)
        .map(|i| SegmentEntry {
            cid: trust_protocol::cid::Cid::of(&i.to_le_bytes()),
            ..SegmentEntry::plain(Hash::of_parts("seg", &[&i.to_le_bytes()]), Tier::Llm)
        })
        .collect();
    let m = manifest(segments, 5);
    let sid = Tx::session_id(&provider.public(), 0);
    c.apply(
        &ctx(2),
        &Signed::sign(
            &provider,
            &trust_protocol::Hash::ZERO,
            Tx {
                nonce: 0,
                call: Call::OpenSession(m),
            },
        ),
    )
    .unwrap();
    c.end_block(&ctx(2));
    let mut ev = c.begin_block(&ctx(3));
    ev.extend(c.end_block(&ctx(3)));
    let mut nonces = std::collections::BTreeMap::new();
    let (mut commits, mut reveals) = (Vec::new(), Vec::new());
    let salt = Salt([4; 32]);
    for e in ev {
        if let Event::SeatAssigned { segment, seat, .. } = e {
            let k = keys.iter().find(|k| k.public() == seat).unwrap();
            let n = nonces.entry(seat).or_insert(1u64);
            let id = Hash::of_parts("seg", &[&segment.to_le_bytes()]);
            // A reason of the length a checker writes.
            let reason = "the calculation 3/4 + 1/4 = 1 holds";
            let cm = commitment(&sid, &id, &seat, Vote::Valid, &salt, reason);
            commits.push((
                k.clone(),
                *n,
                Call::Commit {
                    session: sid,
                    segment,
                    commitment: cm,
                },
            ));
            *n += 1;
            reveals.push((
                k.clone(),
                Call::Reveal {
                    session: sid,
                    segment,
                    vote: Vote::Valid,
                    salt,
                    reason: reason.into(),
                },
            ));
        }
    }
    let commits: Vec<Signed<Tx>> = commits
        .into_iter()
        .map(|(k, nonce, call)| Signed::sign(&k, &trust_protocol::Hash::ZERO, Tx { nonce, call }))
        .collect();
    let mut committed = c.clone();
    for t in &commits {
        committed.apply(&ctx(4), t).unwrap();
    }
    committed.end_block(&ctx(4));
    let mut rn = std::collections::BTreeMap::new();
    let reveals: Vec<Signed<Tx>> = reveals
        .into_iter()
        .map(|(k, call)| {
            let n = rn
                .entry(k.public())
                .or_insert_with(|| committed.nonce(&k.public()));
            let t = Signed::sign(&k, &trust_protocol::Hash::ZERO, Tx { nonce: *n, call });
            *n += 1;
            t
        })
        .collect();
    (c, commits, reveals)
}

/// The largest delivery a block carries into the densest session: 1,024 segments each
/// citing the 16 before it, 3 seats each, and one `DeliverKeys` of 1,024 sealed keys (a
/// transaction is at most 128 KiB, about 1,000 keys), each key taken by its segment's
/// seats and by the seats of the 16 segments that cite it.
fn dense_delivery() -> (Contract, AccountId, Tx) {
    use trust_protocol::{
        seal::SealedKey,
        tx::{MAX_DEPENDENCIES, MAX_SEGMENTS, SeatKey},
    };
    let keys: Vec<Keypair> = (0..40)
        .map(|i| Keypair::from_label(&format!("d{i}")))
        .collect();
    let provider = Keypair::from_label("provider");
    let mut accounts: Vec<GenesisAccount> = keys
        .iter()
        .map(|k| GenesisAccount {
            id: k.public(),
            balance: 0,
            stake: 1_000,
        })
        .collect();
    accounts.push(GenesisAccount {
        id: provider.public(),
        balance: 1 << 40,
        stake: 0,
    });
    let mut c = Contract::new(&Genesis {
        params: Params::default(),
        accounts,
        auditors: keys
            .iter()
            .map(|k| trust_contracts::GenesisAuditor {
                id: k.public(),
                tier: Tier::Llm,
                expertise: vec![],
                sealing_key: SealingPublicKey([1; 32]),
            })
            .collect(),
    })
    .unwrap();
    let segments: Vec<SegmentEntry> = (0..MAX_SEGMENTS as u16)
        .map(|i| SegmentEntry {
            depends_on: (i.saturating_sub(MAX_DEPENDENCIES as u16)..i).collect(),
            cid: trust_protocol::cid::Cid::of(&i.to_le_bytes()),
            ..SegmentEntry::plain(Hash::of_parts("dense", &[&i.to_le_bytes()]), Tier::Llm)
        })
        .collect();
    let m = manifest(segments, 3);
    let sid = Tx::session_id(&provider.public(), 0);
    c.apply_verified(
        &ctx(2),
        provider.public(),
        &Tx {
            nonce: 0,
            call: Call::OpenSession(m),
        },
    )
    .unwrap();
    c.end_block(&ctx(2));
    let mut ev = c.begin_block(&ctx(3));
    ev.extend(c.end_block(&ctx(3)));
    let mut sealed = Vec::new();
    for e in ev {
        if let Event::SeatAssigned { segment, seat, .. } = e
            && sealed.len() < 1024
        {
            sealed.push(SeatKey {
                segment,
                seat,
                sealed: SealedKey {
                    ephemeral: SealingPublicKey([2; 32]),
                    ciphertext: vec![0; 48],
                },
            });
        }
    }
    let tx = Tx {
        nonce: 1,
        call: Call::DeliverKeys {
            session: sid,
            keys: sealed,
        },
    };
    (c, provider.public(), tx)
}

fn bench(cr: &mut Criterion) {
    let (dense, provider, delivery) = dense_delivery();
    let mut g = cr.benchmark_group("deliver_keys");
    g.sample_size(20);
    g.throughput(Throughput::Elements(1024));
    g.bench_function("1024 keys, 1024-segment session citing 16 each", |b| {
        b.iter_batched(
            || dense.clone(),
            |mut s| {
                s.apply_verified(&ctx(4), provider, &delivery).unwrap();
                s
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();

    let (c, commits, reveals) = setup();
    let mut committed = c.clone();
    for t in &commits {
        committed.apply(&ctx(4), t).unwrap();
    }
    committed.end_block(&ctx(4));

    let mut g = cr.benchmark_group("apply");
    g.throughput(Throughput::Elements(commits.len() as u64));
    g.bench_function("commit", |b| {
        b.iter_batched(
            || c.clone(),
            |mut s| {
                for t in &commits {
                    s.apply(&ctx(4), t).unwrap();
                }
                s
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("reveal", |b| {
        b.iter_batched(
            || committed.clone(),
            |mut s| {
                for t in &reveals {
                    s.apply(&ctx(5), t).unwrap();
                }
                s
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();

    let mut g = cr.benchmark_group("sim");
    g.sample_size(10);
    g.throughput(Throughput::Elements(200));
    g.bench_function("sessions", |b| {
        b.iter(|| {
            Sim::new(SimConfig {
                sessions: 200,
                ..SimConfig::default()
            })
            .unwrap()
            .run()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
