//! The CSINode mirror: a lent physical node's CSINode (its CSI drivers, node IDs, topology
//! keys and volume limits) is copied under the virtual node's name, owned by the virtual
//! Node, so the computing cluster's scheduler sees the same volume limits.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::storage::v1::CSINode;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};
use kube_kit::client::ignore_not_found;

use crate::labels;
use crate::syncer::context::Context;
use crate::syncer::error::{SyncError, api_code};

/// The mirror of `physical` for the virtual node `vnode`.
pub fn mirrored_csinode(vnode: &Node, physical: &CSINode) -> CSINode {
    let vnode_name = vnode.name_any();
    let mut object_labels = BTreeMap::new();
    for key in [labels::CLUSTER_BINDING, labels::PHYSICAL_NODE_NAME] {
        if let Some(value) = vnode.labels().get(key) {
            object_labels.insert(key.to_owned(), value.clone());
        }
    }
    object_labels.insert(
        labels::MANAGED_BY.to_owned(),
        labels::MANAGED_BY_VALUE.to_owned(),
    );
    CSINode {
        metadata: ObjectMeta {
            name: Some(vnode_name.clone()),
            labels: Some(object_labels),
            owner_references: vnode.uid().map(|uid| {
                vec![OwnerReference {
                    api_version: "v1".to_owned(),
                    kind: "Node".to_owned(),
                    name: vnode_name,
                    uid,
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
        },
        spec: physical.spec.clone(),
    }
}

/// Whether the mirror `have` already matches `want`.
fn same(have: &CSINode, want: &CSINode) -> bool {
    have.spec == want.spec
        && have.metadata.labels == want.metadata.labels
        && have.metadata.owner_references == want.metadata.owner_references
}

/// Creates, updates or deletes the mirror of `physical` for `vnode`.
pub async fn sync(
    ctx: &Context,
    vnode: &Node,
    physical: Option<&CSINode>,
) -> Result<(), SyncError> {
    let name = vnode.name_any();
    let api: Api<CSINode> = Api::all(ctx.computing.clone());
    let current = ctx.computing_index().csinode(&name);
    let fail = |action, source| SyncError::CsiNode {
        action,
        name: name.clone(),
        source,
    };
    match (physical, current) {
        (None, None) => Ok(()),
        (None, Some(_)) => ignore_not_found(api.delete(&name, &DeleteParams::default()).await)
            .map(drop)
            .map_err(|err| fail("delete", err)),
        (Some(physical), None) => {
            match api
                .create(&PostParams::default(), &mirrored_csinode(vnode, physical))
                .await
            {
                Ok(_) => Ok(()),
                // Created meanwhile; the watch brings it and the next pass compares.
                Err(err) if api_code(&err) == Some(409) => Ok(()),
                Err(err) => Err(fail("create", err)),
            }
        }
        (Some(physical), Some(current)) => {
            let mut want = mirrored_csinode(vnode, physical);
            if same(&current, &want) {
                return Ok(());
            }
            want.metadata.resource_version = current.resource_version();
            api.replace(&name, &PostParams::default(), &want)
                .await
                .map(|_| ())
                .map_err(|e| fail("update", e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mirror_copies_drivers_and_is_owned_by_the_virtual_node() {
        let vnode: Node = serde_json::from_value(json!({ "metadata": { "name": "vnode-c-n1", "uid": "u-1",
            "labels": { "kubeocean.io/cluster-binding": "b", "kubeocean.io/physical-node-name": "n1", "zone": "a" } } }))
        .unwrap();
        let physical: CSINode = serde_json::from_value(json!({ "metadata": { "name": "n1" },
            "spec": { "drivers": [{ "name": "ebs.csi.aws.com", "nodeID": "i-123",
                "topologyKeys": ["topology.ebs.csi.aws.com/zone"], "allocatable": { "count": 25 } }] } }))
        .unwrap();
        let mirror = mirrored_csinode(&vnode, &physical);
        assert_eq!(mirror.name_any(), "vnode-c-n1");
        assert_eq!(mirror.spec, physical.spec);
        assert_eq!(
            mirror.labels().get(labels::PHYSICAL_NODE_NAME).unwrap(),
            "n1"
        );
        assert!(!mirror.labels().contains_key("zone"));
        let owner = &mirror.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Node", "u-1"));
        assert!(same(&mirror, &mirrored_csinode(&vnode, &physical)));
    }
}
