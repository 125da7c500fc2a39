//! The real kubectl (v1.36) through Kairship's native proxy: `kairship sandbox --tls` issues
//! the admin a kubeconfig whose server is the proxy of one Karmada instance, and the scripted
//! kubectl session runs through it (creates with protobuf bodies, client- and server-side
//! apply, validation of an unknown field, explain, tables, scale, namespace deletion). Reads
//! come from Kairship's cache, writes reach the instance. A Karmada API server runs no
//! workload controllers, so the steps that need pods (rollout, Job completion, logs, exec)
//! are not part of this session.
//!
//! kubectl is found as `kube_sandbox::testing::kubectl` says; without it the test prints a
//! notice and passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube_sandbox::testing::kubectl::{Kubectl, kubectl_or_skip};
use kube_sandbox::testing::kubectl_session;

mod support;

use support::{free_port, start_sandbox};

#[test]
fn kubectl_session_through_the_native_proxy() {
    let Some(binary) = kubectl_or_skip("kubectl_session_through_the_native_proxy") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("kairship-kubectl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sandbox = start_sandbox(&dir, free_port(), &["--tls"]);
    let kubectl = Kubectl::new(binary, dir.join("admin.kubeconfig"));
    let ns = "kubectl-proxy";
    kubectl_session::create_kinds(&kubectl, ns);
    kubectl_session::apply_documents(&kubectl, ns);
    kubectl_session::unknown_field_is_refused(&kubectl, ns);
    kubectl_session::explain(&kubectl);
    kubectl_session::tables_without_pods(&kubectl, ns);
    kubectl.ok(&["-n", ns, "scale", "deployment/web", "--replicas=4"]);
    let replicas = kubectl.ok(&[
        "-n",
        ns,
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.replicas}",
    ]);
    assert_eq!(replicas, "4");
    kubectl_session::delete_namespace(&kubectl, ns);
    drop(sandbox);
}
