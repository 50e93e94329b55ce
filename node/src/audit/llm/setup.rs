//! Setting the LLM tier up from the node's settings: the judge (endpoint, limits, ARES
//! ranges, deadline) checked at start, and the `llm-probe` task that keeps the endpoint's
//! health for `status`.

use std::{sync::Arc, time::Duration};

use tokio::sync::watch;
use tracing::{info, warn};

use trust_judging::llm::ares::{AresParams, AresParamsError};

use super::{
    LlmAuditor, LlmStatus,
    client::{ChatClient, ClientError, Endpoint, EndpointError, Limits, LlmMetrics},
};
use crate::tasks::{Stop, TaskResult};

/// The node's LLM settings (`llm_*` in `config.toml`, with their flags applied).
#[derive(Debug, Clone, Default)]
pub struct LlmSettings {
    /// The endpoint's URL; none: no LLM seats.
    pub llm_url: Option<String>,
    /// The model name sent with each request.
    pub llm_model: Option<String>,
    /// The environment variable holding the API key, if any.
    pub llm_api_key_env: Option<String>,
    /// Per-request timeout.
    pub llm_timeout_ms: Option<u64>,
    /// Retries of a failed request.
    pub llm_retries: Option<u32>,
    /// Requests in flight at once.
    pub llm_max_concurrent: Option<usize>,
    /// Largest reply read.
    pub llm_max_reply_bytes: Option<usize>,
    /// ARES's ranges.
    pub llm_ares: Option<AresParams>,
    /// Deadline of one judgement.
    pub llm_deadline_ms: Option<u64>,
}

/// A setting the LLM tier cannot run with (URL, missing API key variable, ARES ranges),
/// or an HTTP stack that cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The endpoint's URL, model or API key variable.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// ARES's ranges.
    #[error(transparent)]
    Ares(#[from] AresParamsError),
    /// The chat client.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// The LLM judge the node's settings ask for, if any; a bad setting (URL, missing API key variable,
/// ARES ranges) stops the node at start rather than leaving its LLM seats to fail later.
pub fn judge(
    cfg: &LlmSettings,
    commit_window: u64,
    block_time: Duration,
) -> Result<Option<LlmAuditor>, SetupError> {
    let Some(url) = &cfg.llm_url else {
        return Ok(None);
    };
    let endpoint = Endpoint::new(
        url,
        cfg.llm_model.as_deref().unwrap_or("default"),
        cfg.llm_api_key_env.as_deref(),
    )?;
    let defaults = Limits::default();
    let limits = Limits {
        request_timeout: cfg
            .llm_timeout_ms
            .map_or(defaults.request_timeout, Duration::from_millis),
        retries: cfg.llm_retries.unwrap_or(defaults.retries),
        max_concurrent: cfg
            .llm_max_concurrent
            .unwrap_or(defaults.max_concurrent)
            .clamp(1, 64),
        max_reply_bytes: cfg
            .llm_max_reply_bytes
            .unwrap_or(defaults.max_reply_bytes)
            .clamp(1024, 16 * 1024 * 1024),
        ..defaults
    };
    let ares = cfg.llm_ares.unwrap_or_default();
    ares.validate()?;
    let deadline = cfg.llm_deadline_ms.map_or_else(
        || super::default_deadline(commit_window, block_time),
        Duration::from_millis,
    );
    info!(
        url = %endpoint.url,
        model = %endpoint.model,
        key = endpoint.auth.is_some(),
        samples = ares.samples(),
        deadline_ms = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
        "LLM seats judge through this endpoint"
    );
    let client = ChatClient::new(endpoint, limits, Arc::new(LlmMetrics::default()))?;
    let judge = LlmAuditor::new(client, ares, deadline);
    judge.warm_up();
    Ok(Some(judge))
}

/// How often the LLM endpoint's health is probed for `status`.
pub const LLM_PROBE_EVERY: Duration = Duration::from_secs(10);

/// The `llm-probe` task: the one writer of the LLM endpoint's health, asked every
/// [`LLM_PROBE_EVERY`].
pub async fn health(
    client: ChatClient,
    status: watch::Sender<Option<LlmStatus>>,
    mut stop: Stop,
) -> TaskResult {
    let mut tick = tokio::time::interval(LLM_PROBE_EVERY);
    loop {
        let r = tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            r = async {
                tick.tick().await;
                client.probe().await
            } => r,
        };
        if let Err(e) = &r {
            warn!(target: "trust::llm", error = %e, "LLM endpoint does not answer");
        }
        status.send_replace(Some(LlmStatus {
            url: client.endpoint().url.clone(),
            model: client.endpoint().model.clone(),
            answers: r.is_ok(),
            error: r.err().map(|e| e.to_string()),
        }));
    }
}
