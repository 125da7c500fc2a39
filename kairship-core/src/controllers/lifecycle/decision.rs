//! Pure decisions of the instance lifecycle: the operator `Karmada` object a Provision-mode
//! instance asks for, and whether a delete may proceed. (Where an instance's admin kubeconfig
//! is found is [`crate::controllers::connection::kubeconfig`].)

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::instance::{
    DeletionPolicy, INSTANCE_LABEL, Instance, InstanceMode, KarmadaComponent, MANAGED_BY_LABEL,
    MANAGED_BY_VALUE, ProvisionSpec,
};
use crate::models::operator::{
    ComponentSpec, EtcdSpec, Karmada, KarmadaComponents, KarmadaSpec, PrivateRegistry,
};
use crate::naming::operator_karmada_name;

/// The operator `Karmada` object that installs a Provision-mode instance, in the provision
/// spec's host namespace.
///
/// Karmada's own components get the Karmada version as image tag; etcd, the kube-apiserver
/// and kube-controller-manager keep the operator's defaults unless `imageTags` overrides
/// them. Optional components are present only when listed.
pub fn operator_karmada(instance_name: &str, provision: &ProvisionSpec) -> Karmada {
    let component = |c: KarmadaComponent| -> Option<ComponentSpec> {
        if c.is_optional() && !provision.components.contains(&c) {
            return None;
        }
        let tag = provision
            .image_tags
            .get(c.field_name())
            .cloned()
            .or_else(|| {
                c.is_karmada_image()
                    .then(|| provision.karmada_version.clone())
            });
        Some(ComponentSpec {
            image_tag: tag,
            ..ComponentSpec::default()
        })
    };
    let components = KarmadaComponents {
        etcd: EtcdSpec {
            local: component(KarmadaComponent::Etcd),
            ..EtcdSpec::default()
        },
        karmada_api_server: component(KarmadaComponent::KarmadaApiServer),
        karmada_aggregated_api_server: component(KarmadaComponent::KarmadaAggregatedApiServer),
        kube_controller_manager: component(KarmadaComponent::KubeControllerManager),
        karmada_controller_manager: component(KarmadaComponent::KarmadaControllerManager),
        karmada_scheduler: component(KarmadaComponent::KarmadaScheduler),
        karmada_webhook: component(KarmadaComponent::KarmadaWebhook),
        karmada_descheduler: component(KarmadaComponent::KarmadaDescheduler),
        karmada_search: component(KarmadaComponent::KarmadaSearch),
        karmada_metrics_adapter: component(KarmadaComponent::KarmadaMetricsAdapter),
        extra: BTreeMap::new(),
    };
    Karmada {
        metadata: ObjectMeta {
            name: Some(operator_karmada_name(instance_name)),
            namespace: Some(provision.host_namespace.clone()),
            labels: Some(BTreeMap::from([
                (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
                (INSTANCE_LABEL.to_owned(), instance_name.to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        spec: KarmadaSpec {
            components: Some(components),
            private_registry: provision
                .image_registry
                .as_ref()
                .map(|registry| PrivateRegistry {
                    registry: registry.clone(),
                    extra: BTreeMap::new(),
                }),
            feature_gates: provision.feature_gates.clone(),
            suspend: None,
            extra: BTreeMap::new(),
        },
        status: None,
    }
}

/// What to do with an Instance that carries a deletion timestamp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeletionDecision {
    /// Keep the finalizer and report why on the `DeletionBlocked` condition.
    Blocked {
        /// Reason for the condition.
        reason: &'static str,
        /// Human-readable message for the condition.
        message: String,
    },
    /// Clean up and remove the finalizer.
    Proceed {
        /// Whether to delete the operator's `Karmada` object (Provision + Delete policy).
        release_karmada: bool,
        /// Whether member clusters were present and the force annotation overrode the check.
        forced: bool,
    },
}

/// Decides whether an instance being deleted may go: not while it has member clusters,
/// unless the force-delete annotation is set; the Karmada install is released only for
/// Provision-mode instances with `deletionPolicy: Delete`.
///
/// `member_clusters` is `None` when the count is unknown (control plane unreachable); that
/// also blocks, since an unreachable instance may well have members.
pub fn deletion_decision(instance: &Instance, member_clusters: Option<usize>) -> DeletionDecision {
    use crate::instance::{FORCE_DELETE_ANNOTATION, reason};
    let forced = instance.force_delete_requested();
    let release_karmada = instance.spec.mode == InstanceMode::Provision
        && instance.spec.deletion_policy == DeletionPolicy::Delete;
    match member_clusters {
        Some(0) => DeletionDecision::Proceed {
            release_karmada,
            forced: false,
        },
        _ if forced => DeletionDecision::Proceed {
            release_karmada,
            forced: true,
        },
        Some(n) => DeletionDecision::Blocked {
            reason: reason::MEMBER_CLUSTERS_PRESENT,
            message: format!(
                "instance still has {n} member cluster(s); remove them first, or set the annotation {FORCE_DELETE_ANNOTATION}=\"true\" to delete anyway"
            ),
        },
        None => DeletionDecision::Blocked {
            reason: reason::CONTROL_PLANE_UNREACHABLE,
            message: format!(
                "cannot count the instance's member clusters because its control plane is unreachable; set the annotation {FORCE_DELETE_ANNOTATION}=\"true\" to delete anyway"
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::{InstanceSpec, SecretKeyReference, reason};

    fn provision() -> ProvisionSpec {
        ProvisionSpec {
            karmada_version: "v1.14.0".into(),
            host_namespace: "karmada-prod".into(),
            image_registry: Some("registry.example.com".into()),
            image_tags: BTreeMap::from([
                ("etcd".into(), "3.5.16-0".into()),
                ("karmadaScheduler".into(), "v1.14.1".into()),
            ]),
            components: vec![KarmadaComponent::KarmadaSearch],
            feature_gates: BTreeMap::from([("Failover".into(), true)]),
        }
    }

    #[test]
    fn operator_object_from_provision_spec() {
        let k = operator_karmada("prod", &provision());
        assert_eq!(k.metadata.name.as_deref(), Some("prod"));
        assert_eq!(k.metadata.namespace.as_deref(), Some("karmada-prod"));
        assert_eq!(k.metadata.labels.as_ref().unwrap()[INSTANCE_LABEL], "prod");
        let c = k.spec.components.as_ref().unwrap();
        let tag = |s: &Option<ComponentSpec>| s.as_ref().and_then(|s| s.image_tag.clone());
        assert_eq!(tag(&c.etcd.local).as_deref(), Some("3.5.16-0"), "override");
        assert_eq!(
            tag(&c.karmada_api_server),
            None,
            "kube image keeps the operator default"
        );
        assert_eq!(
            tag(&c.karmada_controller_manager).as_deref(),
            Some("v1.14.0")
        );
        assert_eq!(
            tag(&c.karmada_scheduler).as_deref(),
            Some("v1.14.1"),
            "override wins"
        );
        assert_eq!(
            tag(&c.karmada_search).as_deref(),
            Some("v1.14.0"),
            "listed optional component"
        );
        assert!(c.karmada_descheduler.is_none() && c.karmada_metrics_adapter.is_none());
        assert_eq!(
            k.spec.private_registry.as_ref().unwrap().registry,
            "registry.example.com"
        );
        assert!(k.spec.feature_gates["Failover"]);
        // On the wire: the operator's field names, etcd present (the CRD requires it).
        let json = serde_json::to_value(&k).unwrap();
        assert_eq!(json["apiVersion"], "operator.karmada.io/v1alpha1");
        assert_eq!(
            json["spec"]["components"]["karmadaAPIServer"],
            serde_json::json!({})
        );
        assert_eq!(
            json["spec"]["components"]["etcd"]["local"]["imageTag"],
            "3.5.16-0"
        );
        assert_eq!(
            json["spec"]["privateRegistry"]["registry"],
            "registry.example.com"
        );
    }

    fn instance(mode: InstanceMode, policy: DeletionPolicy, force: bool) -> Instance {
        let mut i = Instance::new(
            "prod",
            InstanceSpec {
                mode,
                kubeconfig_secret_ref: (mode == InstanceMode::Adopt).then(|| SecretKeyReference {
                    namespace: "ns".into(),
                    name: "kc".into(),
                    key: Some("kubeconfig".into()),
                }),
                provision: (mode == InstanceMode::Provision).then(provision),
                alias: None,
                deletion_policy: policy,
            },
        );
        if force {
            i.metadata.annotations = Some(BTreeMap::from([(
                crate::instance::FORCE_DELETE_ANNOTATION.to_owned(),
                "true".to_owned(),
            )]));
        }
        i
    }

    #[test]
    fn deletion_decisions() {
        use DeletionPolicy::*;
        use InstanceMode::*;
        let proceed = |release, forced| DeletionDecision::Proceed {
            release_karmada: release,
            forced,
        };
        let cases = [
            (Adopt, Delete, false, Some(0), Some(proceed(false, false))),
            (
                Provision,
                Delete,
                false,
                Some(0),
                Some(proceed(true, false)),
            ),
            (
                Provision,
                Retain,
                false,
                Some(0),
                Some(proceed(false, false)),
            ),
            (Provision, Delete, true, Some(2), Some(proceed(true, true))),
            (Adopt, Delete, true, None, Some(proceed(false, true))),
            (Adopt, Delete, false, Some(2), None),
            (Provision, Delete, false, None, None),
        ];
        for (mode, policy, force, members, want) in cases {
            let got = deletion_decision(&instance(mode, policy, force), members);
            match want {
                Some(want) => assert_eq!(
                    got, want,
                    "{mode:?} {policy:?} force={force} members={members:?}"
                ),
                None => {
                    let DeletionDecision::Blocked {
                        reason: why,
                        message,
                    } = got
                    else {
                        panic!("{mode:?} {policy:?} members={members:?} should be blocked");
                    };
                    assert!(
                        message.contains(crate::instance::FORCE_DELETE_ANNOTATION),
                        "{message}"
                    );
                    let expected = if members.is_some() {
                        reason::MEMBER_CLUSTERS_PRESENT
                    } else {
                        reason::CONTROL_PLANE_UNREACHABLE
                    };
                    assert_eq!(why, expected);
                }
            }
        }
    }
}
