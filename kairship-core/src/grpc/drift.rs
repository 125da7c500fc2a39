//! Conversions of the drift feature's messages (`GetInstanceDrift`, `GetObjectDrift`).

use super::convert::json_to_value;
use super::pb;
use crate::api::drift::{MemberDrift, UnreachableMember};
use crate::api::{
    ApiError, GetInstanceDriftRequest, GetObjectDriftRequest, InstanceDrift, ObjectDrift,
};

/// `GetInstanceDrift`.
pub fn instance_drift_request(m: pb::GetInstanceDriftRequest) -> GetInstanceDriftRequest {
    GetInstanceDriftRequest {
        instance: m.instance,
    }
}

/// `GetObjectDrift`.
pub fn object_drift_request(m: pb::GetObjectDriftRequest) -> GetObjectDriftRequest {
    GetObjectDriftRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        name: m.name,
    }
}

fn member(m: MemberDrift) -> Result<pb::MemberDrift, ApiError> {
    let state = serde_json::to_value(m.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .ok_or_else(|| ApiError::internal("a drift state without a name"))?;
    Ok(pb::MemberDrift {
        cluster: m.cluster,
        state,
        fields: m
            .fields
            .into_iter()
            .map(|f| pb::FieldDrift {
                path: f.path,
                applied: f.applied.map(json_to_value),
                live: f.live.map(json_to_value),
            })
            .collect(),
        message: m.message,
    })
}

/// One object's copies.
pub fn object_drift(o: ObjectDrift) -> Result<pb::ObjectDrift, ApiError> {
    Ok(pb::ObjectDrift {
        api_version: o.api_version,
        kind: o.kind,
        namespace: o.namespace,
        name: o.name,
        members: o
            .members
            .into_iter()
            .map(member)
            .collect::<Result<_, _>>()?,
    })
}

/// The instance's drifted objects.
pub fn instance_drift(d: InstanceDrift) -> Result<pb::InstanceDrift, ApiError> {
    Ok(pb::InstanceDrift {
        checked: d.checked,
        items: d
            .items
            .into_iter()
            .map(object_drift)
            .collect::<Result<_, _>>()?,
        unreachable: d
            .unreachable
            .into_iter()
            .map(
                |UnreachableMember { cluster, message }| pb::UnreachableMember { cluster, message },
            )
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::drift::DriftState;
    use crate::drift::FieldDrift;

    #[test]
    fn drift_carries_over() {
        let d = instance_drift(InstanceDrift {
            checked: 2,
            items: vec![ObjectDrift {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("demo".into()),
                name: "web".into(),
                members: vec![MemberDrift {
                    cluster: "east".into(),
                    state: DriftState::Drifted,
                    fields: vec![FieldDrift {
                        path: "metadata.labels.x".into(),
                        applied: None,
                        live: Some(json!("y")),
                    }],
                    message: None,
                }],
            }],
            unreachable: vec![],
        })
        .unwrap();
        assert_eq!(d.checked, 2);
        let m = &d.items[0].members[0];
        assert_eq!(m.state, "Drifted");
        assert!(m.fields[0].applied.is_none());
        assert!(m.fields[0].live.is_some());
    }
}
