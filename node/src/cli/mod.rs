//! Command-line interface: parses arguments with clap and hands typed values to the
//! subsystems. Errors are one line on stderr; exit code 2 means the input was wrong
//! (bad arguments, malformed files), 1 means the command ran and reports a failure
//! (for example an economics dial that does not hold), and 4 that the network refused
//! what was asked: the node answered 403 or 422, or the contract refused the
//! transaction (see [`CliError::REFUSED`]).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `println!` for command output: a closed pipe (`trust-node ... | head`) ends the
/// process quietly with success instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout_line(format_args!($($arg)*))
    };
}

pub mod account;
pub mod appeal;
pub mod auditor;
pub mod bench;
pub mod bench_chain;
pub mod bench_network;
pub mod econ;
pub mod home;
pub mod keys;
pub mod local;
pub mod node;
pub mod proof;
pub mod quorum;
#[cfg(test)]
mod reference;
mod remote;
pub mod sessions;
pub mod simulate;
mod table;
pub mod watch;

/// The TRUST node: audit LLM reasoning traces on a decentralized network.
///
/// One binary serves auditors (run a node, judge segments), providers (submit traces),
/// users (query outcomes) and operators (start networks): `run` a node, `submit` a trace,
/// `query` or `watch` what the network decided, manage an `auditor`'s stake, start a local
/// network or a testnet, and use the paper's analysis tools (economics dials, quorum
/// probabilities) and a local preview of an audit (`check`).
#[derive(Debug, Parser)]
#[command(name = "trust-node", version, propagate_version = true)]
pub struct Cli {
    /// Log output format on stderr (`RUST_LOG` sets the levels; default `info`, the
    /// consensus engine's `warn`).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Split a trace into an HDAG of segments (the heuristic decomposer, or with --llm the
    /// paper's 5-step LLM decomposition through an OpenAI-compatible endpoint) and print it.
    Decompose(local::TraceArgs),
    /// Preview a trace's audit locally: what a network of Computer-tier seats would decide.
    ///
    /// Each Computer segment is judged by the same auditor, on the same inputs, as a
    /// Computer seat (its claim, the claims it depends on, the unaudited premises sealed
    /// with it); a checker that cannot read a step abstains and the step stays Undecided.
    /// LLM and Human segments are left out (they count as undecided weight). Errors
    /// propagate along depends_on; the trace verdict is Pass, Fail or Inconclusive, as the
    /// contract decides it.
    Check(local::TraceArgs),
    /// Check reward, penalty and slashing parameters against the paper's Theorem 1.
    Econ(econ::EconArgs),
    /// Create or show this node's account and sealing keys.
    Keys(keys::KeysArgs),
    /// Segment and trace quorum probabilities (Lemma 1, Proposition 1, exact DP).
    Quorum(quorum::QuorumArgs),
    /// Simulate auditors with different strategies on the real audit contract.
    ///
    /// A seeded network of auditors drives the real audit contract with real signed
    /// transactions, block by block: honest seats (error rate per tier), malicious seats
    /// (always wrong), random guessers, rubber-stampers (approve everything), withholders
    /// (commit, never reveal) and copy-cats (reuse another seat's commitment). Ground truth
    /// comes from the generator: 70-85% of segments are correct and some sessions carry
    /// honeypots. Without --config the population and parameters are the paper's setting
    /// (examples/sim/paper.toml writes them out). The same seed and config give the same
    /// state root and byte-identical files.
    ///
    /// Writes to --out DIR: reputation.csv and profit.csv (columns decided, height, then
    /// the mean reputation or mean cumulative profit of each strategy present; one row per
    /// sample), reputation.svg and profit.svg (the paper's Figure 6), and summary.json
    /// (counts, final means per strategy, accuracy against ground truth, the final
    /// state_root and the config used). Prints the final means, the accuracy and the state
    /// root.
    ///
    /// `simulate sweep` reruns it with a rising share of corrupted auditors; `simulate
    /// appeals` asks whether appealing pays; `simulate adversaries` mounts the attacks of
    /// a provider trying to buy a PASS and checks the invariants that defeat them.
    Simulate(simulate::SimulateArgs),
    /// Create a node home: fresh keys and a default config.toml (never overwrites).
    Init(home::InitArgs),
    /// The node's config.toml: `config migrate` rewrites a flat (deprecated) one in the
    /// nested layout.
    Config(home::ConfigArgs),
    /// Local multi-node networks: `testnet init --nodes N --home DIR`.
    Testnet(home::TestnetArgs),
    /// Inspect this node's ledger: `ledger verify --home DIR`.
    Ledger(home::LedgerArgs),
    /// Run the node daemon: restore the ledger, join the network, order blocks with
    /// Malachite BFT, serve the HTTP API (stop with Ctrl-C or SIGTERM).
    Run(node::RunArgs),
    /// Show a running node's height, state root and peers.
    Status(node::StatusArgs),
    /// Submit a trace for audit through this node (as provider); --wait shows progress
    /// and the outcome.
    Submit(node::SubmitArgs),
    /// List the sessions this node opened as provider, newest first, with their labels,
    /// status and verdict (needs the operator token; --label filters).
    Sessions(sessions::SessionsArgs),
    /// Show a session's outcome: verdict per segment, trace verdict, deciding block.
    Query(node::QueryArgs),
    /// Outcome proofs in a file: `proof export` saves one from a node, `proof verify`
    /// checks it offline against a genesis file (and a block you trust) alone.
    ///
    /// `proof export SESSION -o FILE [--trust HEIGHT:HASH]` fetches the session's outcome
    /// proof from a node (`--home` or `--api`, as `query` finds it) and writes one JSON file
    /// (format `trust-outcome-proof/3`) holding: the chain id; the session; the outcome,
    /// encoded, with its Merkle proof under the state root of a certified block; that
    /// block's header and its commit certificate (the validators' precommit signatures);
    /// the header of the block before it, with every genesis validator's account (its
    /// stake) proven under that block's state root; the anchor (genesis, or the trusted
    /// block's header with the stakes proven under it); and the walk: every block after the
    /// anchor whose execution changed the validator powers, with its commit certificate and
    /// the stakes proven under its state root. The node refuses a --trust hash that is not
    /// its block at HEIGHT, or a HEIGHT not below its tip.
    ///
    /// `proof verify FILE --genesis genesis.json [--trust HEIGHT:HASH]` needs no node and no
    /// home. Nothing in the file is trusted: only the genesis file is (its chain id and its
    /// validators' keys, and the genesis stakes for a walk from genesis), and the block
    /// --trust names, whose hash the file's anchor must have (a file anchored at a block is
    /// refused without the same --trust). From the anchor's powers it checks each block of
    /// the walk in turn: its certificate is signed by genesis validators holding more than
    /// 2/3 of the powers known so far, then the powers become those proven after it. The
    /// certified block must be signed by more than 2/3 of the powers walked to, and the
    /// stakes proven after its parent must be those powers (otherwise a change is missing:
    /// the validator set is unknown); last, the outcome must be under the certified state
    /// root. It exits 0 printing the outcome's verdict, the block, the power that signed,
    /// the anchor and the number of changes walked; otherwise it prints `proof REJECTED:
    /// <reason>` and exits 1 (2 when a file cannot be read or the genesis file is not one).
    /// Files of the older formats `trust-outcome-proof/1` and `/2` are refused: export them
    /// again.
    ///
    /// A walk from genesis trusts the genesis validators' keys for as long as the walk is:
    /// keys that held more than 2/3 of the stake once could forge a history that starts
    /// there. A recent block you trust (--trust, from your own node or a source you trust)
    /// cuts that off: only the keys that hold stake after it count.
    Proof(proof::ProofArgs),
    /// Send tokens from this home's account to another, signed with the home's key and
    /// sent through its node: how a new node's account gets the funds it registers with.
    /// A transfer to a key with no account yet creates it and must move at least the
    /// network's `min_new_account` (genesis parameter; `transfer` names it when it refuses).
    Transfer(account::TransferArgs),
    /// Show an account's balance, bonded stake and nonce (this home's by default).
    Account(account::AccountArgs),
    /// An auditor's life: register, bond, status, unbond, exit, withdraw.
    Auditor(auditor::AuditorArgs),
    /// Appeal decided segments of a session from this node's account, within its appeal
    /// window: escrows the network's appeal bond per segment; fresh seats (2k + 1 at
    /// least, and more than twice the judgements that reached the verdict; none who sat
    /// on the segment before) judge each again, and their verdict replaces the old one.
    /// Filed while a round is judged, it waits for the next round. Prints the bond and the round; with `--wait`, each segment's previous and
    /// new verdict, the slashes and the refund. A refusal prints the contract's reason and
    /// exits 4.
    Appeal(appeal::AppealArgs),
    /// Follow the network's events as they are finalized (seats drawn, deadlines,
    /// verdicts, rewards, slashes), filtered by account, session and kind.
    Watch(watch::WatchArgs),
    /// Benchmarks: `bench quality` scores the Computer tier against a labelled corpus.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

/// A command failure with its exit code.
#[derive(Debug)]
pub struct CliError {
    /// Process exit code.
    pub code: u8,
    /// One-line message for stderr.
    pub message: String,
}

impl CliError {
    /// The user's input is wrong (exit code 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }

