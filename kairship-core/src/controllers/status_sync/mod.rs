//! status-sync: probes each instance's apiserver (`/readyz`, `/version`), follows the
//! operator's Ready condition for Provision-mode instances, and writes `state`,
//! `controlPlaneReady`, versions, `phase` and the Ready/Provisioned conditions. The instance
//! becomes UNAVAILABLE after the configured number of failed probes in a row and RUNNING again
//! on the first good one.
//!
//! It also publishes the instance's [`Connection`], which the watch caches follow.

pub mod karmada_version;
pub mod state;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::ListParams;
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Context;
use super::connection::{Connection, Lookup, connect, lookup_kubeconfig};
use kube_kit::conditions::{remove_condition, set_condition};

use super::status::update_status;
use crate::instance::{
    Instance, InstanceMode, InstancePhase, InstanceState, InstanceStatus, condition_type, reason,
};
use crate::models::operator::Karmada;
use crate::naming::operator_karmada_name;
use state::{ProbeOutcome, count_failures, next_state};

/// What the operator's `Karmada` object says, for Provision-mode instances.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperatorView {
    /// Whether the object exists.
    pub exists: bool,
    /// Its Ready condition.
    pub ready: Option<bool>,
    /// The Ready condition's message.
    pub message: Option<String>,
    /// The installed Karmada version it reports.
    pub karmada_version: Option<String>,
}

/// Everything one probe round learned about an instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeReport {
    /// Outcome of the `/readyz` probe.
    pub outcome: ProbeOutcome,
    /// Failed probes in a row, this one included.
    pub failures: u32,
    /// `gitVersion` from `/version`, when the probe succeeded.
    pub kubernetes_version: Option<String>,
    /// Adopt mode: the Karmada release its component Deployments run on the host
    /// ([`karmada_version::karmada_version_of`]); `Some(None)` when they were listed and none
    /// names a release, `None` when they were not listed (Provision mode, or the list failed).
    pub deployed_karmada_version: Option<Option<String>>,
    /// The operator's view (Provision mode only).
    pub operator: Option<OperatorView>,
    /// `spec.provision.karmadaVersion` (Provision mode only).
    pub requested_karmada_version: Option<String>,
    /// Why no client could be built from the published kubeconfig, if that is the case.
    pub credentials_problem: Option<String>,
    /// What is missing while there are no credentials (`Secret ns/name has no key "k"`).
    pub waiting_for: Option<String>,
}

/// Applies a probe round to `status`: state machine, versions, phase and conditions.
pub fn apply_probe(
    status: &mut InstanceStatus,
    report: &ProbeReport,
    threshold: u32,
    deleting: bool,
    generation: Option<i64>,
    now: jiff::Timestamp,
) {
    let operator_ready = report.operator.as_ref().map(|o| o.ready.unwrap_or(false));
    let (state, ready, why) = next_state(
        status.state,
        report.outcome,
        report.failures,
        threshold,
        deleting,
        operator_ready,
    );
    status.state = state;
    status.control_plane_ready = ready;
    // Capped so an instance that stays down is not rewritten on every probe.
    status.consecutive_probe_failures =
        i32::try_from(report.failures.min(threshold.max(1))).unwrap_or(i32::MAX);
    if let Some(version) = &report.kubernetes_version {
        status.kubernetes_version = Some(version.clone());
    }
    // Adopt: the release of the components' images; never the API server's `/version`,
    // which is the Kubernetes version Karmada's API server was built from.
    if report.operator.is_none()
        && let Some(deployed) = &report.deployed_karmada_version
    {
        status.karmada_version = deployed.clone();
    }
    if let Some(operator) = &report.operator {
        let version = operator.karmada_version.clone().or_else(|| {
            (operator.ready == Some(true))
                .then(|| report.requested_karmada_version.clone())
                .flatten()
        });
        if version.is_some() {
            status.karmada_version = version;
        }
        let (ok, why, message) = match (operator.exists, operator.ready) {
            (false, _) => (
                false,
                reason::PROVISIONING,
                "waiting for the karmada-operator's Karmada object".to_owned(),
            ),
            (true, Some(true)) => (
                true,
                "OperatorReady",
                "the karmada-operator reports Ready".to_owned(),
            ),
            (true, _) => (
                false,
                reason::PROVISIONING,
                operator
                    .message
                    .clone()
                    .unwrap_or_else(|| "the karmada-operator is installing Karmada".to_owned()),
            ),
        };
        set_condition(
            &mut status.conditions,
            condition_type::PROVISIONED,
            ok,
            why,
            &message,
            generation,
            now,
        );
    } else {
        remove_condition(&mut status.conditions, condition_type::PROVISIONED);
    }
    let (why, message) = match (&report.credentials_problem, report.outcome) {
        (Some(problem), ProbeOutcome::NoCredentials) => {
            (reason::KUBECONFIG_INVALID, problem.clone())
        }
        (None, _) if why == reason::WAITING_FOR_CREDENTIALS && report.waiting_for.is_some() => {
            (why, report.waiting_for.clone().unwrap_or_default())
        }
        _ => (why, ready_message(why, report.failures, threshold)),
    };
    set_condition(
        &mut status.conditions,
        condition_type::READY,
        ready,
        why,
        &message,
        generation,
        now,
    );
    if !deleting {
        let provisioning = operator_ready == Some(false);
        status.phase = Some(if provisioning {
            InstancePhase::Provisioning
        } else if report.outcome == ProbeOutcome::NoCredentials && state != InstanceState::Running {
            InstancePhase::Pending
        } else {
            InstancePhase::Active
        });
    }
    status.observed_generation = generation;
}

