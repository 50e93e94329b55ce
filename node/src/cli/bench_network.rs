//! `trust-node bench network`: the session load generator.
//!
//! It starts an N-validator network of real `trust-node run` processes on loopback (this
//! binary, in a scratch directory), has node 0 open audit sessions of S Computer-tier
//! segments with k seats each (a provider HDAG over a generated arithmetic trace, so the
//! shape is exact), at a target rate, one after another (`--sequential`) or as fast as
//! node 0 accepts them, follows them on node 1 until every one is decided, and reports:
//! - sessions and segment votes (a commit and a reveal each) finalized per second;
//! - submit→verdict latency at p50, p90 and p99;
//! - block time, mempool depth, gossip payload bytes per vote;
//! - CPU seconds and peak RSS of every node, and where the CPU went: each part of the
//!   nodes' profile (`trust_cpu_seconds_total`, see [`crate::cpu`]) in milliseconds per
//!   judged vote per node and as a share of the nodes' CPU;
//! - in the same run, before the network starts: the single-core ed25519 verify rate
//!   (through the protocol's strict check, plain, and batched) and a single-process
//!   centralized pipeline (parse + HDAG + Computer check + tally, no network, no
//!   consensus) on the same traces, so that the network's figures can be read as ratios.
//!
//! Output: a Markdown table on stdout (and `--markdown FILE`), JSON with `--json FILE`,
//! and a progress line on stderr while it runs.

use std::{
    collections::BTreeMap,
    io::{IsTerminal, Write as _},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use clap::Args;
use serde::Serialize;
use serde_json::{Value, json};
use trust_protocol::{Keypair, Signed, trace::Trace, tx::Tx};

use trust_judging::decompose;

use crate::{
    api::{
        client::{self, Client},
        views::{OpenSessionBody, SessionStatus},
    },
    cli::{CliError, CliResult},
    config,
};

/// Arguments of `bench network`.
#[derive(Debug, Args)]
pub struct NetworkArgs {
    /// Validators (each a Computer-tier auditor; node 0 is also the provider).
    #[arg(long, default_value_t = 4)]
    pub nodes: u16,
    /// Sessions to open.
    #[arg(long, default_value_t = 20)]
    pub sessions: usize,
    /// Computer-tier segments per session.
    #[arg(long, default_value_t = 20)]
    pub segments: usize,
    /// Seats per segment (at most the auditors other than the provider: nodes - 1).
    #[arg(long, default_value_t = 3)]
    pub seats: u8,
    /// Honeypots node 0 plants in each session (`testnet init --honeypots-per-session`;
    /// the network's default terms plant 2). 0 by default, so that every run measures
    /// the same segments.
    #[arg(long, default_value_t = 0)]
    pub honeypots: u8,
    /// Sessions per second to open; 0 opens them as fast as node 0 accepts.
    #[arg(long, default_value_t = 0.0, conflicts_with = "sequential")]
    pub rate: f64,
    /// Open each session only once the one before is decided (submit→verdict latency
    /// with nothing else on the chain).
    #[arg(long)]
    pub sequential: bool,
    /// The network's block time, in milliseconds.
    #[arg(long, default_value_t = 300)]
    pub block_time_ms: u64,
    /// First port of the network (node i uses P+10i, P+10i+1, P+10i+2).
    #[arg(long, default_value_t = 29_000)]
    pub base_port: u16,
    /// Keep the node homes and logs here (default: a scratch directory, removed after).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also write the Markdown table to this file.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Genesis seat capacity of the Computer tier (`testnet init --seat-capacity`); a
    /// large value turns admission off, to measure what it prevents.
    #[arg(long)]
    pub seat_capacity: Option<u32>,
    /// Give up when the sessions are not all decided after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_secs: u64,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The run's shape.
    pub nodes: u16,
    /// Sessions opened.
    pub sessions: usize,
    /// Segments per session.
    pub segments: usize,
    /// Seats per segment.
    pub seats: u8,
    /// Honeypots planted per session.
    pub honeypots: u8,
    /// Target sessions per second (0: as fast as accepted).
    pub rate: f64,
    /// Whether each session was opened only once the one before was decided.
    pub sequential: bool,
    /// Block time asked for, in milliseconds.
    pub block_time_ms: u64,
    /// Sessions decided.
    pub decided: usize,
    /// Seconds from the first submit to the last verdict.
    pub seconds: f64,
    /// Sessions finalized per second.
    pub sessions_per_sec: f64,
    /// Segment votes (counted or abstaining reveals, each after a commit) finalized.
    pub votes: u64,
    /// Segment votes finalized per second.
    pub votes_per_sec: f64,
    /// Seats that never committed or never revealed in time (every round).
    pub missing_votes: u64,
    /// Of `votes`, the abstentions (a seat that could not judge its segment in time says
    /// so rather than miss its window).
    pub abstained_votes: u64,
    /// `missing_votes` over the seat votes of the sessions admitted (`votes` +
    /// `missing_votes`): the no-show rate a burst inflicted.
    pub missing_fraction: f64,
    /// Sessions whose draw waited for the network's capacity (drawn more than one block
    /// after the block that opened them).
    pub deferred: usize,
    /// Sessions that failed instead of running (a draw that could not fill, or one that
    /// waited past the network's patience): refunded, not judged.
    pub refused: usize,
    /// Submit→verdict latency of every session, seconds, in the order they were opened.
    pub latencies: Vec<f64>,
    /// Submit→verdict latency percentiles, seconds.
    pub latency_p50: f64,
    /// 90th percentile.
    pub latency_p90: f64,
    /// 99th percentile.
    pub latency_p99: f64,
    /// Seconds node 0 took to accept a session (POST /v1/sessions), median.
    pub submit_p50: f64,
    /// Blocks decided during the run.
    pub blocks: u64,
    /// Mean seconds per block during the run.
    pub block_time: f64,
    /// Mempool depth on node 1, largest and mean over the samples.
    pub mempool_max: u64,
    /// Mean mempool depth.
    pub mempool_mean: f64,
    /// Gossip payload bytes received, summed over nodes, per vote.
    pub gossip_bytes_per_vote: f64,
    /// Per node: CPU seconds during the run and peak RSS in MiB.
    pub node_cpu_secs: Vec<f64>,
    /// Peak resident memory per node, MiB.
    pub node_peak_rss_mib: Vec<f64>,
    /// Where the nodes' CPU went during the run, by part ([`crate::cpu::Part`]), then
    /// what no part claims: `sled threads` and `other`.
    pub profile: Vec<ProfileRow>,
    /// The floor and the centralized pipeline, measured in this run.
    pub floor: Floor,
}

/// One part of the nodes' CPU profile over a run.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileRow {
    /// The part (`trust_cpu_seconds_total`'s label), `sled threads` or `other`.
    pub part: String,
    /// CPU seconds, summed over the nodes.
    pub cpu_secs: f64,
    /// Milliseconds per judged vote (not abstaining) per node: `cpu_secs` over the judged
    /// votes, over the nodes.
    pub ms_per_judged_vote_per_node: f64,
    /// Share of the nodes' CPU seconds.
    pub share: f64,
}

