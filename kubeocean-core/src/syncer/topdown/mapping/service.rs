//! Services of the binding's `serviceNamespaces` and their EndpointSlices, reflected into the
//! worker **(ours)**, after Liqo's exposition reflection: mapped pods resolve Service names
//! with the computing cluster's DNS (see [`super::network`]), which answers with the
//! computing cluster's ClusterIP; the reflected Service asks for that same ClusterIP in the
//! worker, so that the worker's service proxy routes it, to endpoints mirrored from the
//! computing cluster's EndpointSlices (pod IPs are assumed routable between the clusters,
//! as upstream assumes for every mapped pod).
//!
//! The reflected Service has no selector (nothing in the worker selects the computing
//! cluster's pods), and its EndpointSlices are labelled as managed by the syncer, so the
//! worker's EndpointSlice controller leaves them alone.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use kube::api::ObjectMeta;

use super::{
    BindingSettings, MapError, VIRTUAL_NAME, VIRTUAL_NAMESPACE, VIRTUAL_UID, namespaced_identity,
};
use crate::labels;
use crate::naming::physical_name;

/// Label of an EndpointSlice: the Service it belongs to.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// Label of an EndpointSlice: who manages it.
pub const SLICE_MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// [`SLICE_MANAGED_BY_LABEL`] of reflected slices: a label value, so no `/` (the worker's
/// API server refuses `kubeocean.io/syncer`, the value of earlier releases, with 422).
/// Nothing selects on it: reflected slices are found by name and by
/// `kubeocean.io/managed-by`, so slices a sandbox once stored with the old value are
/// rewritten with this one like any other difference.
pub const SLICE_MANAGER: &str = "kubeocean.io-syncer";
/// Annotation on reflected EndpointSlices: the virtual Service they belong to.
pub const VIRTUAL_SERVICE: &str = "kubeocean.io/virtual-service";

/// Why a Service is not reflected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotReflected {
    /// `ExternalName` Services are answered by the computing cluster's DNS alone.
    #[error(
        "ExternalName Services are not reflected: the computing cluster's DNS already answers them for mapped pods"
    )]
    ExternalName,
    /// A Service with a cluster IP and no port routes nothing.
    #[error("the Service has no port, so it is not reflected (nothing would be routed)")]
    NoPorts,
    /// The Service has no name.
    #[error(transparent)]
    Map(#[from] MapError),
}

/// Whether a Service is headless (`clusterIP: None`).
pub fn is_headless(service: &Service) -> bool {
    service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None")
}

/// Name of the worker copy of Service `namespace/name` (in the mount namespace).
pub fn service_physical_name(namespace: &str, name: &str) -> String {
    physical_name(namespace, name)
}