    /// The command ran and failed, or reports a failed check (exit code 1).
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }

    /// Exit code of a refusal by the network: the command was well formed and reached the
    /// node, which (or whose contract) would not take it.
    pub const REFUSED: u8 = 4;

    /// The network refused the request (exit code [`CliError::REFUSED`]): the node
    /// answered 403 or 422, or the contract refused the transaction.
    pub fn refused(message: impl Into<String>) -> Self {
        Self {
            code: Self::REFUSED,
            message: message.into(),
        }
    }
}

/// What a command returns.
pub type CliResult = Result<(), CliError>;

/// Logs when `RUST_LOG` is unset: our own at info, the consensus engine's at warn. The
/// engine's network layer reports every publish with no subscribed peer as an error, which
/// on a one-validator network is every message, so it is silenced by default; set
/// `RUST_LOG=info,arc_malachitebft=debug` to see the engine's own view. At `info` an idle
/// chain is one summary line a minute (`crate::consensus::summary`);
/// `RUST_LOG=info,trust::blocks=debug` adds every block's line.
pub const DEFAULT_LOG_FILTER: &str =
    "info,arc_malachitebft=warn,arc_malachitebft_network=off,libp2p_gossipsub=warn";

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER));
    // Colours only on a terminal: a log redirected to a file stays plain text to grep.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    // A second initialisation (tests calling `run` twice) is harmless; ignore it.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Parses the process arguments, runs the command and returns the exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let result = match cli.command {
        Command::Decompose(args) => local::run_decompose(args),
        Command::Check(args) => local::run_check(args),
        Command::Econ(args) => econ::run(args),
        Command::Keys(args) => keys::run(args),
        Command::Quorum(args) => quorum::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Init(args) => home::run_init(args),
        Command::Config(args) => home::run_config(args),
        Command::Testnet(args) => home::run_testnet(args),
        Command::Ledger(args) => home::run_ledger(args),
        Command::Run(args) => node::run_node(args),
        Command::Status(args) => node::run_status(args),
        Command::Query(args) => node::run_query(args),
        Command::Proof(args) => proof::run(args),
        Command::Submit(args) => node::run_submit(args),
        Command::Sessions(args) => sessions::run(args),
        Command::Transfer(args) => account::run_transfer(args),
        Command::Account(args) => account::run_account(args),
        Command::Auditor(args) => auditor::run(args),
        Command::Appeal(args) => appeal::run(args),
        Command::Watch(args) => watch::run_watch(args),
        Command::Bench(cmd) => bench::run(cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // A status that is the answer (`submit --exit-code`) comes with no message.
            if !e.message.is_empty() {
                eprintln!("error: {}", e.message);
            }
            ExitCode::from(e.code)
        }
    }
}

/// Reads a UTF-8 file given on the command line, with a bounded size.
pub(crate) fn read_input_file(path: &std::path::Path, max_bytes: u64) -> Result<String, CliError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    if meta.len() > max_bytes {
        return Err(CliError::usage(format!(
            "{} is {} bytes, more than the {max_bytes}-byte limit",
            path.display(),
            meta.len()
        )));
    }
    std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))
}

/// Writes one line to stdout; see [`outln!`].
pub(crate) fn write_stdout_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}
