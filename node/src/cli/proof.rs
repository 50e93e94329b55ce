//! `proof export` and `proof verify`: a session's outcome proof kept in a file of its own
//! ([`crate::proof::Bundle`]) and checked later against a genesis file (and, for a bundle
//! anchored at a trusted block, that block's `HEIGHT:HASH`) alone, with no node and no home.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use clap::Subcommand;
use serde_json::json;
use trust_contracts::{Outcome, SegmentVerdict, TraceVerdict, commitment::decode_entry};
use trust_protocol::{
    Hash,
    trace::{ReadOptions, Trace},
};

use super::{
    CliError, CliResult,
    local::TranscriptArgs,
    remote::{NodeAddr, api_error, api_token, runtime},
};
use trust_judging::session::opening;

use crate::{
    api::client::{self, Client},
    api::views::FinalityView,
    audit::provider::TermsView,
    config,
    proof::{self, Bundle, ProofAnchor, ProofError, TrustedBlock},
};

/// Arguments of `trust-node proof`.
#[derive(Debug, clap::Args)]
pub struct ProofArgs {
    #[command(subcommand)]
    command: ProofCommand,
}

#[derive(Debug, Subcommand)]
enum ProofCommand {
    /// Fetch a decided session's outcome proof from a node and write it, with the chain
    /// id, to one self-contained file (never overwriting one unless --force). The validator
    /// powers are walked from genesis, or from the block --trust names.
    Export(ExportArgs),
    /// Check a bundle file against a genesis file (and the block --trust names), offline,
    /// and say the session's terms and whether its outcome is final: exit 0 if it holds and
    /// is final; 3 if it holds but an appeal may still change it (`NOT FINAL`; accepted with
    /// --allow-non-final); else print `proof REJECTED: <reason>` and exit 1.
    Verify(VerifyArgs),
}

#[derive(Debug, clap::Args)]
struct ExportArgs {
    /// The session id: 64 hex characters, or its first 8 or more when they start exactly
    /// one id the node knows (as the pages and `/search` show them).
    session: String,
    /// The file to write.
    #[arg(short, long, value_name = "FILE")]
    out: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    force: bool,
    /// Walk the validator powers from this block, HEIGHT:HASH (a block below the one the
    /// proof is of; the node refuses a hash that is not its block at HEIGHT), instead of
    /// from genesis. Verify the file with the same --trust.
    #[arg(long, value_name = "HEIGHT:HASH")]
    trust: Option<TrustedBlock>,
    /// Put this node's opening of the session's segments in the bundle (the node must be
    /// the session's provider; needs its operator token): the mapping of each segment to
    /// its step and the salt of its id, which lets `proof verify --trace FILE` check the
    /// bundle against the trace. Whoever holds the bundle can then test guesses of the
    /// trace's text against it: hand it only to those who may know the trace.
    #[arg(long)]
    opening: bool,
    /// The node's operator token (for --opening). Default: read from the home's token
    /// file.
    #[arg(long, env = "TRUST_API_TOKEN", hide_env_values = true)]
    api_token: Option<String>,
    #[command(flatten)]
    addr: NodeAddr,
}

