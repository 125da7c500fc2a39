//! Conversions of the placement feature's messages (`PreviewPlacement`).

use super::applications::placement_from_pb;
use super::convert::struct_to_json;
use super::pb;
use crate::api::placement::{PlacementPreviewSpec, WorkloadReference};
use crate::api::{ApiError, PlacementPreview, PreviewPlacementRequest};

/// `PreviewPlacement`.
pub fn preview_placement(m: pb::PreviewPlacementRequest) -> PreviewPlacementRequest {
    PreviewPlacementRequest {
        instance: m.instance,
        preview: PlacementPreviewSpec {
            policy: m.policy.map(struct_to_json),
            placement: m.placement.map(placement_from_pb),
            workload: m.workload.map(struct_to_json),
            workload_ref: m.workload_ref.map(|r| WorkloadReference {
                group: r.group,
                version: r.version,
                resource: r.resource,
                namespace: r.namespace,
                name: r.name,
            }),
        },
    }
}

/// The preview's answer; the exclusion by the name REST gives it.
pub fn placement_preview(p: PlacementPreview) -> Result<pb::PlacementPreview, ApiError> {
    let mut left_out = Vec::with_capacity(p.left_out.len());
    for l in p.left_out {
        let exclusion = serde_json::to_value(l.exclusion)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .ok_or_else(|| ApiError::internal("an exclusion without a name"))?;
        left_out.push(pb::PreviewLeftOut {
            cluster: l.cluster,
            exclusion,
            reason: l.reason,
        });
    }
    Ok(pb::PlacementPreview {
        replicas: p.replicas,
        replica_scheduling_type: p.replica_scheduling_type,
        clusters: p
            .clusters
            .into_iter()
            .map(|t| pb::PreviewTarget {
                cluster: t.cluster,
                replicas: t.replicas,
            })
            .collect(),
        left_out,
        message: p.message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::placement::{PreviewLeftOut, PreviewTarget};
    use crate::scheduling::Exclusion;

    #[test]
    fn previews_carry_over() {
        let m = pb::PreviewPlacementRequest {
            instance: "i".into(),
            placement: Some(pb::Placement {
                cluster_names: vec!["east".into()],
                ..Default::default()
            }),
            workload_ref: Some(pb::WorkloadReference {
                group: "apps".into(),
                version: "v1".into(),
                resource: "deployments".into(),
                namespace: Some("demo".into()),
                name: "web".into(),
            }),
            ..Default::default()
        };
        let req = preview_placement(m);
        assert_eq!(req.instance, "i");
        assert_eq!(req.preview.placement.unwrap().cluster_names, ["east"]);
        assert_eq!(req.preview.workload_ref.unwrap().name, "web");
        let answer = placement_preview(PlacementPreview {
            replicas: 3,
            replica_scheduling_type: "Duplicated".into(),
            clusters: vec![PreviewTarget {
                cluster: "east".into(),
                replicas: 3,
            }],
            left_out: vec![PreviewLeftOut {
                cluster: "west".into(),
                exclusion: Exclusion::NotReady,
                reason: "r".into(),
            }],
            message: None,
        })
        .unwrap();
        assert_eq!(answer.left_out[0].exclusion, "NotReady");
        assert_eq!(answer.clusters[0].replicas, 3);
    }
}