/// The Ready condition's message for a state-machine reason.
fn ready_message(why: &str, failures: u32, threshold: u32) -> String {
    match why {
        reason::CONTROL_PLANE_READY => "the Karmada apiserver answers /readyz".to_owned(),
        reason::PROBE_FAILING => format!(
            "{} probe(s) of the Karmada apiserver failed in a row (threshold {threshold})",
            failures.min(threshold)
        ),
        reason::CONTROL_PLANE_UNREACHABLE => {
            format!("the Karmada apiserver failed at least {threshold} probe(s) in a row")
        }
        reason::WAITING_FOR_CREDENTIALS => {
            "no kubeconfig for the Karmada apiserver is available yet".to_owned()
        }
        reason::PROVISIONING => "the karmada-operator has not reported Ready yet".to_owned(),
        reason::DELETING => "the instance is being deleted".to_owned(),
        other => other.to_owned(),
    }
}

/// Probes `/readyz` and `/version` of an instance.
pub async fn probe(connection: &Connection, timeout: Duration) -> (ProbeOutcome, Option<String>) {
    let client = connection.client.clone();
    let readyz = async move {
        let request = http::Request::get("/readyz").body(Vec::new()).ok()?;
        client.request_text(request).await.ok()?;
        let info = client.apiserver_version().await.ok()?;
        Some(info.git_version)
    };
    match tokio::time::timeout(timeout, readyz).await {
        Ok(Some(version)) => (ProbeOutcome::Ready, Some(version)),
        Ok(None) | Err(_) => (ProbeOutcome::Failed, None),
    }
}

/// Adopt mode: the Karmada release of the component Deployments in the instance's Karmada
/// namespace on the host ([`karmada_version::karmada_namespace`]); `None` for other modes or
/// when they cannot be listed.
async fn deployed_karmada_version(ctx: &Context, instance: &Instance) -> Option<Option<String>> {
    if instance.spec.mode != InstanceMode::Adopt {
        return None;
    }
    let namespace = karmada_version::karmada_namespace(instance);
    let api: Api<Deployment> = Api::namespaced(ctx.host.clone(), namespace);
    let params = ListParams::default();
    match tokio::time::timeout(ctx.config.request_timeout, api.list(&params)).await {
        Ok(Ok(list)) => Some(karmada_version::karmada_version_of(&list.items)),
        Ok(Err(err)) => {
            tracing::debug!(namespace, error = %err, "cannot list Karmada's Deployments");
            None
        }
        Err(_) => None,
    }
}

async fn operator_view(ctx: &Context, instance: &Instance) -> Option<OperatorView> {
    let provision = instance.spec.provision.as_ref()?;
    if instance.spec.mode != InstanceMode::Provision {
        return None;
    }
    let name = operator_karmada_name(&instance.metadata.name.clone().unwrap_or_default());
    let api: Api<Karmada> = Api::namespaced(ctx.host.clone(), &provision.host_namespace);
    let found = tokio::time::timeout(ctx.config.request_timeout, api.get_opt(&name)).await;
    let karmada = match found {
        Ok(Ok(k)) => k,
        Ok(Err(err)) => {
            tracing::debug!(error = %err, "cannot read the operator's Karmada object");
            None
        }
        Err(_) => None,
    };
    Some(match karmada {
        None => OperatorView::default(),
        Some(k) => OperatorView {
            exists: true,
            ready: k.ready(),
            message: k.status.as_ref().and_then(|s| {
                crate::models::find_condition(&s.conditions, "Ready")
                    .and_then(|c| c.message.clone())
            }),
            karmada_version: k.status.as_ref().and_then(|s| s.karmada_version.clone()),
        },
    })
}