#[derive(Debug, clap::Args)]
struct VerifyArgs {
    /// The bundle file (`proof export` writes one).
    bundle: PathBuf,
    /// The network's genesis file: its chain id and validator keys are trusted (and, for a
    /// bundle that walks from genesis, its stakes).
    #[arg(long, value_name = "FILE")]
    genesis: PathBuf,
    /// A block you trust, HEIGHT:HASH (from a source you trust: your own node, a friend,
    /// a block explorer): the bundle must walk the validator powers from exactly this
    /// block. Without it the bundle must walk from genesis.
    #[arg(long, value_name = "HEIGHT:HASH")]
    trust: Option<TrustedBlock>,
    /// The session you mean (64 hex characters): a bundle that proves another session's
    /// outcome is refused (exit 1).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The trace the session audited (the file given to `submit`): check that the
    /// bundle is about it. Needs a bundle exported by the provider with --opening: each
    /// step of the trace is cut and sealed again and must reproduce the segment id the
    /// proven outcome carries; every other step must be one the outcome left out. Prints
    /// each step's verdict by name; a bundle of another trace is refused (exit 1).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// How the --trace file is read (the same flags as `submit`'s).
    #[command(flatten)]
    read: TranscriptArgs,
    /// Accept an outcome that an appeal may still overturn (exit 0 instead of 3). The
    /// proof shows the outcome at the block it was exported from; while the session is
    /// appealable, a later appeal round can change the verdict, and this bundle would
    /// still verify.
    #[arg(long)]
    allow_non_final: bool,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs `proof`.
pub fn run(args: ProofArgs) -> CliResult {
    match args.command {
        ProofCommand::Export(a) => run_export(a),
        ProofCommand::Verify(a) => run_verify(a),
    }
}

fn parse_session(s: &str) -> Result<Hash, CliError> {
    if s.len() != 64 {
        return Err(CliError::usage(format!(
            "session id must be 64 hex characters, got {s:?}"
        )));
    }
    Hash::from_hex(s)
        .map_err(|_| CliError::usage(format!("session id must be 64 hex characters, got {s:?}")))
}

/// `GET /v1/sessions/{id}/proof` from the node at `addr`, walked from `trust` (genesis if
/// none); a reply that is no proof is said to be malformed (`query --verify` and `proof
/// export`).
pub(super) fn fetch_proof(
    addr: impl Into<String>,
    sid: &Hash,
    trust: Option<&TrustedBlock>,
) -> Result<crate::proof::OutcomeProof, CliError> {
    runtime()?
        .block_on(Client::new(addr).session_proof(sid, trust))
        .map_err(|e| match e {
            client::ClientError::Reply { source, .. } => {
                CliError::failed(format!("the node's proof is malformed: {source}"))
            }
            e => api_error(e),
        })
}

fn run_export(args: ExportArgs) -> CliResult {
    // Said before asking the node anything.
    if !args.force && args.out.exists() {
        return Err(exists(&args.out));
    }
    let addr = args.addr.resolve()?;
    // A unique start of the id (as the pages show it) stands for the whole.
    let sid = super::remote::resolve_session(&addr, &args.session)?;
    let opening = match args.opening {
        true => {
            let token = api_token(args.api_token.as_deref(), &args.addr)?;
            Some(fetch_opening(&addr, &sid, token.as_deref())?)
        }
        false => None,
    };
    let proof = fetch_proof(addr, &sid, args.trust.as_ref())?;
    let malformed = |e: ProofError| CliError::failed(format!("the node's proof is malformed: {e}"));
    let outcome = read_outcome(&proof.outcome).map_err(malformed)?;
    let anchor = anchor_of(&proof.anchor).map_err(malformed)?;
    if anchor != args.trust {
        return Err(CliError::failed(format!(
            "the node's proof is malformed: it walks from {}, not from {}",
            anchor_text(anchor.as_ref()),
            anchor_text(args.trust.as_ref())
        )));
    }
    if let Some(o) = &opening
        && o.mapping.len() != outcome.segments.len()
    {
        return Err(CliError::failed(format!(
            "the node's opening is not of this outcome: it names {} segments, the outcome has {}",
            o.mapping.len(),
            outcome.segments.len()
        )));
    }
    let hops = proof.walk.len();
    let mut bundle = Bundle::of(proof).map_err(malformed)?;
    let opened = opening.is_some();
    bundle.opening = opening;
    let bytes = write_bundle(&args.out, &bundle, args.force)?;
    outln!("wrote       {} ({bytes} bytes)", args.out.display());
    outln!("session     {sid}");
    outln!(
        "walk        from {}, {hops} change(s) of the validator powers",
        anchor_text(anchor.as_ref())
    );
    let trust = args
        .trust
        .map(|t| format!(" --trust {t}"))
        .unwrap_or_default();
    let with_trace = match opened {
        true => {
            outln!(
                "opening     each segment's step and salt (check against the trace with --trace FILE)"
            );
            " --trace TRACE-FILE"
        }
        false => "",
    };
    outln!(
        "verdict     {}, as the node says (check it: trust-node proof verify {} --genesis genesis.json{trust}{with_trace})",
        format!("{:?}", outcome.trace).to_uppercase(),
        args.out.display()
    );
    // As `proof verify` reads it: a verdict an appeal may still change is not final.
    outln!("finality    {}", finality_text(outcome.finality().into()));
    Ok(())
}

/// `GET /v1/sessions/{id}/opening` from the provider's node at `addr`, with its operator
/// token.
fn fetch_opening(
    addr: &str,
    sid: &Hash,
    token: Option<&str>,
) -> Result<trust_protocol::TraceOpening, CliError> {
    let rt = runtime()?;
    let reply = rt
        .block_on(client::get_authorized(
            addr,
            &format!("/v1/sessions/{sid}/opening"),
            token,
        ))
        .map_err(api_error)?;
    serde_json::from_value::<crate::api::views::OpeningView>(reply)
        .map(|v| v.opening)
        .map_err(|e| CliError::failed(format!("the node's opening is malformed: {e}")))
}

/// The trusted block a proof's anchor names (`None`: genesis), not checked.
fn anchor_of(anchor: &ProofAnchor) -> Result<Option<TrustedBlock>, ProofError> {
    match anchor {
        ProofAnchor::Genesis => Ok(None),
        ProofAnchor::Block(a) => {
            let header: trust_protocol::block::BlockHeader = hex::decode(&a.header)
                .ok()
                .and_then(|b| trust_protocol::encoding::decode(&b).ok())
                .ok_or(ProofError::Malformed("anchor header"))?;
            Ok(Some(TrustedBlock {
                height: header.height,
                hash: header.hash(),
            }))
        }
    }
}

/// "genesis", or "trusted block H (HASH)".
fn anchor_text(anchor: Option<&TrustedBlock>) -> String {
    match anchor {
        None => "genesis".to_string(),
        Some(t) => format!("trusted block {} ({})", t.height, t.hash),
    }
}

/// The outcome a proof carries, not checked.
fn read_outcome(hex_value: &str) -> Result<Outcome, ProofError> {
    hex::decode(hex_value)
        .ok()
        .and_then(|v| decode_entry::<Outcome>(&v))
        .ok_or(ProofError::Malformed("outcome"))
}

fn exists(path: &Path) -> CliError {
    CliError::usage(format!(
        "{} already exists: refusing to overwrite it (pass --force to replace it)",
        path.display()
    ))
}

/// Writes `bundle` to `path` atomically: to a temporary file in the same directory,
/// synced, then moved into place, so `path` never holds half a bundle. Without `force`, an
/// existing `path` is never replaced, even one created meanwhile. Returns the bytes
/// written.
pub(crate) fn write_bundle(path: &Path, bundle: &Bundle, force: bool) -> Result<usize, CliError> {
    let text = bundle
        .to_file_text()
        .map_err(|e| CliError::failed(format!("cannot encode the bundle: {e}")))?;
    let name = path
        .file_name()
        .ok_or_else(|| CliError::usage(format!("{} is not a file name", path.display())))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let io = |what: &Path, e: std::io::Error| {
        CliError::failed(format!("cannot write {}: {e}", what.display()))
    };
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        })
        .map_err(|e| io(&tmp, e));
    let placed = written.and_then(|()| {
        if force {
            return std::fs::rename(&tmp, path).map_err(|e| io(path, e));
        }
        // A hard link never replaces an existing file; where the file system has none,
        // a check and a rename.
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(exists(path)),
            Err(_) if path.exists() => Err(exists(path)),
            Err(_) => std::fs::rename(&tmp, path).map_err(|e| io(path, e)),
        }
    });
    // The temporary name goes in every case (after a rename it is gone already).
    let _ = std::fs::remove_file(&tmp);
    placed?;
    // The new directory entry itself, where the platform lets a directory be synced.
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(text.len())
}