/// CPU seconds per part in one node's `/metrics` text.
fn parts(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("trust_cpu_seconds_total{part=\"")?;
            let (part, value) = rest.split_once("\"} ")?;
            Some((part.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// The profile of a run: per part, what the nodes spent between `before` and `after`
/// (each node's parts), then what their processes spent (`node_cpu`) beyond: in sled's
/// own threads (`sled_cpu`), and the rest (`other`: Malachite's actors and swarm, the
/// runtime, threads that ended during the run).
fn profile(
    before: &[BTreeMap<String, f64>],
    after: &[BTreeMap<String, f64>],
    node_cpu: &[f64],
    sled_cpu: f64,
    judged: u64,
) -> Vec<ProfileRow> {
    let mut sums: Vec<(String, f64)> = Vec::new();
    for name in crate::cpu::Part::ALL.map(crate::cpu::Part::name) {
        let secs: f64 = before
            .iter()
            .zip(after)
            .map(|(b, a)| {
                (a.get(name).copied().unwrap_or(0.0) - b.get(name).copied().unwrap_or(0.0)).max(0.0)
            })
            .sum();
        sums.push((name.to_string(), secs));
    }
    let total: f64 = node_cpu.iter().sum();
    let claimed: f64 = sums.iter().map(|(_, s)| s).sum();
    let sled = sled_cpu.clamp(0.0, (total - claimed).max(0.0));
    sums.push(("sled threads".into(), sled));
    sums.push(("other".into(), (total - claimed - sled).max(0.0)));
    let nodes = node_cpu.len().max(1) as f64;
    sums.into_iter()
        .map(|(part, cpu_secs)| ProfileRow {
            ms_per_judged_vote_per_node: 1000.0 * cpu_secs / judged.max(1) as f64 / nodes,
            share: cpu_secs / total.max(1e-9),
            part,
            cpu_secs,
        })
        .collect()
}

/// The single-core floors measured before the network starts.
#[derive(Debug, Clone, Serialize)]
pub struct Floor {
    /// Signed transactions verified per second through the protocol's strict check (key
    /// decompressed each time), one core.
    pub verify_strict_per_sec: f64,
    /// Signatures verified per second with a decompressed key, one core.
    pub verify_plain_per_sec: f64,
    /// Signatures verified per second in batches of 64, one core.
    pub verify_batch_per_sec: f64,
    /// Segment votes per second one core could verify (strict): every vote is two signed
    /// transactions.
    pub votes_floor_per_sec: f64,
    /// The network's votes/s as a fraction of `votes_floor_per_sec`.
    pub network_fraction_of_floor: f64,
    /// The centralized pipeline: sessions judged per second (one process, one core).
    pub central_sessions_per_sec: f64,
    /// Its segments judged per second.
    pub central_segments_per_sec: f64,
}

/// The generated trace of session `i`: a chain of `n` additions, every one correct, and
/// the provider HDAG with one Computer-tier OPERATION per line.
pub fn session_trace(i: usize, n: usize) -> (String, String) {
    let mut lines = Vec::with_capacity(n);
    let mut total = 7 + i as u64;
    for j in 0..n {
        let add = 3 + (j as u64 * 7 + i as u64) % 90;
        lines.push(format!("Step {}: {total} + {add} = {}", j + 1, total + add));
        total += add;
    }
    let trace = format!(
        "## Problem Statement\nSession {i}: start at {} and add the numbers step by step.\n## Thinking Process\n{}\n## Final Output\n{total}\n",
        7 + i,
        lines.join("\n")
    );
    let nodes: Vec<Value> = lines
        .iter()
        .enumerate()
        .map(|(j, l)| {
            json!({"id": format!("S{}", j + 1), "content": l,
                "abstraction_level": "OPERATION", "primary_auditor": "T_Auto"})
        })
        .collect();
    let edges: Vec<Value> = (1..lines.len())
        .map(|j| {
            json!({"from": format!("S{}", j + 1), "to": format!("S{j}"),
                "relationship": "depends_on"})
        })
        .collect();
    (trace, json!({"nodes": nodes, "edges": edges}).to_string())
}

/// Verifications per second of `f` over `n` items, run until at least `min` has passed.
fn rate(n: usize, min: Duration, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut rounds = 0u64;
    while rounds == 0 || start.elapsed() < min {
        f();
        rounds += 1;
    }
    (rounds as f64 * n as f64) / start.elapsed().as_secs_f64()
}

/// The single-core floors and the centralized pipeline on `traces`.
fn measure_floor(traces: &[(String, String)], segments: usize) -> Result<Floor, CliError> {
    use ed25519_dalek::{Signer, SigningKey, Verifier};
    const N: usize = 512;
    let key = Keypair::from_label("bench-floor");
    let txs: Vec<_> = (0..N)
        .map(|i| {
            Signed::sign(
                &key,
                &trust_protocol::Hash::ZERO,
                Tx {
                    nonce: i as u64,
                    call: trust_protocol::tx::Call::Transfer {
                        to: key.public(),
                        amount: 1,
                    },
                },
            )
        })
        .collect();
    let window = Duration::from_millis(700);
    let strict = rate(N, window, || {
        for t in &txs {
            assert!(t.verify(&trust_protocol::Hash::ZERO).is_ok());
        }
    });
    let sk = SigningKey::from_bytes(&[7; 32]);
    let vk = sk.verifying_key();
    let msgs: Vec<Vec<u8>> = (0..N)
        .map(|i| format!("vote {i} {}", "x".repeat(160)).into_bytes())
        .collect();
    let sigs: Vec<_> = msgs.iter().map(|m| sk.sign(m)).collect();
    let plain = rate(N, window, || {
        for (m, s) in msgs.iter().zip(&sigs) {
            assert!(vk.verify(m, s).is_ok());
        }
    });
    let keys = vec![vk; 64];
    let batch = rate(N, window, || {
        for (m, s) in msgs.chunks(64).zip(sigs.chunks(64)) {
            let refs: Vec<&[u8]> = m.iter().map(Vec::as_slice).collect();
            assert!(ed25519_dalek::verify_batch(&refs, s, &keys[..m.len()]).is_ok());
        }
    });
    // The centralized pipeline: what one process does for the same sessions, with no
    // network and no consensus.
    let start = Instant::now();
    for (trace, hdag) in traces {
        let t = Trace::parse(trace).map_err(|e| CliError::failed(format!("trace: {e}")))?;
        let h = decompose::from_provider(&t, hdag)
            .map_err(|e| CliError::failed(format!("hdag: {e}")))?;
        let p = trust_judging::preview::preview(&t, &h);
        std::hint::black_box(&p);
    }
    let took = start.elapsed().as_secs_f64().max(1e-9);
    Ok(Floor {
        verify_strict_per_sec: strict,
        verify_plain_per_sec: plain,
        verify_batch_per_sec: batch,
        votes_floor_per_sec: strict / 2.0,
        network_fraction_of_floor: 0.0,
        central_sessions_per_sec: traces.len() as f64 / took,
        central_segments_per_sec: (traces.len() * segments) as f64 / took,
    })
}

/// The network's processes; killed when dropped.
struct Nodes {
    children: Vec<Child>,
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A `stat` file's command (or thread) name and CPU seconds (`utime + stime`, in the
/// kernel's fixed user-visible tick of 1/100 s).
fn stat_cpu(s: &str) -> Option<(&str, f64)> {
    let name = s.get(s.find('(')? + 1..s.rfind(')')?)?;
    // Fields after the name (which may hold spaces) start at the state, field 3; utime
    // and stime are fields 14 and 15.
    let rest = s.get(s.rfind(')')? + 1..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some((name, ticks as f64 / 100.0))
}

/// CPU seconds a process has used so far, all its threads (`/proc/<pid>/stat`).
fn cpu_secs(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| stat_cpu(&s).map(|(_, secs)| secs))
        .unwrap_or(0.0)
}

/// CPU seconds the live threads of a process named `sled...` (sled's I/O and flusher
/// threads) have used so far.
fn sled_thread_secs(pid: u32) -> f64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    sled_secs(
        dir.flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok()),
    )
}

/// The CPU seconds of the threads named `sled...` among these `stat` texts.
fn sled_secs(stats: impl Iterator<Item = String>) -> f64 {
    stats
        .filter_map(|s| {
            stat_cpu(&s).and_then(|(name, secs)| name.starts_with("sled").then_some(secs))
        })
        .sum()
}

/// Peak resident memory of a process, MiB (`VmHWM`).
fn peak_rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// The value of a Prometheus counter in `text`.
fn counter(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0)
}

async fn metrics_text(api: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(api).await else {
        return String::new();
    };
    let head = format!("GET /metrics HTTP/1.1\r\nHost: {api}\r\nConnection: close\r\n\r\n");
    if s.write_all(head.as_bytes()).await.is_err() {
        return String::new();
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out).await;
    out
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// One progress line: a bar of decided sessions. On a terminal it is redrawn in place;
/// elsewhere (a log) a line is written only when `changed`.
fn progress(
    decided: usize,
    submitted: usize,
    total: usize,
    height: u64,
    since: Instant,
    changed: bool,
) {
    let width = 30;
    let filled = (decided * width)
        .checked_div(total)
        .unwrap_or(width)
        .min(width);
    let line = format!(
        "[{}{}] {decided}/{total} decided, {submitted} submitted, height {height}, {:.1} s",
        "#".repeat(filled),
        ".".repeat(width - filled),
        since.elapsed().as_secs_f64()
    );
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let _ = write!(err, "\r{line}");
    } else if changed {
        let _ = writeln!(err, "{line}");
    }
    let _ = err.flush();
}

/// Starts the network under `dir`; the processes and every node's API address.
fn start_network(args: &NetworkArgs, dir: &Path) -> Result<(Nodes, Vec<String>), CliError> {
    let exe = std::env::current_exe().map_err(|e| CliError::failed(e.to_string()))?;
    let init = Command::new(&exe)
        .args(["testnet", "init", "--nodes", &args.nodes.to_string()])
        // Only the validators run: no auditor-only homes.
        .args(["--auditor-nodes", "0"])
        .arg("--home")
        .arg(dir)
        .args(["--base-port", &args.base_port.to_string()])
        .args(["--seats-per-segment", &args.seats.to_string()])
        .args(["--honeypots-per-session", &args.honeypots.to_string()])
        .args(
            args.seat_capacity
                .map(|c| vec!["--seat-capacity".to_string(), c.to_string()])
                .unwrap_or_default(),
        )
        .output()
        .map_err(|e| CliError::failed(format!("testnet init: {e}")))?;
    if !init.status.success() {
        return Err(CliError::failed(format!(
            "testnet init failed: {}",
            String::from_utf8_lossy(&init.stderr)
        )));
    }
    let mut nodes = Nodes {
        children: Vec::new(),
    };
    let mut apis = Vec::new();
    for i in 0..args.nodes {
        let home = dir.join(format!("node{i}"));
        let log = std::fs::File::create(dir.join(format!("node{i}.log")))
            .map_err(|e| CliError::failed(e.to_string()))?;
        let child = Command::new(&exe)
            .arg("run")
            .arg("--home")
            .arg(&home)
            .args(["--block-time-ms", &args.block_time_ms.to_string()])
            // Warnings only by default (logging every vote costs the run); the nodes' own
            // `RUST_LOG` filter when `TRUST_BENCH_LOG` names one, to trace a run.
            .env(
                "RUST_LOG",
                std::env::var("TRUST_BENCH_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| CliError::failed(format!("start node{i}: {e}")))?;
        nodes.children.push(child);
        let cfg = config::load_config(&home).map_err(|e| CliError::failed(e.to_string()))?;
        apis.push(cfg.api.listen);
    }
    Ok((nodes, apis))
}

/// Runs the benchmark.
pub fn run(args: NetworkArgs) -> CliResult {
    if args.nodes < 2 || args.seats == 0 || u16::from(args.seats) >= args.nodes {
        return Err(CliError::usage(format!(
            "--seats {} with --nodes {}: a segment's seats are drawn among the auditors other than the provider, so seats must be between 1 and nodes - 1",
            args.seats, args.nodes
        )));
    }
    if args.sessions == 0 || args.segments == 0 || args.segments > 1000 {
        return Err(CliError::usage(
            "--sessions must be at least 1 and --segments between 1 and 1000",
        ));
    }
    let traces: Vec<(String, String)> = (0..args.sessions)
        .map(|i| session_trace(i, args.segments))
        .collect();
    eprintln!("measuring the single-core floors and the centralized pipeline ...");
    let mut floor = measure_floor(&traces, args.segments)?;

    let scratch = args.dir.is_none();
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("trust-bench-network-{}", std::process::id()))
    });
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| CliError::failed(e.to_string()))?;
    eprintln!(
        "starting {} validators in {} ...",
        args.nodes,
        dir.display()
    );
    let (nodes, apis) = start_network(&args, &dir)?;
    let token =
        crate::keys::load_operator_token(&dir.join("node0").join(crate::keys::OPERATOR_TOKEN_FILE))
            .map_err(|e| CliError::failed(e.to_string()))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(e.to_string()))?;
    let result = rt.block_on(drive(&args, &apis, token.expose(), &traces, &nodes));
    drop(nodes);
    if scratch {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let mut report = result?;
    floor.network_fraction_of_floor = report.votes_per_sec / floor.votes_floor_per_sec.max(1e-9);
    report.floor = floor;
    let table = markdown(&report);
    outln!("{table}");
    if let Some(p) = &args.markdown {
        std::fs::write(p, &table).map_err(|e| CliError::failed(format!("{}: {e}", p.display())))?;
    }
    if let Some(p) = &args.json {
        let text =
            serde_json::to_string_pretty(&report).map_err(|e| CliError::failed(e.to_string()))?;
        std::fs::write(p, text).map_err(|e| CliError::failed(format!("{}: {e}", p.display())))?;
    }
    Ok(())
}

