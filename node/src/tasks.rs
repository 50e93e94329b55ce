//! The node's long-running tasks: each named, spanned, and stopped in stages.
//!
//! [`Tasks`] spawns every task of `trust-node run` under a name and a `tracing` span, in a
//! [`Stage`]. Every task is meant to run until it is told to stop; one that returns or
//! panics before then has *died*, and [`Tasks::wait`] reports it by name with its reason.
//! [`Tasks::shutdown`] then stops the stages in the order they were added (the daemon adds
//! intake first), waiting for each stage's tasks to end before it stops the next, and logs
//! each step, so a reader of the log sees what stopped and in which order.
//!
//! A task learns that it must stop through its [`Stop`] (a `watch` channel): it selects on
//! [`Stop::wait`] first (`biased;`) in its loop, finishes the step it is in, and returns.

use std::{future::Future, panic::AssertUnwindSafe, time::Duration};

use futures::FutureExt;
use tokio::{
    sync::{mpsc, watch},
    task::JoinHandle,
};
use tracing::{Instrument, error, info, warn};

/// How a task ended: `Ok` only when it was told to stop.
pub type TaskResult = Result<(), TaskError>;

/// Why a task ended before it was told to stop, in words for the log and the exit message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TaskError(pub String);

impl From<String> for TaskError {
    fn from(why: String) -> Self {
        Self(why)
    }
}

impl From<&str> for TaskError {
    fn from(why: &str) -> Self {
        Self(why.to_string())
    }
}

/// Tells a task to stop.
#[derive(Debug, Clone)]
pub struct Stop(Option<watch::Receiver<bool>>);

impl Stop {
    /// A signal that never fires (for a task whose end is driven otherwise, as in tests).
    pub fn never() -> Self {
        Self(None)
    }

    /// Resolves once the task must stop (also when whoever could stop it is gone).
    pub async fn wait(&mut self) {
        match &mut self.0 {
            Some(rx) => {
                let _ = rx.wait_for(|stop| *stop).await;
            }
            None => std::future::pending().await,
        }
    }

    /// Whether the task must stop.
    pub fn is_stopped(&self) -> bool {
        self.0.as_ref().is_some_and(|rx| *rx.borrow())
    }
}

/// One group of tasks stopped together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stage(usize);

#[derive(Debug)]
struct StageTasks {
    name: &'static str,
    trigger: watch::Sender<bool>,
    tasks: Vec<(&'static str, JoinHandle<()>)>,
}

/// How [`Tasks::wait`] returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The stop signal came (SIGINT/SIGTERM).
    Signal,
    /// A task ended while it should have been running.
    Died {
        /// Its name.
        task: &'static str,
        /// What it returned, or its panic message.
        why: String,
    },
}

/// A task's end, reported by the wrapper around it.
#[derive(Debug)]
struct Report {
    task: &'static str,
    result: TaskResult,
}

/// Most reports buffered: one per task, since each task reports once.
const MAX_TASKS: usize = 64;

/// The node's tasks, in stages.
#[derive(Debug)]
pub struct Tasks {
    stages: Vec<StageTasks>,
    reports_tx: mpsc::Sender<Report>,
    reports: mpsc::Receiver<Report>,
    count: usize,
}

impl Default for Tasks {
    fn default() -> Self {
        Self::new()
    }
}

impl Tasks {
    /// No tasks yet.
    pub fn new() -> Self {
        let (reports_tx, reports) = mpsc::channel(MAX_TASKS);
        Self {
            stages: Vec::new(),
            reports_tx,
            reports,
            count: 0,
        }
    }

    /// A new stage, stopped after every stage added before it.
    pub fn stage(&mut self, name: &'static str) -> Stage {
        let (trigger, _) = watch::channel(false);
        self.stages.push(StageTasks {
            name,
            trigger,
            tasks: Vec::new(),
        });
        Stage(self.stages.len() - 1)
    }