/// How many of a trace's segments got each verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct VerdictCounts {
    /// Valid.
    pub valid: usize,
    /// Invalid.
    pub invalid: usize,
    /// Ungrounded.
    pub ungrounded: usize,
    /// Propagated.
    pub propagated: usize,
    /// Undecided (left-out segments included, unless a calculation of theirs failed).
    pub undecided: usize,
}

impl VerdictCounts {
    fn add(&mut self, v: SegmentVerdict) {
        let n = match v {
            SegmentVerdict::Valid => &mut self.valid,
            SegmentVerdict::Invalid => &mut self.invalid,
            SegmentVerdict::Ungrounded => &mut self.ungrounded,
            SegmentVerdict::Propagated => &mut self.propagated,
            SegmentVerdict::Undecided => &mut self.undecided,
        };
        *n = n.saturating_add(1);
    }
}

/// What `proof verify` established, as it prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The session.
    pub session: Hash,
    /// The trace verdict.
    pub verdict: TraceVerdict,
    /// The verdicts of the trace's segments: the audited ones (honeypots aside) and the
    /// left-out ones.
    pub segments: VerdictCounts,
    /// How many of those were left out of the session (not audited).
    pub left_out: usize,
    /// Honeypots, which are not part of the trace.
    pub honeypots: usize,
    /// Segments whose seats reached a verdict of their own (the outcome's coverage).
    pub judged: u16,
    /// The failure bound, as the outcome stores it (`exp(-x / 1000)`).
    pub bound_neg_ln_milli: u64,
    /// The height at which the session was decided (from the proven outcome).
    pub decided_at: u64,
    /// The certified block whose state root carries the outcome: height and hash.
    pub height: u64,
    /// Its hash.
    pub block_hash: Hash,
    /// Its state root.
    pub state_root: Hash,
    /// Voting power that signed the block's certificate, and the total.
    pub power: (u128, u128),
    /// The genesis file's chain id.
    pub chain: Hash,
    /// The certified block's time (Unix milliseconds): the session was decided at or
    /// before it (the proof is of the tip when exported, not of the deciding block).
    pub time_ms: u64,
    /// The trusted block the validator powers were walked from (`None`: genesis).
    pub anchor: Option<TrustedBlock>,
    /// The heights of the walk's blocks: where the validator powers changed on the way.
    pub hops: Vec<u64>,
    /// Whether the outcome is final, as the proven state says: a proof exported while an
    /// appeal may still be filed shows a verdict that can change.
    pub finality: FinalityView,
    /// The terms the session ran under (seats, quorums, windows, domain, exposure).
    pub terms: TermsView,
    /// With `--trace`: the trace's steps the outcome judged, each with its verdict.
    pub trace: Option<TraceReport>,
}

/// What `proof verify --trace FILE` established: the outcome is about the trace in FILE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceReport {
    /// The trace file.
    pub file: PathBuf,
    /// Each step of the trace the outcome accounts for, with its verdict: the audited
    /// ones in manifest order, then the left-out ones (`true`).
    pub steps: Vec<(String, SegmentVerdict, bool)>,
    /// Whether the provider cut the trace by its own HDAG (else this binary's decomposer
    /// did, covering every step).
    pub provider_cut: bool,
    /// Whether the provider had revealed the mapping's hash on chain.
    pub mapping_on_chain: bool,
}

