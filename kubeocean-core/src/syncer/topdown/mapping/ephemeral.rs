//! Ephemeral containers (`kubectl debug`) of a virtual pod -> its physical pod.
//!
//! They cannot be set by updating a pod, only through its `ephemeralcontainers`
//! subresource, and once added they can be neither changed nor removed. So the physical
//! pod gets the ones it lacks, appended to those it has.

use k8s_openapi::api::core::v1::{EphemeralContainer, Pod};

use super::MapError;
use super::pod::physical_ephemeral_containers;

/// The full list of ephemeral containers to write through the physical pod's
/// `ephemeralcontainers` subresource: the physical pod's own, then the virtual pod's it does
/// not have yet (by name), rewritten for the worker. `None` when there is nothing to add.
pub fn ephemeral_containers_update(
    virtual_pod: &Pod,
    physical_pod: &Pod,
) -> Result<Option<Vec<EphemeralContainer>>, MapError> {
    let Some(wanted) = physical_ephemeral_containers(virtual_pod)? else {
        return Ok(None);
    };
    let mut have: Vec<EphemeralContainer> = physical_pod
        .spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.clone())
        .unwrap_or_default();
    let before = have.len();
    for container in wanted {
        if !have.iter().any(|c| c.name == container.name) {
            have.push(container);
        }
    }
    Ok((have.len() > before).then_some(have))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(namespace: &str, ephemeral: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": { "name": "web", "namespace": namespace },
            "spec": { "containers": [{ "name": "app", "image": "nginx" }],
                      "ephemeralContainers": ephemeral },
        }))
        .unwrap()
    }

    fn debugger(name: &str) -> serde_json::Value {
        json!({ "name": name, "image": "busybox", "targetContainerName": "app",
                "envFrom": [{ "configMapRef": { "name": "settings" } }] })
    }

    #[test]
    fn only_the_missing_containers_are_appended_rewritten() {
        let settings = crate::naming::physical_name("default", "settings");
        // (case, virtual ephemeral containers, physical ones, names written or None)
        type Case = (
            &'static str,
            serde_json::Value,
            serde_json::Value,
            Option<Vec<&'static str>>,
        );
        let cases: Vec<Case> = vec![
            ("none anywhere", json!(null), json!(null), None),
            (
                "a new debugger",
                json!([debugger("debug-1")]),
                json!(null),
                Some(vec!["debug-1"]),
            ),
            (
                "already on the physical pod",
                json!([debugger("debug-1")]),
                json!([debugger("debug-1")]),
                None,
            ),
            (
                "a second one is appended after the first",
                json!([debugger("debug-1"), debugger("debug-2")]),
                json!([debugger("debug-1")]),
                Some(vec!["debug-1", "debug-2"]),
            ),
            (
                "one only the physical pod has is kept (never removable)",
                json!([debugger("debug-2")]),
                json!([debugger("other")]),
                Some(vec!["other", "debug-2"]),
            ),
        ];
        for (what, virtual_list, physical_list, want) in cases {
            let got = ephemeral_containers_update(
                &pod("default", virtual_list),
                &pod("mount", physical_list),
            )
            .unwrap();
            let names = got
                .as_ref()
                .map(|list| list.iter().map(|c| c.name.as_str()).collect::<Vec<_>>());
            assert_eq!(names, want, "{what}");
            if let Some(list) = got {
                let added = list.iter().rfind(|c| c.name.starts_with("debug")).unwrap();
                let from = added.env_from.as_ref().unwrap()[0].config_map_ref.as_ref();
                assert_eq!(
                    from.map(|r| r.name.as_str()),
                    Some(settings.as_str()),
                    "{what}"
                );
                assert_eq!(
                    added.target_container_name.as_deref(),
                    Some("app"),
                    "{what}"
                );
            }
        }
    }
}
