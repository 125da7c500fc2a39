//! The controller runner against kube-sandbox on a paused clock: metrics, backoff, failure
//! Events, readiness and graceful shutdown.
#![allow(clippy::unwrap_used)]

mod common;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{advance, quiet_cluster};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::{Controller, watcher};
use kube::{Api, ResourceExt};
use kube_kit::admin::{Metrics, Readiness};
use kube_kit::controller::{Backoff, ControllerMetrics, ControllerRunner, ReconcileError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
#[error("configmap {0} is broken")]
struct Broken(String);

impl ReconcileError for Broken {
    fn reason(&self) -> Cow<'static, str> {
        Cow::Borrowed("Broken")
    }
}

#[derive(Default)]
struct Ctx {
    attempts: Mutex<HashMap<String, Vec<Instant>>>,
    finished_slow: Mutex<Option<Instant>>,
}

async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Broken> {
    let name = cm.name_any();
    ctx.attempts
        .lock()
        .unwrap()
        .entry(name.clone())
        .or_default()
        .push(Instant::now());
    if cm.data.as_ref().and_then(|d| d.get("slow")).is_some() {
        tokio::time::sleep(Duration::from_secs(5)).await;
        *ctx.finished_slow.lock().unwrap() = Some(Instant::now());
    }
    if name == "bad" {
        return Err(Broken(name));
    }
    Ok(Action::await_change())
}

fn configmap(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
        ..ConfigMap::default()
    }
}

#[tokio::test(start_paused = true)]
async fn runner_counts_backs_off_reports_and_drains() {
    let cluster = quiet_cluster("runner");
    let client = cluster.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in ["good", "bad"] {
        cms.create(&PostParams::default(), &configmap(name))
            .await
            .unwrap();
    }

    let metrics = Metrics::new();
    let readiness = Readiness::new();
    let synced = readiness.flag("configmaps-synced");
    let ctx = Arc::new(Ctx::default());
    let runner = ControllerRunner::new(
        "cm-test",
        ctx.clone(),
        ControllerMetrics::register(&metrics),
    )
    .with_recorder(Recorder::new(
        client.clone(),
        Reporter {
            controller: "cm-test".into(),
            instance: Some("cm-test-0".into()),
        },
    ))
    .with_backoff(Backoff {
        base: Duration::from_secs(1),
        max: Duration::from_secs(60),
    })
    .with_ready_flag(synced.clone());
    let shutdown = CancellationToken::new();
    let controller = Controller::new(cms.clone(), watcher::Config::default());
    let started = Instant::now();
    let task = tokio::spawn(runner.run(controller, reconcile, shutdown.clone()));

    advance(Duration::from_millis(9_500)).await;
    assert!(synced.get(), "ready once the cache synced");
    let attempts = ctx.attempts.lock().unwrap().clone();
    assert_eq!(attempts["good"].len(), 1, "success waits for a change");
    let bad: Vec<Duration> = attempts["bad"].iter().map(|t| *t - started).collect();
    // Failures requeue after 1 s, 2 s, 4 s: attempts at about 0, 1, 3 and 7 s.
    assert_eq!(bad.len(), 4, "{bad:?}");
    let gaps: Vec<u64> = bad.windows(2).map(|w| (w[1] - w[0]).as_secs()).collect();
    assert_eq!(gaps, [1, 2, 4], "{bad:?}");

    let text = metrics.encode().unwrap();
    assert!(
        text.contains("controller_reconciles_total{controller=\"cm-test\"} 5"),
        "{text}"
    );
    assert!(
        text.contains(
            "controller_reconcile_errors_total{controller=\"cm-test\",reason=\"Broken\"} 4"
        ),
        "{text}"
    );

    let events = Api::<Event>::namespaced(client.clone(), "default")
        .list(&Default::default())
        .await
        .unwrap();
    let failure = events
        .items
        .iter()
        .find(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("bad"))
        .expect("a failure event on the broken object");
    assert_eq!(failure.type_.as_deref(), Some("Warning"));
    assert_eq!(failure.reason.as_deref(), Some("Broken"));
    assert_eq!(failure.note.as_deref(), Some("configmap bad is broken"));
    assert!(
        !events
            .items
            .iter()
            .any(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("good"))
    );

    // A reconcile in flight when shutdown starts is allowed to finish.
    let patch = serde_json::json!({"data": {"slow": "yes"}});
    cms.patch("good", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    advance(Duration::from_secs(1)).await;
    let shutdown_at = Instant::now();
    shutdown.cancel();
    task.await.unwrap();
    let finished = ctx
        .finished_slow
        .lock()
        .unwrap()
        .expect("slow reconcile finished");
    assert!(
        finished >= shutdown_at + Duration::from_secs(3),
        "{:?}",
        finished - shutdown_at
    );
    assert!(
        Instant::now() >= finished,
        "run returned only after the reconcile finished"
    );
    assert!(
        synced.get(),
        "a stopped controller does not hold readiness down"
    );
    cluster.shutdown();
}