impl TraceReport {
    fn of(file: &Path, m: opening::TraceMatch, o: &Outcome) -> Self {
        let audited = m
            .steps
            .iter()
            .zip(&o.segments)
            .filter_map(|(step, s)| Some((step.clone()?, s.verdict, false)));
        let left = m
            .left_out
            .iter()
            .zip(&o.left_out)
            .map(|(step, l)| (step.clone(), l.verdict, true));
        TraceReport {
            file: file.to_path_buf(),
            steps: audited.chain(left).collect(),
            provider_cut: m.provider_cut,
            mapping_on_chain: m.mapping_on_chain,
        }
    }

    fn lines(&self) -> [String; 2] {
        let left = self.steps.iter().filter(|s| s.2).count();
        let cut = match self.provider_cut {
            true => "cut by the provider's own HDAG, each step a span of the trace",
            false => "cut by this binary's decomposer, every step accounted for",
        };
        let steps = self
            .steps
            .iter()
            .map(|(step, v, left)| match left {
                true => format!("{step} {v:?} (left out)"),
                false => format!("{step} {v:?}"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        [
            format!(
                "trace       {}: the outcome is about it ({} steps audited, {left} left out; {cut})",
                self.file.display(),
                self.steps.len().saturating_sub(left)
            ),
            format!("steps       {steps}"),
        ]
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "file": self.file,
            "cut": if self.provider_cut { "provider" } else { "decomposer" },
            "mapping_on_chain": self.mapping_on_chain,
            "steps": self.steps.iter().map(|(step, v, left)| json!({
                "step": step, "verdict": v, "left_out": left,
            })).collect::<Vec<_>>(),
        })
    }
}

impl Report {
    fn of(
        v: &proof::Verified,
        session: Hash,
        chain: Hash,
        params: &trust_contracts::Params,
    ) -> Self {
        let o = &v.outcome;
        let mut segments = VerdictCounts::default();
        let mut honeypots = 0usize;
        for (i, s) in o.segments.iter().enumerate() {
            match s.honeypot {
                Some(_) => honeypots = honeypots.saturating_add(1),
                // The calculation planted beside a worded honeypot is not the trace's.
                None if crate::query::planted(o, i) => {}
                None => segments.add(s.verdict),
            }
        }
        for l in &o.left_out {
            segments.add(l.verdict);
        }
        Report {
            session,
            verdict: o.trace,
            segments,
            left_out: o.left_out.len(),
            honeypots,
            judged: o.coverage.judged,
            bound_neg_ln_milli: o.bound.hoeffding_neg_ln_milli,
            decided_at: o.decided_at,
            height: v.header.height,
            block_hash: v.header.hash(),
            state_root: v.header.state_root,
            power: v.power,
            chain,
            time_ms: v.header.time_ms,
            anchor: v.anchor,
            hops: v.hops.clone(),
            finality: o.finality().into(),
            terms: TermsView::of(&o.quorum, &o.terms, &o.domain, params),
            trace: None,
        }
    }

    /// Whether nothing can change the outcome any more.
    pub fn is_final(&self) -> bool {
        matches!(self.finality, FinalityView::Final { .. })
    }

    /// `final at block H`, or why the outcome is not final yet.
    pub fn finality_text(&self) -> String {
        finality_text(self.finality)
    }

    /// The lines `proof verify` prints.
    pub fn lines(&self) -> Vec<String> {
        let c = &self.segments;
        let total = c
            .valid
            .saturating_add(c.invalid)
            .saturating_add(c.ungrounded)
            .saturating_add(c.propagated)
            .saturating_add(c.undecided);
        let mut lines = vec![
            format!("session     {}", self.session),
            format!(
                "verdict     {}",
                format!("{:?}", self.verdict).to_uppercase()
            ),
            format!("finality    {}", self.finality_text()),
            super::remote::terms_line(&self.terms),
            format!(
                "segments    {}; {} judged: {} valid, {} invalid, {} ungrounded, {} propagated, {} undecided",
                crate::report::words::segment_count(total, self.left_out, self.honeypots),
                self.judged,
                c.valid,
                c.invalid,
                c.ungrounded,
                c.propagated,
                c.undecided
            ),
            format!(
                "bound       {}",
                crate::report::words::bound_line(self.bound_neg_ln_milli)
            ),
            format!(
                "decided     at block {}, by {} (the certified block's time)",
                self.decided_at,
                crate::chain::format_time(self.time_ms)
            ),
            format!("proven in   block {} ({})", self.height, self.block_hash),
            format!("state root  {}", self.state_root),
            format!(
                "signed      {} of {} voting power (more than 2/3)",
                self.power.0, self.power.1
            ),
            format!(
                "walked      from {}, {}",
                anchor_text(self.anchor.as_ref()),
                hops_text(&self.hops)
            ),
            match self.anchor {
                None => format!("verified offline against genesis {}", self.chain),
                Some(t) => format!(
                    "verified offline against genesis {} and trusted block {t}",
                    self.chain
                ),
            },
        ];
        if let Some(t) = &self.trace {
            lines.splice(6..6, t.lines());
        }
        lines
    }