/// Probes one instance every `probe_interval` until `cancel`, keeping `connection` current.
pub async fn run_instance(
    ctx: Arc<Context>,
    store: Store<Instance>,
    name: String,
    connection: watch::Sender<Option<Connection>>,
    cancel: CancellationToken,
) {
    let api = ctx.instances();
    let timeout = ctx.config.request_timeout;
    let mut failures = 0u32;
    let mut ticker = tokio::time::interval(ctx.config.probe_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let Some(instance) = store.get(&ObjectRef::new(&name)) else {
            continue;
        };
        let mut credentials_problem = None;
        let mut waiting_for = None;
        match lookup_kubeconfig(&ctx.host, &instance, timeout).await {
            Ok(Lookup::Found(kubeconfig)) => {
                let current = connection.borrow().as_ref().map(|c| c.key.clone());
                if current.as_deref() != Some(kubeconfig.key.as_str()) {
                    match connect(&name, &kubeconfig, timeout).await {
                        Ok(conn) => {
                            connection.send_replace(Some(conn));
                        }
                        Err(err) => {
                            tracing::warn!(instance = %name, error = %err, "cannot build a client");
                            credentials_problem = Some(err.to_string());
                            connection.send_replace(None);
                        }
                    }
                }
            }
            Ok(Lookup::Missing(missing)) => {
                waiting_for = Some(missing);
                if connection.borrow().is_some() {
                    connection.send_replace(None);
                }
            }
            // A failing host read keeps the current connection: the instance itself may be fine.
            Err(err) => {
                tracing::warn!(instance = %name, error = %err, "cannot read credentials");
                credentials_problem = Some(err.to_string());
            }
        }
        let current = connection.borrow().clone();
        let (outcome, kubernetes_version) = match &current {
            Some(conn) => probe(conn, timeout).await,
            None => (ProbeOutcome::NoCredentials, None),
        };
        failures = count_failures(failures, outcome);
        let report = ProbeReport {
            outcome,
            failures,
            kubernetes_version,
            deployed_karmada_version: deployed_karmada_version(&ctx, &instance).await,
            operator: operator_view(&ctx, &instance).await,
            requested_karmada_version: instance
                .spec
                .provision
                .as_ref()
                .map(|p| p.karmada_version.clone()),
            credentials_problem,
            waiting_for,
        };
        let threshold = ctx.config.failure_threshold;
        let result = update_status(&api, &name, |fresh, status| {
            apply_probe(
                status,
                &report,
                threshold,
                fresh.is_deleting(),
                fresh.metadata.generation,
                jiff::Timestamp::now(),
            );
        })
        .await;
        match result {
            Ok(true) => {
                ctx.writes.status_sync.inc();
            }
            Ok(false) => {}
            Err(err) => tracing::warn!(instance = %name, error = %err, "cannot write status"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(outcome: ProbeOutcome, failures: u32) -> ProbeReport {
        ProbeReport {
            outcome,
            failures,
            kubernetes_version: (outcome == ProbeOutcome::Ready).then(|| "v1.31.0".to_owned()),
            deployed_karmada_version: None,
            operator: None,
            requested_karmada_version: None,
            credentials_problem: None,
            waiting_for: None,
        }
    }

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_000).unwrap()
    }

    #[test]
    fn adopt_sequence_running_unavailable_running() {
        let mut s = InstanceStatus::default();
        let steps = [
            (
                ProbeOutcome::NoCredentials,
                0,
                InstanceState::InProcess,
                InstancePhase::Pending,
            ),
            (
                ProbeOutcome::Ready,
                0,
                InstanceState::Running,
                InstancePhase::Active,
            ),
            (
                ProbeOutcome::Failed,
                1,
                InstanceState::Running,
                InstancePhase::Active,
            ),
            (
                ProbeOutcome::Failed,
                2,
                InstanceState::Unavailable,
                InstancePhase::Active,
            ),
            (
                ProbeOutcome::Failed,
                9,
                InstanceState::Unavailable,
                InstancePhase::Active,
            ),
            (
                ProbeOutcome::Ready,
                0,
                InstanceState::Running,
                InstancePhase::Active,
            ),
        ];
        for (i, (outcome, failures, state, phase)) in steps.into_iter().enumerate() {
            apply_probe(&mut s, &report(outcome, failures), 2, false, Some(1), now());
            assert_eq!((s.state, s.phase), (state, Some(phase)), "step {i}");
            assert_eq!(
                s.control_plane_ready,
                state == InstanceState::Running,
                "step {i}"
            );
            assert!(s.consecutive_probe_failures <= 2, "capped at the threshold");
        }
        assert_eq!(s.kubernetes_version.as_deref(), Some("v1.31.0"));
        let ready = s.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.status, "True");
    }

    #[test]
    fn unchanged_input_changes_nothing() {
        let mut s = InstanceStatus::default();
        apply_probe(
            &mut s,
            &report(ProbeOutcome::Failed, 5),
            2,
            false,
            Some(1),
            now(),
        );
        let before = s.clone();
        let later = jiff::Timestamp::from_second(2_000).unwrap();
        apply_probe(
            &mut s,
            &report(ProbeOutcome::Failed, 6),
            2,
            false,
            Some(1),
            later,
        );
        assert_eq!(s, before);
    }

    #[test]
    fn adopt_versions_come_from_the_instance_and_its_components() {
        let mut s = InstanceStatus::default();
        apply_probe(
            &mut s,
            &report(ProbeOutcome::NoCredentials, 0),
            3,
            false,
            Some(1),
            now(),
        );
        assert_eq!(s.karmada_version, None);
        // `/version` is the Kubernetes version: never taken for Karmada's.
        apply_probe(
            &mut s,
            &report(ProbeOutcome::Ready, 0),
            3,
            false,
            Some(1),
            now(),
        );
        assert_eq!(s.karmada_version, None);
        assert_eq!(s.kubernetes_version.as_deref(), Some("v1.31.0"));
        let mut found = report(ProbeOutcome::Ready, 0);
        found.deployed_karmada_version = Some(Some("v1.19.0".into()));
        apply_probe(&mut s, &found, 3, false, Some(1), now());
        assert_eq!(s.karmada_version.as_deref(), Some("v1.19.0"));
        // A failed probe (and a failed list) keeps the last known versions.
        apply_probe(
            &mut s,
            &report(ProbeOutcome::Failed, 1),
            3,
            false,
            Some(1),
            now(),
        );
        assert_eq!(s.karmada_version.as_deref(), Some("v1.19.0"));
        assert_eq!(s.kubernetes_version.as_deref(), Some("v1.31.0"));
        // Listed, and no component names a release any more: unknown.
        let mut gone = report(ProbeOutcome::Ready, 0);
        gone.deployed_karmada_version = Some(None);
        apply_probe(&mut s, &gone, 3, false, Some(1), now());
        assert_eq!(s.karmada_version, None);
    }

    #[test]
    fn missing_credentials_are_named() {
        let mut s = InstanceStatus::default();
        let mut r = report(ProbeOutcome::NoCredentials, 0);
        r.waiting_for = Some(r#"Secret kairship-system/prod-kubeconfig has no key "mine""#.into());
        apply_probe(&mut s, &r, 3, false, Some(1), now());
        let ready = s.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.reason, reason::WAITING_FOR_CREDENTIALS);
        assert_eq!(
            ready.message,
            r#"Secret kairship-system/prod-kubeconfig has no key "mine""#
        );
        assert_eq!(s.state, InstanceState::InProcess);
    }

    #[test]
    fn unusable_kubeconfig_is_reported() {
        let mut s = InstanceStatus::default();
        let mut r = report(ProbeOutcome::NoCredentials, 0);
        r.credentials_problem = Some("kubeconfig in secret a/b is unusable".into());
        apply_probe(&mut s, &r, 3, false, Some(1), now());
        let ready = s.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.reason, reason::KUBECONFIG_INVALID);
        assert_eq!(ready.message, "kubeconfig in secret a/b is unusable");
        assert_eq!(s.state, InstanceState::InProcess);
    }

    #[test]
    fn provision_follows_the_operator() {
        let mut s = InstanceStatus::default();
        let mut r = report(ProbeOutcome::NoCredentials, 0);
        r.requested_karmada_version = Some("v1.14.0".into());
        r.operator = Some(OperatorView::default());
        apply_probe(&mut s, &r, 3, false, Some(1), now());
        assert_eq!(s.state, InstanceState::InProcess);
        assert_eq!(s.phase, Some(InstancePhase::Provisioning));
        let provisioned = |s: &InstanceStatus| {
            s.conditions
                .iter()
                .find(|c| c.type_ == "Provisioned")
                .map(|c| c.status.clone())
        };
        assert_eq!(provisioned(&s).as_deref(), Some("False"));
        r.operator = Some(OperatorView {
            exists: true,
            ready: Some(true),
            ..OperatorView::default()
        });
        r.outcome = ProbeOutcome::Ready;
        r.kubernetes_version = Some("v1.31.0".into());
        apply_probe(&mut s, &r, 3, false, Some(1), now());
        assert_eq!(s.state, InstanceState::Running);
        assert_eq!(s.karmada_version.as_deref(), Some("v1.14.0"));
        assert_eq!(provisioned(&s).as_deref(), Some("True"));
        apply_probe(&mut s, &r, 3, true, Some(1), now());
        assert_eq!(s.state, InstanceState::Terminal);
    }
}
