//! The sandbox's spare member cluster: a sandbox cluster that is not joined to any instance,
//! with a node and kube-controller-manager's controllers (so its token Secrets get tokens),
//! whose kubeconfig is written to the sandbox directory for trying a Push join.

use std::path::Path;

use kube_sandbox::{ClusterOptions, ServeOptions, Served, SimNode};

/// Name of the spare member cluster (and of its kubeconfig file, `<dir>/<name>.kubeconfig`).
pub const NAME: &str = "member-spare";

/// Starts the spare member, served with `options`.
pub async fn start(options: &ServeOptions) -> anyhow::Result<(kube_sandbox::Cluster, Served)> {
    let cluster = kube_sandbox::Cluster::with_options(
        NAME,
        ClusterOptions {
            workload_controllers: true,
            ..ClusterOptions::default()
        },
    );
    cluster
        .add_node(&SimNode::new(&format!("{NAME}-node-1"), "8", "32Gi"))
        .map_err(|e| anyhow::anyhow!("adding a node to {NAME}: {}", e.message))?;
    let served = cluster.serve(options.clone()).await?;
    Ok((cluster, served))
}

/// The commands that join the spare member to `instance` and unjoin it again.
pub fn try_join(curl: &str, dir: &Path, instance: &str) -> String {
    let kubeconfig = dir.join(format!("{NAME}.kubeconfig"));
    format!(
        "--- join the spare member cluster {NAME} (Push, from its kubeconfig):\n\
         jq -n --rawfile kc {} '{{name: \"spare\", kubeconfig: $kc, labels: {{env: \"demo\"}}, region: \"eu\"}}' \
         | {curl} -H \"$ADMIN\" -H 'Content-Type: application/json' -X POST $KS/instances/{instance}/clusters:join --data-binary @- | jq .spec\n\
         {curl} -H \"$ADMIN\" $KS/instances/{instance}/clusters/spare | jq '.status.conditions'\n\
         {curl} -H \"$ADMIN\" -X DELETE $KS/instances/{instance}/clusters/spare | jq .metadata.name\n",
        kubeconfig.display()
    )
}