    /// The same as one JSON object (`--json`).
    pub fn json(&self) -> serde_json::Value {
        json!({
            "verified": true,
            "session": self.session,
            "verdict": self.verdict,
            "final": self.is_final(),
            "finality": self.finality,
            "terms": self.terms,
            "segments": self.segments,
            "left_out": self.left_out,
            "honeypots": self.honeypots,
            "judged": self.judged,
            "bound": crate::report::words::bound_probability(self.bound_neg_ln_milli),
            "decided_at_height": self.decided_at,
            "certified_time_ms": self.time_ms,
            "certified_time": crate::chain::format_time(self.time_ms),
            "height": self.height,
            "block_hash": self.block_hash,
            "state_root": self.state_root,
            // As `query --verify --json`: a u128 does not fit every JSON reader's numbers.
            "signed_power": self.power.0.to_string(),
            "total_power": self.power.1.to_string(),
            "chain": self.chain,
            // `null`: walked from genesis.
            "anchor": self.anchor.map(|t| json!({"height": t.height, "hash": t.hash})),
            "hops": self.hops.len(),
            "hop_heights": self.hops,
            // `null` without --trace.
            "trace": self.trace.as_ref().map(TraceReport::json),
        })
    }
}

/// `final at block H`, or why an outcome in this state is not final yet (`proof verify`,
/// `query --verify`).
pub(super) fn finality_text(finality: FinalityView) -> String {
    match finality {
        FinalityView::Final { at } => format!("final at block {at}"),
        FinalityView::Appealable { until } => format!(
            "NOT FINAL: appealable until block {until} (an appeal may still change the verdict; \
                 export the proof again after that block)"
        ),
        FinalityView::Appealing { round } => format!(
            "NOT FINAL: appeal round {round} is being judged (export the proof again once it \
                 is decided and its window has passed)"
        ),
    }
}

/// "no change of the validator powers", "1 change (block 5)", "3 changes (blocks 5, 9, 12)".
fn hops_text(hops: &[u64]) -> String {
    let list = hops
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    match hops.len() {
        0 => "no change of the validator powers on the way".to_string(),
        1 => format!("1 change of the validator powers on the way (block {list})"),
        n => format!("{n} changes of the validator powers on the way (blocks {list})"),
    }
}

/// Exit code of `proof verify` for a proof that holds of an outcome that is not final.
pub const EXIT_NOT_FINAL: u8 = 3;

/// Why `proof verify` did not verify.
#[derive(Debug)]
pub enum VerifyFileError {
    /// A file could not be read, or the genesis file is not one (exit 2).
    Input(String),
    /// The bundle was read and does not hold (exit 1).
    Rejected(ProofError),
    /// The bundle holds but is not shown to be about the trace given (exit 1).
    NotAboutTrace(String),
}

impl From<VerifyFileError> for CliError {
    fn from(e: VerifyFileError) -> Self {
        match e {
            VerifyFileError::Input(m) => CliError::usage(m),
            VerifyFileError::Rejected(e) => CliError::failed(format!("proof REJECTED: {e}")),
            VerifyFileError::NotAboutTrace(m) => {
                CliError::failed(format!("proof REJECTED: not about this trace: {m}"))
            }
        }
    }
}

/// `proof verify` without the printing: reads the bundle at `bundle` and the genesis
/// document at `genesis` and checks the one against the other, the block `trust` names
/// (the bundle must walk from it; from genesis if none) and, given one, the `session` the
/// user means, and given a `trace` file, that the outcome is about that trace
/// ([`opening::match_trace`]). Nothing else is read.
pub fn verify_file(
    bundle: &Path,
    genesis: &Path,
    trust: Option<TrustedBlock>,
    session: Option<&Hash>,
    trace: Option<&Path>,
) -> Result<Report, VerifyFileError> {
    verify_file_as(
        bundle,
        genesis,
        trust,
        session,
        trace,
        &ReadOptions::default(),
    )
}

/// [`verify_file`], reading the `trace` file as `read` says (any transcript format).
pub fn verify_file_as(
    bundle: &Path,
    genesis: &Path,
    trust: Option<TrustedBlock>,
    session: Option<&Hash>,
    trace: Option<&Path>,
    read: &ReadOptions,
) -> Result<Report, VerifyFileError> {
    let doc = config::load_genesis_file(genesis)
        .map_err(|e| VerifyFileError::Input(format!("the genesis file: {e}")))?;
    let cannot = |e: std::io::Error| {
        VerifyFileError::Input(format!("cannot read {}: {e}", bundle.display()))
    };
    let size = std::fs::metadata(bundle).map_err(cannot)?.len();
    if size > proof::MAX_BUNDLE_BYTES {
        return Err(VerifyFileError::Input(format!(
            "{} is {size} bytes, more than a bundle's {}-byte limit",
            bundle.display(),
            proof::MAX_BUNDLE_BYTES
        )));
    }
    let bytes = std::fs::read(bundle).map_err(cannot)?;
    let b = proof::parse_bundle(&bytes).map_err(VerifyFileError::Rejected)?;
    let chain = doc.chain_id();
    let trusted = proof::Trust {
        chain,
        validators: &doc.validators,
        genesis: &doc.genesis,
        block: trust,
    };
    let v = proof::verify_bundle(&b, session, &trusted).map_err(VerifyFileError::Rejected)?;
    let mut report = Report::of(&v, b.proof.session, chain, &doc.genesis.params);
    if let Some(path) = trace {
        report.trace = Some(check_trace(path, read, b.opening.as_ref(), &v.outcome)?);
    }
    Ok(report)
}

/// Largest trace file `proof verify --trace` reads (far above what a session carries).
const MAX_TRACE_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The trace in `path` (read as `read` says) against the proven `outcome`, through the
/// bundle's `opening`.
fn check_trace(
    path: &Path,
    read: &ReadOptions,
    opening: Option<&trust_protocol::TraceOpening>,
    outcome: &Outcome,
) -> Result<TraceReport, VerifyFileError> {
    let cannot =
        |e: std::io::Error| VerifyFileError::Input(format!("cannot read {}: {e}", path.display()));
    let size = std::fs::metadata(path).map_err(cannot)?.len();
    if size > MAX_TRACE_FILE_BYTES {
        return Err(VerifyFileError::Input(format!(
            "{} is {size} bytes, more than the {MAX_TRACE_FILE_BYTES} bytes a trace file may have",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(cannot)?;
    let opening = opening.ok_or_else(|| {
        VerifyFileError::NotAboutTrace(
            "the bundle carries no opening of its segments, so nothing ties it to a trace \
             (the provider exports one with `trust-node proof export ID --opening`)"
                .to_string(),
        )
    })?;
    // The session audited the network's one form of the trace (what `submit` sends), so
    // the transcript is read into it first.
    let (trace, _) = Trace::read(&text, read)
        .map_err(|e| VerifyFileError::Input(format!("{}: {e}", path.display())))?;
    let canonical = serde_json::to_string(&trace)
        .map_err(|e| VerifyFileError::Input(format!("{}: {e}", path.display())))?;
    match opening::match_trace(&canonical, opening, outcome) {
        Ok(m) => Ok(TraceReport::of(path, m, outcome)),
        Err(e @ opening::TraceMismatch::Trace(_)) => Err(VerifyFileError::Input(format!(
            "{}: {}",
            path.display(),
            with_causes(&e)
        ))),
        Err(e) => Err(VerifyFileError::NotAboutTrace(with_causes(&e))),
    }
}

/// An error with its causes, `outer: inner: innermost`.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

fn run_verify(args: VerifyArgs) -> CliResult {
    let session = args.session.as_deref().map(parse_session).transpose()?;
    let report = verify_file_as(
        &args.bundle,
        &args.genesis,
        args.trust,
        session.as_ref(),
        args.trace.as_deref(),
        &args.read.options()?,
    )?;
    if args.json {
        outln!("{}", report.json());
    } else {
        for line in report.lines() {
            outln!("{line}");
        }
    }
    if !report.is_final() && !args.allow_non_final {
        return Err(CliError {
            code: EXIT_NOT_FINAL,
            message: format!(
                "{}; the proof itself holds (pass --allow-non-final to accept an outcome that may \
                 still change)",
                report.finality_text()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::{
        cli::{Cli, Command},
        proof::tests::{bundle, fixture, flip_signature, walk_fixture},
    };

    /// `trust-node ARGS` as the binary parses and runs them, in this process.
    fn trust_node(args: &[&str]) -> CliResult {
        let cli = Cli::try_parse_from(std::iter::once("trust-node").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        match cli.command {
            Command::Proof(a) => run(a),
            other => panic!("not a proof command: {other:?}"),
        }
    }

    fn text(p: &Path) -> &str {
        p.to_str().unwrap()
    }

    #[test]
    fn proof_verify_accepts_a_bundle_file_and_names_why_it_rejects_a_tampered_one() {
        let f = fixture();
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("outcome.proof");
        write_bundle(&good, &bundle(&f), false).unwrap();
        let genesis = config::write_genesis(&dir.path().join("net"), &f.file).unwrap();
        let g = text(&genesis);
        trust_node(&["proof", "verify", text(&good), "--genesis", g]).unwrap();
        trust_node(&["proof", "verify", text(&good), "--genesis", g, "--json"]).unwrap();

        // A signature that does not verify: exit 1, naming it.
        let mut b = bundle(&f);
        flip_signature(&mut b, 1);
        let bad = dir.path().join("tampered.proof");
        write_bundle(&bad, &b, false).unwrap();
        let e = trust_node(&["proof", "verify", text(&bad), "--genesis", g]).unwrap_err();
        assert_eq!(e.code, 1, "{}", e.message);
        assert!(
            e.message
                .starts_with("proof REJECTED: certificate signature of ")
                && e.message.ends_with(" does not verify"),
            "{}",
            e.message
        );
        // A file cut short: exit 1, with the parser's message.
        let whole = std::fs::read(&good).unwrap();
        let cut = dir.path().join("cut.proof");
        std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
        let e = trust_node(&["proof", "verify", text(&cut), "--genesis", g]).unwrap_err();
        assert_eq!(e.code, 1, "{}", e.message);
        assert!(
            e.message
                .starts_with("proof REJECTED: truncated or not a proof bundle: EOF while parsing"),
            "{}",
            e.message
        );
        // Another network's genesis file: exit 1, the validators are unknown.
        let other = config::GenesisDoc {
            chain_name: "another-network".into(),
            ..f.file.clone()
        };
        let og = config::write_genesis(&dir.path().join("other"), &other).unwrap();
        let e = trust_node(&["proof", "verify", text(&good), "--genesis", text(&og)]).unwrap_err();
        assert_eq!(e.code, 1, "{}", e.message);
        assert!(
            e.message
                .starts_with("proof REJECTED: the proof is of chain ")
                && e.message.ends_with("its validators are unknown here"),
            "{}",
            e.message
        );
        // Files that cannot be read, or a genesis file that is not one: exit 2.
        let missing = dir.path().join("missing.proof");
        let e = trust_node(&["proof", "verify", text(&missing), "--genesis", g]).unwrap_err();
        assert_eq!(e.code, 2, "{}", e.message);
        let e =
            trust_node(&["proof", "verify", text(&good), "--genesis", text(&missing)]).unwrap_err();
        assert_eq!(e.code, 2, "{}", e.message);
        let e =
            trust_node(&["proof", "verify", text(&good), "--genesis", text(&good)]).unwrap_err();
        assert_eq!(e.code, 2, "{}", e.message);
        assert!(e.message.starts_with("the genesis file: "), "{}", e.message);
    }

    #[test]
    fn proof_verify_says_whether_the_outcome_is_final_and_exits_3_when_an_appeal_may_change_it() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&str, trust_contracts::AppealRecord, &str); 3] = [
            (
                "final",
                trust_contracts::AppealRecord {
                    until: 2,
                    final_at: Some(2),
                    ..Default::default()
                },
                "finality    final at block 2",
            ),
            (
                "appealable",
                trust_contracts::AppealRecord {
                    until: 22,
                    ..Default::default()
                },
                "finality    NOT FINAL: appealable until block 22",
            ),
            (
                "appealing",
                trust_contracts::AppealRecord {
                    until: 22,
                    open: Some(2),
                    ..Default::default()
                },
                "finality    NOT FINAL: appeal round 2 is being judged",
            ),
        ];
        for (name, appeals, says) in cases {
            let f = crate::proof::tests::fixture_with(|o| o.appeals = appeals.clone());
            let file = dir.path().join(format!("{name}.proof"));
            write_bundle(&file, &bundle(&f), false).unwrap();
            let genesis = config::write_genesis(&dir.path().join(name), &f.file).unwrap();
            let r = verify_file(&file, &genesis, None, None, None).unwrap();
            let lines = r.lines();
            assert!(
                lines.iter().any(|l| l.starts_with(says)),
                "{name}: {lines:?}"
            );
            // The terms the session ran under, as `query` says them.
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with("assurance   k = ") && l.contains("domain math")),
                "{name}: {lines:?}"
            );
            assert_eq!(r.json()["final"], name == "final", "{name}");
            assert_eq!(r.json()["finality"]["state"], name, "{name}");
            assert_eq!(r.json()["terms"]["domain"], "math", "{name}");
            let args = ["proof", "verify", text(&file), "--genesis", text(&genesis)];
            match trust_node(&args) {
                Ok(()) => assert_eq!(name, "final"),
                Err(e) => {
                    assert_ne!(name, "final", "{}", e.message);
                    assert_eq!(e.code, EXIT_NOT_FINAL, "{name}: {}", e.message);
                    assert!(
                        e.message.starts_with("NOT FINAL: ")
                            && e.message.contains("--allow-non-final"),
                        "{}",
                        e.message
                    );
                }
            }
            let mut allowed = args.to_vec();
            allowed.push("--allow-non-final");
            trust_node(&allowed).unwrap();
        }
    }

    #[test]
    fn proof_verify_refuses_a_bundle_of_another_session_than_the_one_asked_about() {
        let f = fixture();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("outcome.proof");
        write_bundle(&file, &bundle(&f), false).unwrap();
        let genesis = config::write_genesis(&dir.path().join("net"), &f.file).unwrap();
        let (file, g) = (text(&file), text(&genesis));
        let mine = f.session.to_hex();
        trust_node(&["proof", "verify", file, "--genesis", g, "--session", &mine]).unwrap();
        let other = Hash::sha256(b"another session").to_hex();
        let e = trust_node(&["proof", "verify", file, "--genesis", g, "--session", &other])
            .unwrap_err();
        assert_eq!(e.code, 1, "{}", e.message);
        assert_eq!(
            e.message,
            format!("proof REJECTED: the bundle proves session {mine}, not session {other}")
        );
        // Not a session id: a usage error.
        let e =
            trust_node(&["proof", "verify", file, "--genesis", g, "--session", "abc"]).unwrap_err();
        assert_eq!(e.code, 2, "{}", e.message);
    }

    #[test]
    fn proof_export_never_replaces_a_file_without_force_and_leaves_no_temporary_file() {
        let f = fixture();
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("outcome.proof");
        std::fs::write(&out, "keep me").unwrap();
        // Refused before any node is asked (none listens at that address).
        let sid = f.session.to_hex();
        let e = trust_node(&[
            "proof",
            "export",
            &sid,
            "-o",
            text(&out),
            "--api",
            "127.0.0.1:9",
        ])
        .unwrap_err();
        assert_eq!(e.code, 2, "{}", e.message);
        assert!(e.message.contains("--force"), "{}", e.message);
        // The writer itself refuses too (a file made after the first check).
        let e = write_bundle(&out, &bundle(&f), false).unwrap_err();
        assert_eq!(e.code, 2, "{}", e.message);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me");
        // With --force it is replaced, whole.
        let n = write_bundle(&out, &bundle(&f), true).unwrap();
        let written = std::fs::read(&out).unwrap();
        assert_eq!(written.len(), n);
        assert_eq!(proof::parse_bundle(&written), Ok(bundle(&f)));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["outcome.proof"]);
        // A session id that is not one.
        let e = trust_node(&["proof", "export", "abc", "-o", text(&out)]).unwrap_err();
        assert_eq!(e.code, 2, "{}", e.message);
    }

    #[test]
    fn proof_help_says_what_a_bundle_holds_and_that_only_the_genesis_file_is_trusted() {
        let mut cli = Cli::command();
        let help = cli
            .find_subcommand_mut("proof")
            .unwrap()
            .render_long_help()
            .to_string();
        for words in [
            "trust-outcome-proof/3",
            "commit certificate",
            "Merkle proof",
            "Nothing in the file is trusted: only the genesis file is",
            "proof REJECTED: <reason>",
            "[--trust HEIGHT:HASH]",
            "the validator set is unknown",
            "`trust-outcome-proof/1` and `/2` are refused",
            "A recent block you trust",
        ] {
            assert!(help.contains(words), "{words:?} not in:\n{help}");
        }
        for sub in ["export", "verify"] {
            let help = cli
                .find_subcommand_mut("proof")
                .unwrap()
                .find_subcommand_mut(sub)
                .unwrap()
                .render_long_help()
                .to_string();
            assert!(help.contains("--trust <HEIGHT:HASH>"), "{sub}:\n{help}");
        }
    }

    #[test]
    fn proof_verify_walks_from_the_trusted_block_and_refuses_a_bundle_it_does_not_trust() {
        let w = walk_fixture();
        let dir = tempfile::tempdir().unwrap();
        let genesis = config::write_genesis(&dir.path().join("net"), &w.file).unwrap();
        let g = text(&genesis);
        let anchored = dir.path().join("anchored.proof");
        write_bundle(&anchored, &w.bundle(Some(3)), false).unwrap();
        let from_genesis = dir.path().join("genesis.proof");
        write_bundle(&from_genesis, &w.bundle(None), false).unwrap();
        let three = w.trusted(3);
        let t3 = three.to_string();

        // Walked from block 3 through the change at 4, with block 3 trusted.
        let r = verify_file(&anchored, &genesis, Some(three), None, None).unwrap();
        assert_eq!((r.anchor, r.hops.clone()), (Some(three), vec![4]));
        assert_eq!(r.power, (300, 400));
        let lines = r.lines();
        let walked = format!(
            "walked      from trusted block 3 ({}), 1 change of the validator powers on the way (block 4)",
            three.hash
        );
        assert!(lines.contains(&walked), "{lines:?}");
        assert!(
            lines
                .last()
                .unwrap()
                .ends_with(&format!("and trusted block {t3}")),
            "{lines:?}"
        );
        assert_eq!(r.json()["anchor"]["height"], 3);
        assert_eq!(r.json()["hop_heights"], serde_json::json!([4]));
        trust_node(&[
            "proof",
            "verify",
            text(&anchored),
            "--genesis",
            g,
            "--trust",
            &t3,
        ])
        .unwrap();
        // From genesis through both changes, with no block trusted.
        let r = verify_file(&from_genesis, &genesis, None, None, None).unwrap();
        assert_eq!((r.anchor, r.hops.clone()), (None, vec![2, 4]));
        assert!(
            r.lines().contains(
                &"walked      from genesis, 2 changes of the validator powers on the way (blocks 2, 4)"
                    .to_string()
            ),
            "{:?}",
            r.lines()
        );

        // The anchored bundle without --trust, with another block, with a wrong hash; the
        // genesis bundle with --trust: exit 1, naming the anchor.
        let wrong = format!("3:{}", Hash::sha256(b"not block 3"));
        for (file, trust, says) in [
            (&anchored, None, "is not trusted here"),
            (
                &anchored,
                Some(w.trusted(2).to_string()),
                "not from the trusted block 2",
            ),
            (&anchored, Some(wrong), "not from the trusted block 3"),
            (
                &from_genesis,
                Some(t3.clone()),
                "the proof walks from genesis",
            ),
        ] {
            let mut args = vec!["proof", "verify", text(file), "--genesis", g];
            if let Some(t) = &trust {
                args.extend(["--trust", t]);
            }
            let e = trust_node(&args).unwrap_err();
            assert_eq!(e.code, 1, "{args:?}: {}", e.message);
            assert!(
                e.message.starts_with(
                    "proof REJECTED: the validator set is unknown: the proof walks from "
                ) && e.message.contains(says),
                "{args:?}: {}",
                e.message
            );
            if file == &anchored {
                assert!(e.message.contains(&three.hash.to_hex()), "{}", e.message);
            }
        }
        // Not HEIGHT:HASH: a usage error before any file is read.
        for bad in ["3", "0:00", "three:abc", &format!("0:{}", three.hash)] {
            let e = Cli::try_parse_from([
                "trust-node",
                "proof",
                "verify",
                text(&anchored),
                "--genesis",
                g,
                "--trust",
                bad,
            ])
            .unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains("--trust"), "{bad}: {e}");
        }
    }
}