    /// Spawns `task` named `name` in `stage`, inside an `info` span named after it; `task`
    /// gets the stage's [`Stop`]. At most [`MAX_TASKS`] tasks.
    pub fn spawn<F, Fut>(&mut self, stage: Stage, name: &'static str, task: F)
    where
        F: FnOnce(Stop) -> Fut,
        Fut: Future<Output = TaskResult> + Send + 'static,
    {
        let Some(s) = self.stages.get_mut(stage.0) else {
            error!(
                task = name,
                "spawned in a stage that does not exist; not started"
            );
            return;
        };
        if self.count >= MAX_TASKS {
            error!(task = name, "too many tasks; not started");
            return;
        }
        self.count += 1;
        let stop = Stop(Some(s.trigger.subscribe()));
        let fut = task(stop);
        let reports = self.reports_tx.clone();
        let span = tracing::info_span!("task", name);
        let part = crate::cpu::Part::of_task(name);
        let handle = tokio::spawn(crate::cpu::Measured::new(
            part,
            async move {
                let result = match AssertUnwindSafe(fut).catch_unwind().await {
                    Ok(r) => r,
                    Err(panic) => Err(format!("panicked: {}", panic_message(&*panic)).into()),
                };
                // Capacity covers every task, so this never waits.
                let _ = reports.try_send(Report { task: name, result });
            }
            .instrument(span),
        ));
        s.tasks.push((name, handle));
    }

    /// Waits for `signal` or for any task to end, whichever comes first; a task that ends
    /// is logged as an error with its reason.
    pub async fn wait(&mut self, signal: impl Future<Output = ()>) -> Ended {
        tokio::select! {
            biased;
            () = signal => {
                info!("stop signal received; shutting down");
                Ended::Signal
            }
            Some(r) = self.reports.recv() => {
                let why = match r.result {
                    Ok(()) => "it returned while the node was running".to_string(),
                    Err(e) => e.0,
                };
                error!(task = r.task, reason = %why, "task died; stopping the node");
                Ended::Died { task: r.task, why }
            }
        }
    }

    /// Stops every stage in the order they were added: signals its tasks, then waits up
    /// to `grace` for each to end (aborting one that does not), and logs each step.
    pub async fn shutdown(self, grace: Duration) {
        for s in self.stages {
            let names: Vec<&str> = s.tasks.iter().map(|(n, _)| *n).collect();
            info!(stage = s.name, tasks = ?names, "shutdown: stopping stage");
            s.trigger.send_replace(true);
            for (name, mut handle) in s.tasks {
                match tokio::time::timeout(grace, &mut handle).await {
                    Ok(_) => info!(stage = s.name, task = name, "shutdown: task stopped"),
                    Err(_) => {
                        handle.abort();
                        warn!(
                            stage = s.name,
                            task = name,
                            grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
                            "shutdown: task did not stop in time; aborted"
                        );
                    }
                }
            }
        }
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A task that runs until stopped and then records its name.
    fn until_stopped(
        log: &Arc<Mutex<Vec<&'static str>>>,
        name: &'static str,
    ) -> impl FnOnce(Stop) -> futures::future::BoxFuture<'static, TaskResult> {
        let log = log.clone();
        move |mut stop| {
            Box::pin(async move {
                stop.wait().await;
                log.lock().unwrap().push(name);
                Ok(())
            })
        }
    }

    #[tokio::test]
    async fn a_signal_stops_the_stages_in_order() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Tasks::new();
        let intake = tasks.stage("intake");
        let core = tasks.stage("core");
        // Spawned in the opposite order to the stages: the stage, not the spawn order, counts.
        tasks.spawn(core, "consensus", until_stopped(&log, "consensus"));
        tasks.spawn(intake, "api", until_stopped(&log, "api"));
        tasks.spawn(intake, "net", until_stopped(&log, "net"));
        assert_eq!(tasks.wait(async {}).await, Ended::Signal);
        assert!(
            log.lock().unwrap().is_empty(),
            "nothing stops before shutdown"
        );
        tasks.shutdown(Duration::from_secs(30)).await;
        let order = log.lock().unwrap().clone();
        assert_eq!(order.len(), 3);
        assert_eq!(order.last(), Some(&"consensus"), "{order:?}");
    }

    #[tokio::test]
    async fn a_task_that_returns_or_panics_is_reported_by_name_and_the_rest_stop() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Tasks::new();
        let stage = tasks.stage("only");
        tasks.spawn(stage, "steady", until_stopped(&log, "steady"));
        tasks.spawn(stage, "fragile", |_stop| async {
            Err::<(), _>(TaskError::from("the engine closed its channel"))
        });
        let ended = tasks.wait(std::future::pending()).await;
        assert_eq!(
            ended,
            Ended::Died {
                task: "fragile",
                why: "the engine closed its channel".into()
            }
        );
        tasks.shutdown(Duration::from_secs(30)).await;
        assert_eq!(*log.lock().unwrap(), vec!["steady"]);

        let mut tasks = Tasks::new();
        let stage = tasks.stage("only");
        tasks.spawn(stage, "panics", |_stop| async {
            let v: Vec<u8> = Vec::new();
            // An index out of bounds, as a bug would cause.
            let _ = v[usize::from(v.is_empty())];
            Ok(())
        });
        match tasks.wait(std::future::pending()).await {
            Ended::Died { task, why } => {
                assert_eq!(task, "panics");
                assert!(why.starts_with("panicked: index out of bounds"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_task_that_ignores_its_stop_is_aborted_after_the_grace() {
        let mut tasks = Tasks::new();
        let stage = tasks.stage("only");
        let (dropped_tx, dropped_rx) = tokio::sync::oneshot::channel::<()>();
        tasks.spawn(stage, "stubborn", move |_stop| async move {
            let _guard = dropped_tx; // dropped when the task is aborted
            std::future::pending::<()>().await;
            Ok(())
        });
        tasks.shutdown(Duration::from_millis(50)).await;
        // The sender was dropped with the aborted task: the receiver sees it closed.
        assert!(dropped_rx.await.is_err());
    }
}
