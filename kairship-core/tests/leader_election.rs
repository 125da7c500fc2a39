//! Two controller-managers on one host: only the lease holder writes; when it dies (its task is
//! aborted, so the lease is not released) the other takes over and status writes continue.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use kairship_core::controllers::{Context, NoopRegistry, run_leading};
use kairship_core::instance::{Instance, InstanceState};
use kube::Api;
use kube::api::PostParams;
use kube_kit::LeaseElector;
use kube_kit::admin::Metrics;
use kube_kit::leader::{LeaderElectionConfig, LeaderElector, StopGrace, run_elected};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);

struct Manager {
    ctx: Arc<Context>,
    elector: Arc<LeaseElector>,
    task: tokio::task::JoinHandle<()>,
}

fn start(host: &kube::Client, identity: &str) -> Manager {
    let ctx = Context::new(
        host.clone(),
        fast_config(),
        Arc::new(NoopRegistry),
        &Metrics::new(),
    );
    let config = LeaderElectionConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1_500),
        retry_period: Duration::from_millis(200),
        ..LeaderElectionConfig::new("default", "kairship-controller-manager", identity)
    };
    let elector = Arc::new(LeaseElector::new(host.clone(), config).unwrap());
    let (c, e) = (ctx.clone(), elector.clone());
    let task = tokio::spawn(async move {
        let grace = StopGrace {
            on_loss: Duration::from_millis(400),
            on_shutdown: Duration::from_secs(2),
        };
        let _ = run_elected(e.as_ref(), CancellationToken::new(), grace, |term| {
            run_leading(c.clone(), None, term)
        })
        .await;
    });
    Manager { ctx, elector, task }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn standby_takes_over_when_the_leader_dies() {
    let host = host().await;
    let hc = host.client();
    let karmada = KarmadaInstance::start("ha").await;
    let member = Member::new("m1", true, (2, 2), "4", "8Gi", "110");
    karmada.add_member(&member).await;
    put_kubeconfig_secret(
        &hc,
        "ha-kubeconfig",
        "kubeconfig",
        &karmada.served.kubeconfig_yaml,
    )
    .await;

    let a = start(&hc, "manager-a");
    let mut a_state = a.elector.subscribe();
    a_state.wait_for(|s| s.is_leading()).await.unwrap();
    let b = start(&hc, "manager-b");
    let mut b_state = b.elector.subscribe();
    b_state
        .wait_for(|s| !matches!(s, kube_kit::LeaderState::Starting))
        .await
        .unwrap();
    assert!(!b_state.borrow().is_leading(), "one leader at a time");

    Api::<Instance>::all(hc.clone())
        .create(&PostParams::default(), &adopt_instance("ha"))
        .await
        .unwrap();
    wait_state(&hc, "ha", InstanceState::Running, LIMIT).await;
    eventually("the first summary", LIMIT, || async {
        let s = get_instance(&hc, "ha").await?.status?.summary?;
        (s.node_summary.total_num == 2).then_some(())
    })
    .await;
    assert!(a.ctx.writes.status_sync() > 0 && a.ctx.writes.statistics() > 0);
    assert_eq!(
        b.ctx.writes.status_sync() + b.ctx.writes.statistics(),
        0,
        "the standby writes nothing"
    );

    // The leader dies without releasing the lease.
    a.task.abort();
    b_state.wait_for(|s| s.is_leading()).await.unwrap();

    let mut grown = member.clone();
    grown.nodes = (5, 5);
    karmada.set_member(&grown).await;
    eventually("the new leader's summary", LIMIT, || async {
        let s = get_instance(&hc, "ha").await?.status?.summary?;
        (s.node_summary.total_num == 5).then_some(())
    })
    .await;
    assert!(b.ctx.writes.statistics() > 0, "written by the new leader");
    b.task.abort();
}
