//! `transfer` and `account`: moving funds between accounts and seeing them.
//!
//! A new node's account exists on the network only once a funded account sends it tokens
//! (the contract creates an account with a first transfer of at least the genesis
//! `min_new_account`), so this is the step between `init` and `auditor register`.
//! `transfer` signs a `Transfer` with the home's account key and sends it through the
//! node's `POST /v1/tx`, as the `auditor` commands send theirs (the key never leaves the
//! home); `account` reads `GET /v1/accounts/{id}`.

use clap::Args;
use trust_protocol::{AccountId, tx::Call};

use super::{
    CliError, CliResult,
    auditor::{SendArgs, Session, unfunded},
    keys::{expand_home, node_home},
    remote::{NodeAddr, api_error, print_reply, runtime},
};
use crate::{
    api::client::{self, Client},
    config, keys,
};

/// `transfer`: send tokens from this home's account.
#[derive(Debug, Args)]
pub struct TransferArgs {
    /// The recipient's account id (64 hex characters; `trust-node keys show` prints a
    /// home's, `init` prints it when it creates the home).
    pub to: String,
    /// Amount of TRUST. A transfer to a key with no account yet creates it and must move
    /// at least the network's `min_new_account` (genesis parameter; the error names it).
    pub amount: u64,
    #[command(flatten)]
    send: SendArgs,
}

/// `account`: an account's balance, stake and nonce.
#[derive(Debug, Args)]
pub struct AccountArgs {
    /// The account id (64 hex characters); default: this home's own account.
    pub id: Option<String>,
    /// Print the node's `GET /v1/accounts/{id}` answer (JSON) instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    addr: NodeAddr,
}

/// Runs `transfer`.
pub fn run_transfer(a: TransferArgs) -> CliResult {
    let to = a
        .to
        .parse::<AccountId>()
        .map_err(|_| CliError::usage("the recipient must be an account id: 64 hex characters"))?;
    if a.amount == 0 {
        return Err(CliError::usage("the amount must be positive"));
    }
    let mut s = Session::open(&a.send)?;
    let me = s.me();
    let params = s.params();
    // The contract refuses a first transfer below the minimum; say so before signing.
    let creates = matches!(
        s.rt.block_on(s.api.account(&to)),
        Err(client::ClientError::Api { status: 404, .. })
    );
    if creates
        && let Some(p) = &params
        && a.amount < p.min_new_account
    {
        return Err(CliError::refused(format!(
            "{to} has no account yet, and a transfer that creates one must move at least {} \
             (the network's min_new_account); this one moves {}",
            p.min_new_account, a.amount
        )));
    }
    let h = s.send_and_wait(Call::Transfer {
        to,
        amount: a.amount,
    })?;
    outln!(
        "transferred {} TRUST from {me} to {to} at block #{h}{}",
        a.amount,
        if creates { " (a new account)" } else { "" }
    );
    let balance = |who: &AccountId| {
        s.rt.block_on(s.api.account(who))
            .map(|v| v.balance)
            .map_err(api_error)
    };
    outln!(
        "balance now {} TRUST (sender), {} TRUST (recipient)",
        balance(&me)?,
        balance(&to)?
    );
    Ok(())
}

/// Runs `account`.
pub fn run_account(a: AccountArgs) -> CliResult {
    let who = match &a.id {
        Some(id) => id
            .parse::<AccountId>()
            .map_err(|_| CliError::usage("the account id must be 64 hex characters"))?,
        None => keys::load(&node_home(&a.addr.home)?)
            .map_err(|e| CliError::usage(format!("{e} (pass an account ID to ask about another)")))?
            .account_id(),
    };
    let api = Client::new(a.addr.resolve()?);
    let rt = runtime()?;
    let v = match rt.block_on(api.account(&who)) {
        Ok(v) => v,
        Err(client::ClientError::Api { status: 404, .. }) => {
            let params = config::load_genesis(&expand_home(&a.addr.home))
                .ok()
                .map(|d| d.genesis.params);
            return Err(CliError::failed(unfunded(&who, params.as_ref())));
        }
        Err(e) => return Err(api_error(e)),
    };
    if a.json {
        return print_reply(&v);
    }
    outln!("account     {who}");
    outln!("balance     {} TRUST", v.balance);
    outln!("stake       {} TRUST bonded", v.stake);
    outln!(
        "nonce       {} (next transaction {})",
        v.nonce,
        v.next_nonce
    );
    Ok(())
}