/// Opens the sessions and follows them to their verdicts.
async fn drive(
    args: &NetworkArgs,
    apis: &[String],
    token: &str,
    traces: &[(String, String)],
    nodes: &Nodes,
) -> Result<Report, CliError> {
    let deadline = Instant::now() + Duration::from_secs(args.timeout_secs);
    // Every node answers and the chain moves.
    for api in apis {
        loop {
            if let Ok(s) = Client::new(api.as_str()).status().await
                && s.height >= 2
            {
                break;
            }
            if Instant::now() > deadline {
                return Err(CliError::failed(format!(
                    "{api} did not start (see the node logs)"
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let provider = Client::new(apis[0].as_str());
    let follow = Client::new(apis.get(1).unwrap_or(&apis[0]).as_str());
    let start_height = follow.status().await.map_err(fail)?.height;
    let mut bytes0 = 0u64;
    for api in apis {
        bytes0 += counter(&metrics_text(api).await, "trust_net_gossip_bytes_received");
    }
    let pids: Vec<u32> = nodes.children.iter().map(Child::id).collect();
    let cpu0: Vec<f64> = pids.iter().map(|p| cpu_secs(*p)).collect();
    let sled0: f64 = pids.iter().map(|p| sled_thread_secs(*p)).sum();
    let mut parts0 = Vec::new();
    for api in apis {
        parts0.push(parts(&metrics_text(api).await));
    }

    let t0 = Instant::now();
    let mut submitted_at: BTreeMap<trust_protocol::Hash, Instant> = BTreeMap::new();
    let mut submit_secs = Vec::new();
    let mut latencies: Vec<f64> = Vec::new();
    // (order opened, latency) of each decided session.
    let mut by_order: Vec<(usize, f64)> = Vec::new();
    let mut order: BTreeMap<trust_protocol::Hash, usize> = BTreeMap::new();
    let mut votes = 0u64;
    let mut missing = 0u64;
    let mut abstained = 0u64;
    let (mut deferred, mut refused) = (0usize, 0usize);
    let mut next = 0usize;
    let mut last_height = start_height;
    let mut mempool = Vec::new();
    let mut last_decided = t0;
    let mut shown = usize::MAX;
    let interval = (args.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / args.rate));
    while latencies.len() < traces.len() {
        if Instant::now() > deadline {
            eprintln!();
            return Err(CliError::failed(format!(
                "{} of {} sessions decided after {} s",
                latencies.len(),
                traces.len(),
                args.timeout_secs
            )));
        }
        // Open every session that is due (at a target rate, all those whose time came
        // while the loop polled and slept: one per turn would cap the rate at the loop's).
        loop {
            let due = if args.sequential {
                submitted_at.is_empty()
            } else {
                interval.is_none_or(|d| t0 + d.mul_f64(next as f64) <= Instant::now())
            };
            if next >= traces.len() || !due {
                break;
            }
            let (trace, hdag) = &traces[next];
            let t = Instant::now();
            let body = OpenSessionBody {
                trace: trace.clone().into(),
                hdag: Some(hdag.clone().into()),
                labels: Default::default(),
                session: None,
            };
            match provider.open_session(&body, Some(token)).await {
                Ok(r) => {
                    submit_secs.push(t.elapsed().as_secs_f64());
                    submitted_at.insert(r.session, t);
                    order.insert(r.session, next);
                    next += 1;
                }
                // The provider's own transactions wait for nonce room: try again shortly.
                Err(client::ClientError::Api {
                    status: 422,
                    message,
                    ..
                }) if message.contains("retry") => break,
                Err(e) => return Err(fail(e)),
            }
            if args.sequential {
                break;
            }
        }
        if interval.is_none() && !args.sequential && next < traces.len() {
            continue;
        }
        let status = follow.status().await.map_err(fail)?;
        mempool.push(status.mempool as u64);
        let h = status.height;
        if h != last_height {
            last_height = h;
            let open: Vec<trust_protocol::Hash> = submitted_at.keys().copied().collect();
            for id in open {
                let Ok(s) = follow.session(&id).await else {
                    continue;
                };
                if matches!(s.status, SessionStatus::Decided | SessionStatus::Failed) {
                    let at = submitted_at.remove(&id).unwrap_or(t0);
                    last_decided = Instant::now();
                    let took = at.elapsed().as_secs_f64();
                    latencies.push(took);
                    by_order.push((order.get(&id).copied().unwrap_or(0), took));
                    if matches!(s.status, SessionStatus::Failed) {
                        refused += 1;
                    }
                    if s.outcome
                        .as_ref()
                        .is_some_and(|o| o.drawn_at > o.opened_at.saturating_add(1))
                    {
                        deferred += 1;
                    }
                    for seg in s.outcome.iter().flat_map(|o| &o.segments) {
                        let v = &seg.votes;
                        votes += [v.valid, v.invalid, v.ungrounded, v.abstained]
                            .into_iter()
                            .map(u64::from)
                            .sum::<u64>();
                        missing += u64::from(v.missing);
                        abstained += u64::from(v.abstained);
                    }
                }
            }
        }
        let changed = latencies.len() != shown;
        shown = latencies.len();
        progress(latencies.len(), next, traces.len(), h, t0, changed);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    if std::io::stderr().is_terminal() {
        eprintln!();
    }
    let seconds = last_decided.duration_since(t0).as_secs_f64().max(1e-9);
    let end_height = follow.status().await.map_err(fail)?.height;
    let mut bytes1 = 0u64;
    let mut parts1 = Vec::new();
    let node_cpu: Vec<f64> = pids
        .iter()
        .zip(&cpu0)
        .map(|(p, c)| cpu_secs(*p) - c)
        .collect();
    let sled1: f64 = pids.iter().map(|p| sled_thread_secs(*p)).sum();
    for api in apis {
        let text = metrics_text(api).await;
        bytes1 += counter(&text, "trust_net_gossip_bytes_received");
        parts1.push(parts(&text));
    }
    by_order.sort_by_key(|(i, _)| *i);
    latencies.sort_by(f64::total_cmp);
    submit_secs.sort_by(f64::total_cmp);
    let blocks = end_height.saturating_sub(start_height);
    Ok(Report {
        nodes: args.nodes,
        sessions: traces.len(),
        segments: args.segments,
        seats: args.seats,
        honeypots: args.honeypots,
        rate: args.rate,
        sequential: args.sequential,
        block_time_ms: args.block_time_ms,
        decided: latencies.len(),
        seconds,
        sessions_per_sec: latencies.len() as f64 / seconds,
        votes,
        votes_per_sec: votes as f64 / seconds,
        missing_votes: missing,
        abstained_votes: abstained,
        missing_fraction: missing as f64 / (votes + missing).max(1) as f64,
        deferred,
        refused,
        latencies: by_order.into_iter().map(|(_, l)| l).collect(),
        latency_p50: percentile(&latencies, 0.50),
        latency_p90: percentile(&latencies, 0.90),
        latency_p99: percentile(&latencies, 0.99),
        submit_p50: percentile(&submit_secs, 0.50),
        blocks,
        block_time: t0.elapsed().as_secs_f64() / blocks.max(1) as f64,
        mempool_max: mempool.iter().copied().max().unwrap_or(0),
        mempool_mean: mempool.iter().sum::<u64>() as f64 / mempool.len().max(1) as f64,
        gossip_bytes_per_vote: bytes1.saturating_sub(bytes0) as f64 / votes.max(1) as f64,
        profile: profile(
            &parts0,
            &parts1,
            &node_cpu,
            sled1 - sled0,
            votes.saturating_sub(abstained),
        ),
        node_cpu_secs: node_cpu,
        node_peak_rss_mib: pids.iter().map(|p| peak_rss_mib(*p)).collect(),
        floor: Floor {
            verify_strict_per_sec: 0.0,
            verify_plain_per_sec: 0.0,
            verify_batch_per_sec: 0.0,
            votes_floor_per_sec: 0.0,
            network_fraction_of_floor: 0.0,
            central_sessions_per_sec: 0.0,
            central_segments_per_sec: 0.0,
        },
    })
}

fn fail(e: client::ClientError) -> CliError {
    CliError::failed(e.to_string())
}

/// The report as a Markdown table.
pub fn markdown(r: &Report) -> String {
    let f = &r.floor;
    let rows = [
        (
            "network",
            format!("{} validators, {} ms blocks", r.nodes, r.block_time_ms),
        ),
        (
            "load",
            format!(
                "{} sessions x {} segments x {} seats, {} honeypots each, {}",
                r.sessions,
                r.segments,
                r.seats,
                r.honeypots,
                if r.sequential {
                    "one after another".into()
                } else if r.rate > 0.0 {
                    format!("{} sessions/s", r.rate)
                } else {
                    "as fast as accepted".into()
                }
            ),
        ),
        (
            "decided",
            format!(
                "{} in {:.2} s ({} waited for capacity, {} refused)",
                r.decided, r.seconds, r.deferred, r.refused
            ),
        ),
        (
            "sessions finalized / s",
            format!("{:.2}", r.sessions_per_sec),
        ),
        (
            "segment votes finalized / s",
            format!(
                "{:.1} ({} votes, {} of them abstentions; {} seats missed their window: {:.2} %)",
                r.votes_per_sec,
                r.votes,
                r.abstained_votes,
                r.missing_votes,
                100.0 * r.missing_fraction
            ),
        ),
        (
            "submit→verdict latency p50 / p90 / p99",
            format!(
                "{:.2} / {:.2} / {:.2} s",
                r.latency_p50, r.latency_p90, r.latency_p99
            ),
        ),
        ("POST /v1/sessions, p50", format!("{:.3} s", r.submit_p50)),
        (
            "block time",
            format!("{:.3} s ({} blocks)", r.block_time, r.blocks),
        ),
        (
            "mempool depth max / mean",
            format!("{} / {:.1}", r.mempool_max, r.mempool_mean),
        ),
        (
            "gossip payload bytes per vote (all nodes)",
            format!("{:.0}", r.gossip_bytes_per_vote),
        ),
        (
            "CPU seconds per node",
            r.node_cpu_secs
                .iter()
                .map(|c| format!("{c:.2}"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "peak RSS per node (MiB)",
            r.node_peak_rss_mib
                .iter()
                .map(|c| format!("{c:.1}"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "ed25519 verify / s, one core: strict tx, plain, batched",
            format!(
                "{:.0}, {:.0}, {:.0}",
                f.verify_strict_per_sec, f.verify_plain_per_sec, f.verify_batch_per_sec
            ),
        ),
        (
            "vote floor (strict verifies / 2) and the network's fraction",
            format!(
                "{:.0} votes/s; {:.1}%",
                f.votes_floor_per_sec,
                100.0 * f.network_fraction_of_floor
            ),
        ),
        (
            "centralized pipeline, one process",
            format!(
                "{:.1} sessions/s, {:.0} segments/s; the network: {:.3}x its sessions/s",
                f.central_sessions_per_sec,
                f.central_segments_per_sec,
                r.sessions_per_sec / f.central_sessions_per_sec.max(1e-9)
            ),
        ),
    ];
    let mut out = String::from("| measure | value |\n|---|---|\n");
    for (k, v) in rows {
        out.push_str(&format!("| {k} | {v} |\n"));
    }
    if !r.profile.is_empty() {
        out.push_str(
            "\n| CPU by part | seconds, all nodes | ms per judged vote per node | share |\n|---|---|---|---|\n",
        );
        for row in &r.profile {
            out.push_str(&format!(
                "| {} | {:.2} | {:.3} | {:.1}% |\n",
                row.part,
                row.cpu_secs,
                row.ms_per_judged_vote_per_node,
                100.0 * row.share
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated sessions are what the provider accepts: a trace, and an HDAG of
    /// exactly the asked number of Computer segments that the checkers all call Valid.
    #[test]
    fn generated_sessions_have_the_asked_shape_and_check_valid() {
        let (trace, hdag) = session_trace(3, 20);
        let t = Trace::parse(&trace).unwrap();
        let h = decompose::from_provider(&t, &hdag).unwrap();
        assert_eq!(h.nodes.len(), 20);
        let p = trust_judging::preview::preview(&t, &h);
        let text = format!("{p:?}");
        assert!(
            !text.contains("Invalid") && !text.contains("Ungrounded"),
            "{text}"
        );
    }

    /// The profile reads each node's parts, charges the nodes' CPU no part claims to
    /// sled's threads and `other`, and divides by the judged votes and the nodes.
    #[test]
    fn the_profile_splits_the_nodes_cpu_by_part() {
        let before = parts(
            "trust_cpu_seconds_total{part=\"judge\"} 1.000000\ntrust_cpu_seconds_total{part=\"verify\"} 0.5\n",
        );
        let after = parts(
            "# TYPE x counter\ntrust_cpu_seconds_total{part=\"judge\"} 3.000000\ntrust_cpu_seconds_total{part=\"verify\"} 1.5\n",
        );
        let rows = profile(
            &[before.clone(), before],
            &[after.clone(), after],
            &[5.0, 5.0],
            1.5,
            1000,
        );
        let get = |n: &str| rows.iter().find(|r| r.part == n).unwrap();
        assert!((get("judge").cpu_secs - 4.0).abs() < 1e-9);
        assert!((get("verify").cpu_secs - 2.0).abs() < 1e-9);
        assert!((get("sled threads").cpu_secs - 1.5).abs() < 1e-9);
        assert!((get("other").cpu_secs - 2.5).abs() < 1e-9);
        assert!((get("judge").share - 0.4).abs() < 1e-9);
        // 4 s over 1,000 judged votes and 2 nodes: 2 ms each.
        assert!((get("judge").ms_per_judged_vote_per_node - 2.0).abs() < 1e-9);
        assert_eq!(get("execute").cpu_secs, 0.0);
    }

    /// A thread's name may hold spaces and parentheses; the CPU fields follow the last `)`.
    #[test]
    fn stat_lines_give_the_name_and_cpu() {
        let line = "1234 (log flusher (2)) S 1 2 3 4 5 6 7 8 9 10 250 150 0 0 20 0 1";
        assert_eq!(stat_cpu(line), Some(("log flusher (2)", 4.0)));
        assert_eq!(stat_cpu("garbage"), None);
        let threads = [
            "9 (sled-io-0) S 1 2 3 4 5 6 7 8 9 10 100 50 0 0",
            "10 (tokio-rt-worker) S 1 2 3 4 5 6 7 8 9 10 900 100 0 0",
            "11 (sled-flusher) S 1 2 3 4 5 6 7 8 9 10 30 20 0 0",
        ];
        assert_eq!(sled_secs(threads.iter().map(|t| t.to_string())), 2.0);
    }

    #[test]
    fn percentiles_pick_ranks() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 51.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
