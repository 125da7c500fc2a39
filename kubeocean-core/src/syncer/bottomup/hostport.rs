//! Host ports of a physical node on its virtual node, as upstream does it: the ports the
//! node's own pods hold (not Kubeocean's pods) are declared by one placeholder pod bound to
//! the virtual node, in namespace `kubeocean-fake` and labelled
//! `kubeocean.io/hostport-fake-pod=true`. It requests nothing and never runs (nothing runs
//! pods of a virtual node but the syncer, which skips it), yet any scheduler's NodePorts
//! filter counts its ports, so a pod asking for one of them is not placed there.
//!
//! One placeholder per virtual node, named after it; placeholders of another name on the
//! same node (upstream's, which have generated names) are replaced.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Namespace, ObjectReference, Pod, PodSpec, Toleration,
};
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};
use tokio::time::Instant;

use crate::labels;
use crate::leasing::host_ports::HostPort;
use crate::naming::virtual_node_name;
use crate::syncer::context::Context;
use crate::syncer::error::{SyncError, api_code};
use crate::syncer::queue::{FailureCounts, WorkQueue};
use crate::syncer::worker;

/// Name of this reconciler in metrics and logs.
pub const NAME: &str = "hostport";
/// Prefix of a placeholder's name (upstream's generateName, without the random part).
pub const PLACEHOLDER_PREFIX: &str = "fake-pod-for-hostport-";
/// Image of the placeholder's container (upstream's; it never runs).
pub const PLACEHOLDER_IMAGE: &str = "busybox:1.28";
/// Priority class of placeholders (upstream's): nothing preempts them.
pub const PLACEHOLDER_PRIORITY_CLASS: &str = "system-node-critical";

/// Name of the placeholder of `vnode`.
pub fn placeholder_name(vnode: &str) -> String {
    format!("{PLACEHOLDER_PREFIX}{vnode}")
}

/// Whether `pod` is a host-port placeholder.
pub fn is_placeholder(pod: &Pod) -> bool {
    pod.labels()
        .get(labels::HOSTPORT_PLACEHOLDER)
        .is_some_and(|v| v == "true")
}

/// The container ports of a placeholder holding `ports` (named `port-<i>`, as upstream).
pub fn placeholder_ports(ports: &[HostPort]) -> Vec<ContainerPort> {
    ports
        .iter()
        .enumerate()
        .map(|(i, p)| ContainerPort {
            name: Some(format!("port-{i}")),
            container_port: if p.container_port > 0 {
                p.container_port
            } else {
                p.port
            },
            host_port: Some(p.port),
            host_ip: Some(p.host_ip.clone()),
            protocol: Some(p.protocol.clone()),
        })
        .collect()
}

