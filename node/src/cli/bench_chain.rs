//! `trust-node bench chain`: what one block costs to execute as the state grows.
//!
//! Two states are built in this process, one with `--small` and one with `--large`
//! funded accounts that are all bonded Computer auditors, each with as many finished
//! sessions behind them, of which the state holds the last `outcome_retention` (1,000):
//! decided outcomes with three 280-byte reasons each, the largest a vote carries; the rest
//! left the state when their retention ended. On each, a few sessions are opened and drawn (a real `OpenSession`
//! block and the block that draws their seats), and then two blocks are executed again and
//! again from the same parent state: an empty one, and one of `--votes` commits by drawn
//! seats. The report is the median wall time of `--blocks` executions of each, and of a
//! bare copy of the state, which is what a block paid before the state became persistent.
//! The two states are measured in turn, round by round, so that the machine's slow
//! spells fall on both alike.

use std::{collections::BTreeMap, path::PathBuf, time::Instant};

use clap::Args;
use serde_json::json;
use trust_contracts::{
    Contract, Coverage, Event, FailureBound, Genesis, GenesisAccount, GenesisAuditor, Outcome,
    Params, SegmentOutcome, SegmentVerdict, TraceVerdict, VoteCounts,
};
use trust_protocol::{
    AccountId, Hash, Keypair, Salt, Signed, Vote,
    block::Block,
    tx::{Call, QuorumParams, SegmentEntry, SessionManifest, SignedTx, Tier, Tx},
    units::Ppm,
};

use crate::{
    chain::{Tip, build_block, execute_block},
    cli::{CliError, CliResult},
};

