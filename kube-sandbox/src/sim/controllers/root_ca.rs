//! The root CA publisher: every namespace that is not terminating has a `kube-root-ca.crt`
//! ConfigMap holding the cluster CA (`ca.crt`) and the annotation describing what it is for, as
//! kube-controller-manager's `root-ca-cert-publisher` keeps it (kubernetes
//! `pkg/controller/certificates/rootcacertpublisher/publisher.go`, `syncNamespace`): created
//! when missing, and its data and annotation put back when someone changes them.

use super::Pass;
use super::objects::{Writer, at, name_of, str_at};
use crate::apiserver::resources::GroupResource;
use serde_json::{Value, json};

/// The ConfigMap's name (upstream `RootCACertConfigMapName`).
pub const CONFIG_MAP: &str = "kube-root-ca.crt";
/// The annotation describing the ConfigMap (upstream `DescriptionAnnotation`).
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Its value (upstream `Description`).
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// What one namespace's `kube-root-ca.crt` needs.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Present with the CA and the annotation.
    Nothing,
    /// Missing: create it.
    Create,
    /// Present with other data or without the annotation: put them back.
    Repair,
}

/// What the ConfigMap `existing` (if any) needs for the CA `ca_pem` (upstream: the data must be
/// exactly `{ca.crt: <ca>}` and the annotation non-empty).
pub fn decide(existing: Option<&Value>, ca_pem: &str) -> Action {
    let Some(cm) = existing else {
        return Action::Create;
    };
    let data_matches = at(cm, &["data"]) == Some(&json!({"ca.crt": ca_pem}));
    let described = !str_at(cm, &["metadata", "annotations", DESCRIPTION_ANNOTATION]).is_empty();
    if data_matches && described {
        Action::Nothing
    } else {
        Action::Repair
    }
}

/// Creates or repairs the `kube-root-ca.crt` ConfigMap of every live namespace.
pub fn sync_all(pass: &Pass) {
    let Ok(pki) = pass.state.pki() else {
        return;
    };
    let ca_pem = pki.ca_pem();
    let configmaps = GroupResource::new("", "configmaps");
    let writer = Writer {
        state: pass.state,
        manager: "root-ca-cert-publisher",
    };
    for ns in pass.list("", "namespaces") {
        if str_at(&ns, &["status", "phase"]) == "Terminating" {
            continue;
        }
        let namespace = name_of(&ns);
        // One lookup per namespace: the passes triggered by namespace changes (and the periodic
        // one, which repairs a deleted or edited ConfigMap) do not walk every ConfigMap.
        let current = pass
            .state
            .store
            .get(&configmaps, namespace, CONFIG_MAP)
            .map(|stored| stored.value.clone());
        let current = current.as_ref();
        match decide(current, ca_pem) {
            Action::Nothing => {}
            Action::Create => {
                let body = json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": CONFIG_MAP,
                        "namespace": namespace,
                        "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
                    },
                    "data": {"ca.crt": ca_pem},
                });
                // A namespace that began terminating meanwhile refuses it, as upstream ignores.
                let _ = writer.create("", "configmaps", namespace, body);
            }
            Action::Repair => {
                if let Some(cm) = current {
                    let _ = writer.update("", "configmaps", cm, None, |cm| {
                        cm["data"] = json!({"ca.crt": ca_pem});
                        if !cm["metadata"]["annotations"].is_object() {
                            cm["metadata"]["annotations"] = json!({});
                        }
                        cm["metadata"]["annotations"][DESCRIPTION_ANNOTATION] = json!(DESCRIPTION);
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_map_is_created_kept_or_repaired() {
        let ca = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n";
        let good = json!({"metadata": {"annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
            "data": {"ca.crt": ca}});
        let extra_key = json!({"metadata": {"annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
            "data": {"ca.crt": ca, "other": "x"}});
        let undescribed = json!({"metadata": {}, "data": {"ca.crt": ca}});
        let stale = json!({"metadata": {"annotations": {DESCRIPTION_ANNOTATION: "mine"}},
            "data": {"ca.crt": "old"}});
        let cases = [
            (None, Action::Create),
            (Some(&good), Action::Nothing),
            (Some(&extra_key), Action::Repair),
            (Some(&undescribed), Action::Repair),
            (Some(&stale), Action::Repair),
        ];
        for (existing, want) in cases {
            assert_eq!(decide(existing, ca), want, "{existing:?}");
        }
    }
}