/// The worker copy of virtual Service `service`: in the mount namespace, no selector, the
/// same ports, the same ClusterIP asked for (`None` for headless Services), session
/// affinity and `publishNotReadyAddresses` kept.
pub fn physical_service(
    service: &Service,
    binding: &BindingSettings,
) -> Result<Service, NotReflected> {
    let (namespace, name) = namespaced_identity(&service.metadata, "Service")?;
    let spec = service.spec.clone().unwrap_or_default();
    if spec.type_.as_deref() == Some("ExternalName") {
        return Err(NotReflected::ExternalName);
    }
    let headless = is_headless(service);
    let ports: Vec<ServicePort> = spec
        .ports
        .unwrap_or_default()
        .into_iter()
        .map(|p| ServicePort {
            // Node ports belong to the computing cluster's nodes.
            node_port: None,
            ..p
        })
        .collect();
    if ports.is_empty() && !headless {
        return Err(NotReflected::NoPorts);
    }
    let cluster_ip = spec.cluster_ip.filter(|ip| !ip.is_empty());
    Ok(Service {
        metadata: reflected_meta(
            &service.metadata,
            namespace,
            name,
            service_physical_name(namespace, name),
            binding,
        ),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            cluster_ip: cluster_ip.clone(),
            cluster_ips: cluster_ip.map(|ip| vec![ip]),
            ports: (!ports.is_empty()).then_some(ports),
            session_affinity: spec.session_affinity,
            session_affinity_config: spec.session_affinity_config,
            publish_not_ready_addresses: spec.publish_not_ready_addresses,
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// `desired` without the ClusterIP it asked for, for a worker that refused it (taken or out
/// of its Service range): the worker then allocates one.
pub fn without_cluster_ip(mut desired: Service) -> Service {
    if let Some(spec) = desired.spec.as_mut()
        && spec.cluster_ip.as_deref() != Some("None")
    {
        spec.cluster_ip = None;
        spec.cluster_ips = None;
    }
    desired
}

/// The existing worker copy updated to follow `desired`, or `None` when it already does.
/// The ClusterIP is immutable and kept; labels, annotations, ports, session affinity and
/// `publishNotReadyAddresses` follow.
pub fn physical_service_update(desired: &Service, existing: &Service) -> Option<Service> {
    let mut updated = existing.clone();
    updated.metadata.labels = desired.metadata.labels.clone();
    updated.metadata.annotations = desired.metadata.annotations.clone();
    let want = desired.spec.clone().unwrap_or_default();
    let spec = updated.spec.get_or_insert_with(Default::default);
    spec.ports = want.ports;
    spec.selector = None;
    // The API server defaults it to `None`.
    if want.session_affinity.is_some() {
        spec.session_affinity = want.session_affinity;
    }
    spec.session_affinity_config = want.session_affinity_config;
    spec.publish_not_ready_addresses = want.publish_not_ready_addresses;
    (updated != *existing).then_some(updated)
}

/// Whether an existing copy must be replaced rather than updated: a Service that turned
/// headless or stopped being headless (the ClusterIP cannot change in place).
pub fn needs_recreate(desired: &Service, existing: &Service) -> bool {
    is_headless(desired) != is_headless(existing)
}

/// The worker copy of EndpointSlice `slice` of virtual Service `service_name`: its
/// addresses, readiness, hostnames, zones and ports, labelled for the reflected Service.
/// `nodeName` and `targetRef` name objects of the computing cluster and are dropped.
pub fn physical_endpoint_slice(
    slice: &EndpointSlice,
    service_name: &str,
    binding: &BindingSettings,
) -> Result<EndpointSlice, MapError> {
    let (namespace, name) = namespaced_identity(&slice.metadata, "EndpointSlice")?;
    let mut meta = reflected_meta(
        &slice.metadata,
        namespace,
        name,
        physical_name(namespace, name),
        binding,
    );
    let service_physical = service_physical_name(namespace, service_name);
    let slice_labels = meta.labels.get_or_insert_with(BTreeMap::new);
    slice_labels.insert(SERVICE_NAME_LABEL.to_owned(), service_physical);
    slice_labels.insert(SLICE_MANAGED_BY_LABEL.to_owned(), SLICE_MANAGER.to_owned());
    meta.annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(VIRTUAL_SERVICE.to_owned(), service_name.to_owned());
    Ok(EndpointSlice {
        metadata: meta,
        address_type: slice.address_type.clone(),
        endpoints: slice
            .endpoints
            .iter()
            .map(|e| Endpoint {
                addresses: e.addresses.clone(),
                conditions: e.conditions.clone(),
                hostname: e.hostname.clone(),
                zone: e.zone.clone(),
                hints: e.hints.clone(),
                deprecated_topology: None,
                node_name: None,
                target_ref: None,
            })
            .collect(),
        ports: slice.ports.clone(),
    })
}

/// Whether an existing worker slice differs from `desired` in what is reflected.
pub fn slice_differs(desired: &EndpointSlice, existing: &EndpointSlice) -> bool {
    desired.endpoints != existing.endpoints
        || desired.ports != existing.ports
        || desired.address_type != existing.address_type
        || desired.metadata.labels != existing.metadata.labels
}

/// The virtual Service (`namespace`, `name`) a worker Service or EndpointSlice reflects.
pub fn reflected_service_of(physical: &ObjectMeta) -> Option<(String, String)> {
    let annotations = physical.annotations.as_ref()?;
    let namespace = annotations.get(VIRTUAL_NAMESPACE)?.clone();
    let name = annotations
        .get(VIRTUAL_SERVICE)
        .or_else(|| annotations.get(VIRTUAL_NAME))?
        .clone();
    Some((namespace, name))
}

/// The Service an EndpointSlice of the computing cluster belongs to.
pub fn slice_service(slice: &EndpointSlice) -> Option<&str> {
    slice
        .metadata
        .labels
        .as_ref()?
        .get(SERVICE_NAME_LABEL)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

fn reflected_meta(
    virtual_meta: &ObjectMeta,
    namespace: &str,
    name: &str,
    physical: String,
    binding: &BindingSettings,
) -> ObjectMeta {
    let mut object_labels: BTreeMap<String, String> = BTreeMap::new();
    object_labels.insert(
        labels::MANAGED_BY.to_owned(),
        labels::MANAGED_BY_VALUE.to_owned(),
    );
    object_labels.insert(labels::CLUSTER_BINDING.to_owned(), binding.name.clone());
    let mut annotations = BTreeMap::new();
    annotations.insert(VIRTUAL_NAMESPACE.to_owned(), namespace.to_owned());
    annotations.insert(VIRTUAL_NAME.to_owned(), name.to_owned());
    if let Some(uid) = &virtual_meta.uid {
        annotations.insert(VIRTUAL_UID.to_owned(), uid.clone());
    }
    ObjectMeta {
        name: Some(physical),
        namespace: Some(binding.mount_namespace.clone()),
        labels: Some(object_labels),
        annotations: Some(annotations),
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::discovery::v1::{EndpointConditions, EndpointPort};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::super::test_support::settings;
    use super::*;

    fn service(type_: Option<&str>, cluster_ip: Option<&str>, ports: &[i32]) -> Service {
        Service {
            metadata: ObjectMeta {
                namespace: Some("shop".into()),
                name: Some("db".into()),
                uid: Some("u1".into()),
                ..ObjectMeta::default()
            },
            spec: Some(ServiceSpec {
                type_: type_.map(str::to_owned),
                cluster_ip: cluster_ip.map(str::to_owned),
                selector: Some([("app".to_owned(), "db".to_owned())].into()),
                ports: Some(
                    ports
                        .iter()
                        .map(|p| ServicePort {
                            port: *p,
                            node_port: Some(30000),
                            target_port: Some(IntOrString::Int(8080)),
                            ..ServicePort::default()
                        })
                        .collect(),
                ),
                external_name: type_
                    .filter(|t| *t == "ExternalName")
                    .map(|_| "db.example".into()),
                ..ServiceSpec::default()
            }),
            status: None,
        }
    }

    #[test]
    fn which_services_are_reflected_and_how() {
        let b = settings();
        let cases = [
            (
                "ClusterIP keeps its address",
                service(None, Some("10.96.0.7"), &[5432]),
                Ok(Some("10.96.0.7")),
            ),
            (
                "LoadBalancer becomes ClusterIP",
                service(Some("LoadBalancer"), Some("10.96.0.8"), &[80]),
                Ok(Some("10.96.0.8")),
            ),
            (
                "headless stays headless",
                service(None, Some("None"), &[5432]),
                Ok(Some("None")),
            ),
            (
                "headless without ports is fine",
                service(None, Some("None"), &[]),
                Ok(Some("None")),
            ),
            (
                "no ports",
                service(None, Some("10.96.0.7"), &[]),
                Err(NotReflected::NoPorts),
            ),
            (
                "ExternalName",
                service(Some("ExternalName"), None, &[]),
                Err(NotReflected::ExternalName),
            ),
        ];
        for (case, svc, want) in cases {
            let got = physical_service(&svc, &b);
            match (got, want) {
                (Ok(p), Ok(ip)) => {
                    let spec = p.spec.unwrap();
                    assert_eq!(spec.cluster_ip.as_deref(), ip, "{case}");
                    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"), "{case}");
                    assert_eq!(spec.selector, None, "{case}: no selector in the worker");
                    assert!(
                        spec.ports.iter().flatten().all(|p| p.node_port.is_none()),
                        "{case}"
                    );
                    assert_eq!(
                        p.metadata.name.as_deref(),
                        Some(physical_name("shop", "db").as_str())
                    );
                    assert_eq!(
                        p.metadata.namespace.as_deref(),
                        Some(b.mount_namespace.as_str())
                    );
                    assert_eq!(
                        reflected_service_of(&p.metadata),
                        Some(("shop".into(), "db".into()))
                    );
                }
                (Err(e), Err(w)) => assert_eq!(e, w, "{case}"),
                (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn refused_cluster_ip_is_left_to_the_worker() {
        let b = settings();
        let p = physical_service(&service(None, Some("10.96.0.7"), &[80]), &b).unwrap();
        assert_eq!(without_cluster_ip(p).spec.unwrap().cluster_ip, None);
        let h = physical_service(&service(None, Some("None"), &[80]), &b).unwrap();
        assert_eq!(
            without_cluster_ip(h).spec.unwrap().cluster_ip.as_deref(),
            Some("None")
        );
    }

    #[test]
    fn updates_keep_the_cluster_ip() {
        let b = settings();
        let desired = physical_service(&service(None, Some("10.96.0.7"), &[80, 81]), &b).unwrap();
        let mut existing = physical_service(&service(None, Some("10.96.0.7"), &[80]), &b).unwrap();
        existing.spec.as_mut().unwrap().cluster_ip = Some("10.100.0.3".into());
        let updated = physical_service_update(&desired, &existing).unwrap();
        let spec = updated.spec.unwrap();
        assert_eq!(spec.cluster_ip.as_deref(), Some("10.100.0.3"));
        assert_eq!(spec.ports.unwrap().len(), 2);
        let same = physical_service_update(&desired, &desired);
        assert!(same.is_none());
        let headless = physical_service(&service(None, Some("None"), &[80]), &b).unwrap();
        assert!(needs_recreate(&headless, &desired));
        assert!(!needs_recreate(&desired, &existing));
    }

    #[test]
    fn slices_mirror_addresses_for_the_reflected_service() {
        let b = settings();
        let slice = EndpointSlice {
            metadata: ObjectMeta {
                namespace: Some("shop".into()),
                name: Some("db-abc".into()),
                labels: Some([(SERVICE_NAME_LABEL.to_owned(), "db".to_owned())].into()),
                ..ObjectMeta::default()
            },
            address_type: "IPv4".into(),
            endpoints: vec![Endpoint {
                addresses: vec!["10.244.1.5".into()],
                conditions: Some(EndpointConditions {
                    ready: Some(true),
                    ..EndpointConditions::default()
                }),
                node_name: Some("vnode-w1-n1".into()),
                target_ref: Some(ObjectReference {
                    kind: Some("Pod".into()),
                    name: Some("db-0".into()),
                    ..ObjectReference::default()
                }),
                hostname: Some("db-0".into()),
                ..Endpoint::default()
            }],
            ports: Some(vec![EndpointPort {
                port: Some(5432),
                ..EndpointPort::default()
            }]),
        };
        assert_eq!(slice_service(&slice), Some("db"));
        let p = physical_endpoint_slice(&slice, "db", &b).unwrap();
        let l = p.metadata.labels.as_ref().unwrap();
        assert_eq!(l[SERVICE_NAME_LABEL], physical_name("shop", "db"));
        assert_eq!(l[SLICE_MANAGED_BY_LABEL], SLICE_MANAGER);
        assert_eq!(l[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
        assert_eq!(
            p.metadata.name.as_deref(),
            Some(physical_name("shop", "db-abc").as_str())
        );
        assert_eq!(p.endpoints[0].addresses, ["10.244.1.5"]);
        assert_eq!(p.endpoints[0].hostname.as_deref(), Some("db-0"));
        assert!(p.endpoints[0].node_name.is_none() && p.endpoints[0].target_ref.is_none());
        assert_eq!(
            reflected_service_of(&p.metadata),
            Some(("shop".into(), "db".into()))
        );
        assert!(!slice_differs(&p, &p));
        let mut fewer = p.clone();
        fewer.endpoints.clear();
        assert!(slice_differs(&p, &fewer));
    }
}
