//! Two `kairship controller-manager` processes on one sandbox host: one leads and writes
//! status; after it is killed (SIGKILL, so the lease is not released) the other takes over and
//! status writes continue.
#![allow(clippy::unwrap_used)]

#[path = "../../kairship-core/tests/common/mod.rs"]
mod common;
mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use k8s_openapi::api::coordination::v1::Lease;
use kairship_core::instance::{Instance, InstanceState};
use kube::Api;
use kube::api::PostParams;
use support::Process;

const LIMIT: Duration = Duration::from_secs(60);

fn spawn_manager(kubeconfig: &std::path::Path, identity: &str) -> Process {
    let child = Command::new(env!("CARGO_BIN_EXE_kairship"))
        .args([
            "controller-manager",
            "--leader-elect",
            "--leader-elect-namespace=default",
            "--leader-elect-lease-duration=2s",
            "--leader-elect-renew-deadline=1500ms",
            "--leader-elect-retry-period=200ms",
            "--probe-interval=200ms",
            "--metrics-addr=127.0.0.1:0",
            "--probe-addr=127.0.0.1:0",
            "--log-level=warn",
        ])
        .arg(format!("--leader-elect-identity={identity}"))
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Process(child)
}

async fn holder(host: &kube::Client) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(host.clone(), "default");
    leases
        .get_opt("kairship-controller-manager")
        .await
        .unwrap()?
        .spec?
        .holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killed_leader_is_replaced_and_status_writes_continue() {
    let host = host().await;
    let hc = host.client();
    let dir = std::env::temp_dir().join(format!("kairship-le-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("host.kubeconfig");
    let served = host
        .serve(kube_sandbox::ServeOptions {
            kubeconfig_path: Some(kubeconfig.clone()),
            ..kube_sandbox::ServeOptions::default()
        })
        .await
        .unwrap();
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

    let mut a = Some(spawn_manager(&kubeconfig, "manager-a"));
    eventually("manager-a to lead", LIMIT, || async {
        (holder(&hc).await.as_deref() == Some("manager-a")).then_some(())
    })
    .await;
    let _b = spawn_manager(&kubeconfig, "manager-b");

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
    assert_eq!(
        holder(&hc).await.as_deref(),
        Some("manager-a"),
        "one leader throughout"
    );

    // Kill the leader; the standby takes the lease once it expires.
    drop(a.take());
    eventually("manager-b to lead", LIMIT, || async {
        (holder(&hc).await.as_deref() == Some("manager-b")).then_some(())
    })
    .await;
    let mut grown = member.clone();
    grown.nodes = (6, 6);
    karmada.set_member(&grown).await;
    eventually("the new leader's summary", LIMIT, || async {
        let s = get_instance(&hc, "ha").await?.status?.summary?;
        (s.node_summary.total_num == 6).then_some(())
    })
    .await;
    served.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