/// The placeholder of `vnode` holding `ports`; `None` when there is none to hold.
pub fn placeholder_pod(vnode: &str, ports: &[HostPort]) -> Option<Pod> {
    if ports.is_empty() {
        return None;
    }
    Some(Pod {
        metadata: ObjectMeta {
            name: Some(placeholder_name(vnode)),
            namespace: Some(labels::HOSTPORT_PLACEHOLDER_NAMESPACE.to_owned()),
            labels: Some(
                [
                    (labels::HOSTPORT_PLACEHOLDER.to_owned(), "true".to_owned()),
                    (
                        labels::MANAGED_BY.to_owned(),
                        labels::MANAGED_BY_VALUE.to_owned(),
                    ),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(vnode.to_owned()),
            priority_class_name: Some(PLACEHOLDER_PRIORITY_CLASS.to_owned()),
            tolerations: Some(vec![Toleration {
                operator: Some("Exists".to_owned()),
                ..Toleration::default()
            }]),
            restart_policy: Some("Never".to_owned()),
            automount_service_account_token: Some(false),
            containers: vec![Container {
                name: "fake-container".to_owned(),
                image: Some(PLACEHOLDER_IMAGE.to_owned()),
                command: Some(vec!["sleep".to_owned(), "100000000".to_owned()]),
                ports: Some(placeholder_ports(ports)),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    })
}

/// The ports a placeholder holds.
fn held_ports(pod: &Pod) -> Vec<ContainerPort> {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.ports.clone())
        .unwrap_or_default()
}

/// What a placeholder of the computing cluster is, as far as this reconciler cares.
#[derive(Clone, Debug, PartialEq)]
struct Held {
    name: String,
    ports: Vec<ContainerPort>,
}

/// The host-port reconciler of a session: its queue (physical node names), failures, and
/// what it knows of the placeholders (listed once, then kept from its own writes).
#[derive(Default)]
pub struct HostPorts {
    /// Physical node names whose placeholder to check.
    pub queue: WorkQueue,
    failures: FailureCounts,
    /// Virtual node name -> its placeholders; `None` until listed.
    known: Mutex<Option<HashMap<String, Vec<Held>>>>,
}

impl HostPorts {
    /// A reconciler that knows nothing yet.
    pub fn new() -> HostPorts {
        HostPorts::default()
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Option<HashMap<String, Vec<Held>>>> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Lists the placeholders once.
    async fn ensure_listed(&self, ctx: &Context) -> Result<(), SyncError> {
        if self.known().is_some() {
            return Ok(());
        }
        let api: Api<Pod> = Api::namespaced(
            ctx.computing.clone(),
            labels::HOSTPORT_PLACEHOLDER_NAMESPACE,
        );
        let selector = format!(
            "{}=true,{}={}",
            labels::HOSTPORT_PLACEHOLDER,
            labels::MANAGED_BY,
            labels::MANAGED_BY_VALUE
        );
        let listed = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|source| SyncError::HostPort {
                action: "list",
                name: labels::HOSTPORT_PLACEHOLDER_NAMESPACE.to_owned(),
                source,
            })?;
        let mut known: HashMap<String, Vec<Held>> = HashMap::new();
        for pod in listed.items {
            let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
                continue;
            };
            known.entry(node).or_default().push(Held {
                name: pod.name_any(),
                ports: held_ports(&pod),
            });
        }
        *self.known() = Some(known);
        Ok(())
    }

    async fn reconcile_node(&self, ctx: &Context, node: &str) -> Result<(), SyncError> {
        let Some(binding) = ctx.computing_index().binding() else {
            return Ok(());
        };
        let vnode_name = virtual_node_name(&binding.spec.cluster_id, node);
        let vnode = ctx.computing_index().vnode(&vnode_name);
        // A virtual node being removed keeps no placeholder (the drain deletes its pods).
        let live = vnode.as_ref().is_some_and(|v| {
            v.metadata.deletion_timestamp.is_none()
                && !v
                    .spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .is_some_and(|t| t.iter().any(|t| t.key == labels::TAINT_VNODE_DELETING))
        }) && binding.metadata.deletion_timestamp.is_none();
        let ports = if live {
            ctx.worker_index().host_ports(node)
        } else {
            Vec::new()
        };
        let desired = placeholder_pod(&vnode_name, &ports);
        self.ensure_listed(ctx).await?;
        let held: Vec<Held> = self
            .known()
            .as_ref()
            .and_then(|k| k.get(&vnode_name).cloned())
            .unwrap_or_default();
        let want = desired.as_ref().map(|d| Held {
            name: d.name_any(),
            ports: held_ports(d),
        });
        let api: Api<Pod> = Api::namespaced(
            ctx.computing.clone(),
            labels::HOSTPORT_PLACEHOLDER_NAMESPACE,
        );
        let fail = |action: &'static str, name: &str| {
            let name = name.to_owned();
            move |source| SyncError::HostPort {
                action,
                name,
                source,
            }
        };
        // Stale placeholders (other ports, or another name) go first: their ports would
        // clash with the new one's. Pod specs cannot change, so a new port set is a new pod.
        let mut kept = Vec::new();
        for old in held {
            if want.as_ref() == Some(&old) {
                kept.push(old);
                continue;
            }
            let params = DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            };
            match api.delete(&old.name, &params).await {
                Ok(_) => {}
                Err(err) if api_code(&err) == Some(404) => {}
                Err(err) => return Err(fail("delete", &old.name)(err)),
            }
        }
        if let (Some(desired), Some(want)) = (desired, want)
            && kept.is_empty()
        {
            ensure_namespace(ctx).await?;
            match api.create(&PostParams::default(), &desired).await {
                Ok(_) => {}
                // The old one is still terminating or was made meanwhile: look again.
                Err(err) if api_code(&err) == Some(409) => {
                    self.forget();
                    return Err(fail("create", &want.name)(err));
                }
                Err(err) => return Err(fail("create", &want.name)(err)),
            }
            kept.push(want);
        }
        if let Some(known) = self.known().as_mut() {
            // A virtual node is known once reconciled while live: its later updates need
            // no look (see [`HostPorts::knows`]).
            if live || !kept.is_empty() {
                known.insert(vnode_name, kept);
            } else {
                known.remove(&vnode_name);
            }
        }
        Ok(())
    }

    /// Whether the placeholders of virtual node `vnode` were reconciled while it was live.
    pub fn knows(&self, vnode: &str) -> bool {
        self.known().as_ref().is_some_and(|k| k.contains_key(vnode))
    }

    /// Drops what is known, so that the next reconcile lists again.
    fn forget(&self) {
        *self.known() = None;
    }
}

/// Creates the placeholders' namespace when missing.
async fn ensure_namespace(ctx: &Context) -> Result<(), SyncError> {
    let api: Api<Namespace> = Api::all(ctx.computing.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(labels::HOSTPORT_PLACEHOLDER_NAMESPACE.to_owned()),
            labels: Some(
                [(
                    labels::MANAGED_BY.to_owned(),
                    labels::MANAGED_BY_VALUE.to_owned(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.create(&PostParams::default(), &namespace).await {
        Ok(_) => Ok(()),
        Err(err) if api_code(&err) == Some(409) => Ok(()),
        Err(source) => Err(SyncError::HostPort {
            action: "create",
            name: labels::HOSTPORT_PLACEHOLDER_NAMESPACE.to_owned(),
            source,
        }),
    }
}

/// The worker-loop face of [`HostPorts`].
pub struct HostPortWorker(pub std::sync::Arc<HostPorts>);

impl worker::Reconciler for HostPortWorker {
    type Error = SyncError;

    fn name(&self) -> &'static str {
        NAME
    }

    fn queue<'a>(&'a self, _ctx: &'a Context) -> &'a WorkQueue {
        &self.0.queue
    }

    fn failures<'a>(&'a self, _ctx: &'a Context) -> &'a FailureCounts {
        &self.0.failures
    }

    async fn reconcile(&self, ctx: &Context, key: &str) -> Result<Option<Instant>, SyncError> {
        self.0.reconcile_node(ctx, key).await?;
        Ok(None)
    }

    fn failure_target(&self, ctx: &Context, _key: &str) -> Option<ObjectReference> {
        use kube::Resource;
        ctx.computing_index().binding().map(|b| b.object_ref(&()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(ip: &str, proto: &str, port: i32) -> HostPort {
        HostPort {
            host_ip: ip.into(),
            protocol: proto.into(),
            port,
            container_port: 80,
        }
    }

    #[test]
    fn a_placeholder_holds_the_ports_and_nothing_else() {
        assert!(placeholder_pod("vnode-w1-n1", &[]).is_none());
        let pod = placeholder_pod(
            "vnode-w1-n1",
            &[port("0.0.0.0", "TCP", 8080), port("10.0.0.1", "UDP", 53)],
        )
        .unwrap();
        assert!(is_placeholder(&pod));
        assert_eq!(pod.name_any(), "fake-pod-for-hostport-vnode-w1-n1");
        assert_eq!(
            pod.namespace().as_deref(),
            Some(labels::HOSTPORT_PLACEHOLDER_NAMESPACE)
        );
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some("vnode-w1-n1"));
        assert!(spec.containers[0].resources.is_none(), "requests nothing");
        let ports = held_ports(&pod);
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0].name.as_deref(), Some("port-0"));
        assert_eq!(ports[1].host_port, Some(53));
        assert_eq!(ports[1].protocol.as_deref(), Some("UDP"));
        assert_eq!(ports[1].host_ip.as_deref(), Some("10.0.0.1"));
    }
}