/// Arguments of `bench chain`.
#[derive(Debug, Args)]
pub struct ChainArgs {
    /// Accounts (each a bonded auditor, each with a finished session) in the small state.
    #[arg(long, default_value_t = 1_000)]
    pub small: usize,
    /// Accounts, auditors and finished sessions in the large state.
    #[arg(long, default_value_t = 100_000)]
    pub large: usize,
    /// Executions of each block whose median is reported (at least 20 for a report in
    /// BENCHMARKS.md).
    #[arg(long, default_value_t = 20)]
    pub blocks: usize,
    /// Seat commits in the vote block.
    #[arg(long, default_value_t = 200)]
    pub votes: usize,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Segments of each session opened for the vote block (three seats each).
const SEGMENTS: usize = 20;

/// One state to measure on: the chain after its sessions were drawn, the two blocks to
/// execute on it, and what it holds.
struct Scene {
    contract: Contract,
    tip: Tip,
    empty: Block,
    votes: Block,
    accounts: usize,
    outcomes: usize,
}

/// A finished session's outcome as the state keeps it: three segments, three votes each
/// with a reason of the largest size.
pub(super) fn finished(provider: AccountId, seats: [AccountId; 3]) -> Outcome {
    let reason = "r".repeat(trust_protocol::MAX_REASON_BYTES);
    let segment = SegmentOutcome {
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
        votes_cast: seats
            .iter()
            .map(|s| trust_contracts::CastVote {
                seat: *s,
                round: 0,
                vote: Vote::Valid,
                reason: reason.clone(),
                counted: true,
            })
            .collect(),
    };
    Outcome {
        provider,
        opened_at: 1,
        drawn_at: 2,
        decided_at: 2,
        segments: vec![segment.clone(), segment.clone(), segment],
        left_out: Vec::new(),
        trace: TraceVerdict::Pass,
        passing_weight: 3,
        undecided_weight: 0,
        total_weight: 3,
        error_at_conclusion: false,
        conclusion_judged: true,
        conclusion_sound: true,
        coverage: Coverage {
            judged: 3,
            segments: 3,
            left_out: [0, 0, 0],
        },
        beta: Ppm(600_000),
        bound: FailureBound {
            expected_pass_weight_micro: 0,
            hoeffding_neg_ln_milli: 0,
        },
        mapping: None,
        rewards_paid: 0,
        refunded: 0,
        disputed_honeypots: 0,
        bond_burned: 0,
        honeypots_forfeited: false,
        starved_seats: 0,
        starved_paid: 0,
        payload_seats: 0,
        payload_paid: 0,
        appeals: trust_contracts::AppealRecord {
            until: 2,
            final_at: Some(2),
            ..Default::default()
        },
        quorum: QuorumParams {
            k: [3, 3, 3],
            extra_seats: 0,
            tau: Ppm(600_000),
            beta: Ppm(600_000),
        },
        terms: Default::default(),
        domain: String::new(),
    }
}

/// A session of [`SEGMENTS`] Computer segments at the network's minimum fee.
fn manifest(params: &Params, n: usize) -> SessionManifest {
    let segments = (0..SEGMENTS)
        .map(|i| SegmentEntry {
            cid: trust_protocol::cid::Cid::of(&[n.to_le_bytes(), i.to_le_bytes()].concat()),
            conclusion: i + 1 == SEGMENTS,
            ..SegmentEntry::plain(
                Hash::of_parts("bench-segment", &[&n.to_le_bytes(), &i.to_le_bytes()]),
                Tier::Computer,
            )
        })
        .collect();
    let mut m = SessionManifest {
        segments,
        mapping_commitment: trust_protocol::mapping_commitment(&Hash::ZERO, &Salt([2; 32])),
        quorum: QuorumParams {
            k: [3, 3, 3],
            extra_seats: 0,
            tau: Ppm(600_000),
            beta: Ppm(600_000),
        },
        fee: 0,
        domain: String::new(),
        left_out: Vec::new(),
        terms: Default::default(),
        honeypot_set: trust_protocol::honeypot_set_commitment(&[], &Salt([0; 32])),
    };
    m.fee = trust_contracts::minimum_fee(params, &m).unwrap_or(u64::MAX);
    m
}

fn failed(what: &str, e: impl std::fmt::Display) -> CliError {
    CliError::failed(format!("bench chain: {what}: {e}"))
}

/// Builds the state of `n` accounts and sessions, opens and draws enough sessions for
/// `votes` seat commits, and builds the two blocks to measure.
fn scene(n: usize, votes: usize) -> Result<Scene, CliError> {
    let n = n.max(4);
    let keys: Vec<Keypair> = (0..n)
        .map(|i| Keypair::from_label(&format!("bench-chain-{i}")))
        .collect();
    let index: BTreeMap<AccountId, usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.public(), i))
        .collect();
    let sealing = trust_protocol::seal::SealingSecret::from_bytes([7; 32]).public();
    let params = Params::default();
    let genesis = Genesis {
        params: params.clone(),
        accounts: keys
            .iter()
            .enumerate()
            .map(|(i, k)| GenesisAccount {
                id: k.public(),
                // The provider (account 0) pays every session's fee and bond.
                balance: if i == 0 { 1 << 40 } else { 1_000_000 },
                stake: 10_000,
            })
            .collect(),
        auditors: keys
            .iter()
            .skip(1)
            .map(|k| GenesisAuditor {
                id: k.public(),
                tier: Tier::Computer,
                expertise: Vec::new(),
                sealing_key: sealing,
            })
            .collect(),
    };
    let chain = Hash::sha256(format!("bench-chain-{n}").as_bytes());
    let start = Contract::new(&genesis)
        .map_err(|e| failed("genesis", e))?
        .with_chain(chain);
    // As many finished sessions as accounts behind them; a final outcome leaves the state
    // `outcome_retention` blocks after it became final, so the state holds at most a
    // retention window of them: one a block for the whole window (1,000 at the defaults).
    let mut state = start.state().clone();
    let kept = n.min(usize::try_from(params.outcome_retention).unwrap_or(usize::MAX));
    for i in 0..kept {
        let seat = |j: usize| keys[(i + j) % n].public();
        state.outcomes.insert(
            Hash::of_parts("bench-outcome", &[&i.to_le_bytes()]),
            finished(keys[0].public(), [seat(1), seat(2), seat(3)]),
        );
    }
    let contract = Contract::from_state(state);
    let proposer = &keys[0];
    let mut tip = Tip::genesis(chain);
    let mut clock = 1_800_000_000_000u64;
    let mut step = |c: &Contract, tip: &mut Tip, txs: &[SignedTx]| {
        clock += 1_000;
        let (block, done, dropped) =
            build_block(c, tip, proposer, clock, txs).map_err(|e| failed("seed", e))?;
        if !dropped.is_empty() {
            return Err(failed("a transaction was dropped", format!("{dropped:?}")));
        }
        *tip = tip.after(&block);
        Ok::<_, CliError>((block, done))
    };
    // Enough sessions for the votes, opened in one block and drawn in the next.
    let sessions = votes.div_ceil(3 * SEGMENTS).max(1);
    let opens: Vec<SignedTx> = (0..sessions)
        .map(|s| {
            Signed::sign(
                proposer,
                &chain,
                Tx {
                    nonce: contract.nonce(&proposer.public()) + s as u64,
                    call: Call::OpenSession(manifest(&params, s)),
                },
            )
        })
        .collect();
    let (_, opened) = step(&contract, &mut tip, &opens)?;
    let (_, drawn) = step(&opened.contract, &mut tip, &[])?;
    let contract = drawn.contract;
    let mut nonces: BTreeMap<AccountId, u64> = BTreeMap::new();
    let mut commits = Vec::new();
    for e in &drawn.events {
        let Event::SeatAssigned {
            session,
            segment,
            seat,
            ..
        } = e
        else {
            continue;
        };
        if commits.len() == votes {
            break;
        }
        let Some(&i) = index.get(seat) else {
            continue;
        };
        let nonce = nonces.entry(*seat).or_insert_with(|| contract.nonce(seat));
        commits.push(Signed::sign(
            &keys[i],
            &chain,
            Tx {
                nonce: *nonce,
                call: Call::Commit {
                    session: *session,
                    segment: *segment,
                    commitment: Hash::of_parts("bench-commit", &[&commits.len().to_le_bytes()]),
                },
            },
        ));
        *nonce += 1;
    }
    if commits.len() < votes {
        return Err(failed(
            "draw",
            format!("{} seats drawn, {votes} wanted", commits.len()),
        ));
    }
    let mut probe = tip;
    let (empty, _) = step(&contract, &mut probe, &[])?;
    let mut probe = tip;
    let (votes, _) = step(&contract, &mut probe, &commits)?;
    Ok(Scene {
        contract,
        tip,
        empty,
        votes,
        accounts: n,
        outcomes: kept,
    })
}

