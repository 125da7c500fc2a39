//! The clusters of a `kairship sandbox` as kube-rs and kubectl reach them, with the
//! kubeconfigs it writes into its directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;

/// A kube-rs client with the kubeconfig at `kubeconfig`.
pub async fn client_from(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// A kube-rs client of the sandbox cluster `name` (`host`, an instance such as `karmada-a`
/// or a member such as `a-east`), with the kubeconfig the sandbox wrote for it in `dir`.
pub async fn client_of(dir: &Path, name: &str) -> kube::Client {
    client_from(&dir.join(format!("{name}.kubeconfig"))).await
}

/// A copy of `kubeconfig` (a user's kubeconfig of an instance proxy) whose server is Karmada's
/// cluster proxy of `member` behind it, written beside it as `<stem>-<member>.kubeconfig`.
pub fn member_kubeconfig(kubeconfig: &Path, member: &str) -> PathBuf {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let suffix = format!("/apis/cluster.karmada.io/v1alpha1/clusters/{member}/proxy");
    let rewritten: Vec<String> = text
        .lines()
        .map(|line| match line.split_once("server: ") {
            Some((indent, server)) if indent.trim().is_empty() => {
                format!("{indent}server: {}{suffix}", server.trim_end_matches('/'))
            }
            _ => line.to_owned(),
        })
        .collect();
    assert!(rewritten.iter().any(|l| l.ends_with(&suffix)), "{text}");
    let out = kubeconfig.with_file_name(format!(
        "{}-{member}.kubeconfig",
        kubeconfig.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::write(&out, rewritten.join("\n") + "\n").unwrap();
    out
}

/// `(cluster, pod, phase, node)` of the pods labelled `app=<app>` in namespace `demo`, as the
/// sandbox members `members` hold them.
pub async fn pods_held(dir: &Path, members: &[&str], app: &str) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for member in members {
        let pods: kube::Api<Pod> = kube::Api::namespaced(client_of(dir, member).await, "demo");
        for pod in pods
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await
            .unwrap()
        {
            let status = pod.status.unwrap_or_default();
            out.insert(vec![
                (*member).to_owned(),
                pod.metadata.name.unwrap_or_default(),
                status.phase.unwrap_or_default(),
                pod.spec.and_then(|s| s.node_name).unwrap_or_default(),
            ]);
        }
    }
    out
}