/// The median of a list of timings.
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Medians, in milliseconds, of one scene's empty block, vote block and bare state copy.
#[derive(Debug, Clone, Copy)]
struct Medians {
    empty: f64,
    votes: f64,
    copy: f64,
}

/// Times the scenes' blocks in turn, `runs` rounds of each: within a round every
/// scene's empty block, then every scene's vote block, then a copy of every scene's
/// state, so that a slow spell of this machine falls on the small state and the large
/// alike and the ratios of one run compare like with like. Each timed run follows an
/// untimed run of the same work, so that it never pays for what the one before it left
/// behind (the allocator tidying up after a large block is freed).
fn measure(scenes: &[Scene], runs: usize) -> Result<Vec<Medians>, CliError> {
    let mut times = vec![[Vec::new(), Vec::new(), Vec::new()]; scenes.len()];
    let timed = |f: &mut dyn FnMut() -> Result<(), CliError>| {
        f()?;
        let t = Instant::now();
        f()?;
        Ok::<f64, CliError>(t.elapsed().as_secs_f64() * 1000.0)
    };
    let execute = |s: &Scene, b: &Block| {
        execute_block(&s.contract, &s.tip, b)
            .map(drop)
            .map_err(|e| failed("execute", e))
    };
    for _ in 0..runs.max(1) {
        for (s, t) in scenes.iter().zip(times.iter_mut()) {
            t[0].push(timed(&mut || execute(s, &s.empty))?);
        }
        for (s, t) in scenes.iter().zip(times.iter_mut()) {
            t[1].push(timed(&mut || execute(s, &s.votes))?);
        }
        for (s, t) in scenes.iter().zip(times.iter_mut()) {
            t[2].push(timed(&mut || {
                std::hint::black_box(s.contract.clone());
                Ok(())
            })?);
        }
    }
    Ok(times
        .into_iter()
        .map(|[empty, votes, copy]| Medians {
            empty: median(empty),
            votes: median(votes),
            copy: median(copy),
        })
        .collect())
}

/// Runs `bench chain`.
pub fn run(args: ChainArgs) -> CliResult {
    let mut scenes = Vec::new();
    for (name, n) in [("small", args.small), ("large", args.large)] {
        let built = Instant::now();
        let s = scene(n, args.votes)?;
        outln!(
            "{name:<6} {:>7} accounts and auditors, {:>7} finished sessions in the state (built in {:.1} s)",
            s.accounts,
            s.outcomes,
            built.elapsed().as_secs_f64(),
        );
        scenes.push(s);
    }
    let medians = measure(&scenes, args.blocks)?;
    let mut rows = Vec::new();
    for ((name, s), m) in ["small", "large"].iter().zip(&scenes).zip(&medians) {
        outln!(
            "{name:<6} empty block {:.3} ms, {} votes {:.3} ms, state copy {:.3} ms (medians of {}, the two states in turn)",
            m.empty,
            args.votes,
            m.votes,
            m.copy,
            args.blocks
        );
        rows.push((s.accounts, m.empty, m.votes, m.copy));
    }
    let (small, large) = (rows[0], rows[1]);
    let ratio = |a: f64, b: f64| if a > 0.0 { b / a } else { f64::NAN };
    outln!(
        "large / small: empty block x{:.2}, vote block x{:.2}, state copy x{:.2}",
        ratio(small.1, large.1),
        ratio(small.2, large.2),
        ratio(small.3, large.3)
    );
    if let Some(path) = &args.json {
        let report = json!({
            "blocks": args.blocks,
            "votes": args.votes,
            "small_accounts": small.0,
            "large_accounts": large.0,
            "empty_small_ms": small.1,
            "empty_large_ms": large.1,
            "votes_small_ms": small.2,
            "votes_large_ms": large.2,
            "copy_small_ms": small.3,
            "copy_large_ms": large.3,
            "empty_ratio": ratio(small.1, large.1),
            "votes_ratio": ratio(small.2, large.2),
        });
        let text = serde_json::to_string_pretty(&report).map_err(|e| failed("json", e))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}
