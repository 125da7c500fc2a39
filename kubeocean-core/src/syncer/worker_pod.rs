//! Worker pods as the bottom-up pod watch decodes them.
//!
//! A large worker lists hundreds of thousands of pods, and decoding each one whole (every
//! env var, volume, toleration, condition and container status) was most of the syncer's
//! CPU time and allocations. [`WirePod`] reads a pod's JSON into only what the index keeps
//! (its metadata, the spec fields the leasing math and host ports read, the phase), except
//! for Kubeocean's own pods, which the top-down half keeps whole and which are decoded whole.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Pod, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_kit::slim::JsonStr;
use serde::Deserialize;
use serde::de::{Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::index::CachedPod;
use crate::labels;

/// A worker pod as the watch hands it on: what the worker index keeps of it, and the whole
/// object only when the top-down half keeps it too (Kubeocean's own pods). A re-list of a
/// large worker then holds these, not every Pod object.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerPod {
    /// Its uid and what the index keeps; `None` for a pod without a uid.
    pub indexed: Option<(String, CachedPod)>,
    /// The object, when `keep_whole` said so (boxed: a Pod is large even when absent, and a
    /// re-list holds one of these per pod).
    pub object: Option<Box<Pod>>,
}

impl WorkerPod {
    /// What is kept of `pod`: the whole object too when `keep_whole` accepts it.
    pub fn new(pod: Pod, keep_whole: impl FnOnce(&Pod) -> bool) -> WorkerPod {
        WorkerPod {
            indexed: CachedPod::of(&pod),
            object: keep_whole(&pod).then(|| Box::new(pod)),
        }
    }
}

/// A pod read from the worker's API: the metadata the watch itself needs (name, namespace,
/// uid, resourceVersion), what the index keeps, and the whole object for Kubeocean's own pods
/// (label `kubeocean.io/managed-by=kubeocean`). Use it as the object type of the pod watch
/// (`Api<WirePod>`); `managedFields` are never decoded.
///
/// It decodes only from `serde_json` (it keeps parts of the JSON aside while it reads).
#[derive(Clone, Debug, PartialEq)]
pub struct WirePod {
    meta: ObjectMeta,
    entry: Option<(String, CachedPod)>,
    whole: Option<Box<Pod>>,
}

impl WirePod {
    /// What the pod watch hands on: the whole object only if it is one of ours and
    /// `keep_whole` accepts it.
    pub fn into_worker_pod(self, keep_whole: impl FnOnce(&Pod) -> bool) -> WorkerPod {
        WorkerPod {
            indexed: self.entry,
            object: self.whole.filter(|pod| keep_whole(pod)),
        }
    }

    /// Decodes one pod from its JSON (see the type's documentation).
    pub fn from_json(json: &str) -> Result<WirePod, serde_json::Error> {
        serde_json::from_str(json)
    }
}

impl kube::Resource for WirePod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        <Pod as kube::Resource>::kind(&())
    }

    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        <Pod as kube::Resource>::group(&())
    }

    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        <Pod as kube::Resource>::version(&())
    }

    fn api_version(_: &()) -> std::borrow::Cow<'_, str> {
        <Pod as kube::Resource>::api_version(&())
    }

    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        <Pod as kube::Resource>::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

/// The metadata fields read of every pod.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaFacts {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    labels: ManagedLabel,
}

impl MetaFacts {
    fn into_object_meta(self) -> ObjectMeta {
        ObjectMeta {
            name: self.name,
            namespace: self.namespace,
            uid: self.uid,
            resource_version: self.resource_version,
            ..ObjectMeta::default()
        }
    }
}

/// Whether a label map holds `kubeocean.io/managed-by=kubeocean`, read without building
/// the map.
#[derive(Default)]
struct ManagedLabel(bool);

impl<'de> Deserialize<'de> for ManagedLabel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ManagedLabel, D::Error> {
        deserializer.deserialize_any(ManagedLabelVisitor)
    }
}

struct ManagedLabelVisitor;

impl<'de> Visitor<'de> for ManagedLabelVisitor {
    type Value = ManagedLabel;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a map of labels")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<ManagedLabel, E> {
        Ok(ManagedLabel(false))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<ManagedLabel, E> {
        Ok(ManagedLabel(false))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ManagedLabel, A::Error> {
        let mut managed = false;
        while let Some(key) = map.next_key::<JsonStr<'de>>()? {
            if key.0 == labels::MANAGED_BY {
                managed = map.next_value::<JsonStr<'de>>()?.0 == labels::MANAGED_BY_VALUE;
            } else {
                map.next_value::<JsonStr<'de>>()?;
            }
        }
        Ok(ManagedLabel(managed))
    }
}

/// The spec fields the index reads ([`CachedPod::of`]: node, requests, host ports).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecFacts {
    #[serde(default)]
    node_name: Option<String>,
    #[serde(default)]
    containers: Option<Vec<ContainerFacts>>,
    #[serde(default)]
    init_containers: Option<Vec<ContainerFacts>>,
    #[serde(default)]
    overhead: Option<BTreeMap<String, Quantity>>,
    #[serde(default)]
    resources: Option<ResourceRequirements>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerFacts {
    #[serde(default)]
    name: String,
    #[serde(default)]
    resources: Option<ResourceRequirements>,
    #[serde(default)]
    ports: Option<Vec<ContainerPort>>,
    #[serde(default)]
    restart_policy: Option<String>,
}

impl From<ContainerFacts> for Container {
    fn from(c: ContainerFacts) -> Container {
        Container {
            name: c.name,
            resources: c.resources,
            ports: c.ports,
            restart_policy: c.restart_policy,
            ..Container::default()
        }
    }
}

impl From<SpecFacts> for PodSpec {
    fn from(s: SpecFacts) -> PodSpec {
        PodSpec {
            node_name: s.node_name,
            containers: s
                .containers
                .unwrap_or_default()
                .into_iter()
                .map(Container::from)
                .collect(),
            init_containers: s
                .init_containers
                .map(|c| c.into_iter().map(Container::from).collect()),
            overhead: s.overhead,
            resources: s.resources,
            ..PodSpec::default()
        }
    }
}

#[derive(Deserialize)]
struct StatusFacts {
    #[serde(default)]
    phase: Option<String>,
}

/// A part of the pod read before its metadata said how much of it to decode.
enum Part<Full, Facts> {
    Absent,
    Raw(Box<RawValue>),
    Full(Full),
    Facts(Facts),
}

impl<Full: serde::de::DeserializeOwned, Facts: serde::de::DeserializeOwned> Part<Full, Facts> {
    /// Reads the value under the current key: whole for our pods, cut down for the others,
    /// kept as JSON while the metadata is not known yet.
    fn read<'de, A: MapAccess<'de>>(map: &mut A, managed: Option<bool>) -> Result<Self, A::Error> {
        // `null` is as good as absent.
        Ok(match managed {
            Some(true) => map
                .next_value::<Option<Full>>()?
                .map_or(Part::Absent, Part::Full),
            Some(false) => map
                .next_value::<Option<Facts>>()?
                .map_or(Part::Absent, Part::Facts),
            None => Part::Raw(map.next_value()?),
        })
    }

    /// Decodes a part kept as JSON, now that the metadata is known.
    fn settle(self, managed: bool) -> Result<Self, serde_json::Error> {
        Ok(match self {
            Part::Raw(raw) if managed => {
                serde_json::from_str::<Option<Full>>(raw.get())?.map_or(Part::Absent, Part::Full)
            }
            Part::Raw(raw) => {
                serde_json::from_str::<Option<Facts>>(raw.get())?.map_or(Part::Absent, Part::Facts)
            }
            settled => settled,
        })
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum PodField {
    Metadata,
    Spec,
    Status,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for WirePod {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<WirePod, D::Error> {
        deserializer.deserialize_map(WirePodVisitor)
    }
}

struct WirePodVisitor;

impl<'de> Visitor<'de> for WirePodVisitor {
    type Value = WirePod;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a Pod object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WirePod, A::Error> {
        // Kept as JSON too: the whole metadata is decoded only for our pods.
        let mut metadata: Option<(Box<RawValue>, ObjectMeta)> = None;
        let mut managed: Option<bool> = None;
        let mut spec: Part<PodSpec, SpecFacts> = Part::Absent;
        let mut status: Part<PodStatus, StatusFacts> = Part::Absent;
        while let Some(field) = map.next_key::<PodField>()? {
            match field {
                PodField::Metadata => {
                    let raw: Box<RawValue> = map.next_value()?;
                    let facts: MetaFacts =
                        serde_json::from_str(raw.get()).map_err(A::Error::custom)?;
                    managed = Some(facts.labels.0);
                    metadata = Some((raw, facts.into_object_meta()));
                }
                PodField::Spec => spec = Part::read(&mut map, managed)?,
                PodField::Status => status = Part::read(&mut map, managed)?,
                PodField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        assemble(metadata, managed.unwrap_or(false), spec, status).map_err(A::Error::custom)
    }
}

/// The pod from its parts: the whole object for our pods, otherwise a pod holding only the
/// fields [`CachedPod::of`] reads, from which the index entry is taken.
fn assemble(
    metadata: Option<(Box<RawValue>, ObjectMeta)>,
    managed: bool,
    spec: Part<PodSpec, SpecFacts>,
    status: Part<PodStatus, StatusFacts>,
) -> Result<WirePod, serde_json::Error> {
    let (raw_metadata, meta) = match metadata {
        Some((raw, meta)) => (Some(raw), meta),
        None => (None, ObjectMeta::default()),
    };
    let spec = match spec.settle(managed)? {
        Part::Full(spec) => Some(spec),
        Part::Facts(facts) => Some(PodSpec::from(facts)),
        Part::Absent | Part::Raw(_) => None,
    };
    let status = match status.settle(managed)? {
        Part::Full(status) => Some(status),
        Part::Facts(facts) => Some(PodStatus {
            phase: facts.phase,
            ..PodStatus::default()
        }),
        Part::Absent | Part::Raw(_) => None,
    };
    if managed {
        let raw = raw_metadata.as_deref().map_or("{}", RawValue::get);
        let mut full: ObjectMeta = serde_json::from_str(raw)?;
        full.managed_fields = None;
        let pod = Pod {
            metadata: full,
            spec,
            status,
        };
        return Ok(WirePod {
            meta,
            entry: CachedPod::of(&pod),
            whole: Some(Box::new(pod)),
        });
    }
    let pod = Pod {
        metadata: meta,
        spec,
        status,
    };
    let entry = CachedPod::of(&pod);
    Ok(WirePod {
        meta: pod.metadata,
        entry,
        whole: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A pod as a real API server returns it: defaults, volumes, tolerations, status and
    /// managedFields around the fields the index reads.
    fn rich_pod(labels: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "web-0", "namespace": "team-a", "uid": "u-1", "resourceVersion": "42",
                "generateName": "web-", "labels": labels,
                "annotations": {"a": "b"}, "finalizers": ["x/y"],
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "o-1"}],
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:containers": {}}}}],
            },
            "spec": {
                "nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                "overhead": {"cpu": "50m"},
                "initContainers": [
                    {"name": "init", "image": "i", "resources": {"requests": {"cpu": "2"}}},
                    {"name": "sidecar", "image": "s", "restartPolicy": "Always",
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}}},
                ],
                "containers": [
                    {"name": "app", "image": "a", "env": [{"name": "A", "value": "1"}],
                     "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"},
                               {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}],
                     "resources": {"requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}},
                     "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
                ],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "tolerations": [{"key": "k", "operator": "Exists"}],
            },
            "status": {
                "phase": "Running", "podIP": "10.1.0.1", "hostIP": "10.0.0.1",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "image": "a", "imageID": "", "state": {"running": {}}}],
            },
        })
    }

    fn whole(value: &serde_json::Value) -> Pod {
        let mut pod: Pod = serde_json::from_value(value.clone()).unwrap();
        pod.metadata.managed_fields = None;
        pod
    }

    #[test]
    fn index_entry_is_the_one_of_the_whole_pod_and_only_our_pods_are_kept_whole() {
        let theirs = rich_pod(json!({"app": "web"}));
        let ours = rich_pod(json!({"app": "web", "kubeocean.io/managed-by": "kubeocean"}));
        let mut spec_first = serde_json::Map::new();
        for key in ["status", "spec", "kind", "metadata"] {
            spec_first.insert(key.to_owned(), theirs[key].clone());
        }
        let mut ours_spec_first = serde_json::Map::new();
        for key in ["spec", "status", "metadata"] {
            ours_spec_first.insert(key.to_owned(), ours[key].clone());
        }
        let finished = {
            let mut p = theirs.clone();
            p["status"]["phase"] = json!("Succeeded");
            p
        };
        let unscheduled = {
            let mut p = theirs.clone();
            p["spec"].as_object_mut().unwrap().remove("nodeName");
            p["status"] = json!(null);
            p
        };
        // (case, JSON, whole object expected)
        let cases: Vec<(&str, serde_json::Value, bool)> = vec![
            ("another's pod", theirs.clone(), false),
            ("our pod", ours.clone(), true),
            (
                "metadata last",
                serde_json::Value::Object(spec_first),
                false,
            ),
            (
                "ours, metadata last",
                serde_json::Value::Object(ours_spec_first),
                true,
            ),
            ("finished", finished, false),
            ("unscheduled, null status", unscheduled, false),
        ];
        for (case, value, kept) in cases {
            let wire = WirePod::from_json(&value.to_string()).unwrap();
            let pod = whole(&value);
            assert_eq!(wire.entry, CachedPod::of(&pod), "{case}");
            assert_eq!(kube::ResourceExt::name_any(&wire), "web-0", "{case}");
            assert_eq!(wire.meta.resource_version.as_deref(), Some("42"), "{case}");
            let worker = wire.into_worker_pod(|_| true);
            assert_eq!(worker.object.as_deref(), kept.then_some(&pod), "{case}");
        }
        let refused = WirePod::from_json(&ours.to_string())
            .unwrap()
            .into_worker_pod(|_| false);
        assert!(refused.object.is_none());
    }

    #[test]
    fn bad_pods_are_errors() {
        for (case, json) in [
            ("not an object", "[]"),
            (
                "containers not a list",
                r#"{"metadata":{"uid":"u"},"spec":{"containers":7}}"#,
            ),
            ("bad metadata", r#"{"metadata":{"labels":3}}"#),
            ("truncated", r#"{"metadata":{"uid":"u""#),
        ] {
            assert!(WirePod::from_json(json).is_err(), "{case}");
        }
        let empty = WirePod::from_json("{}").unwrap();
        assert_eq!(empty.entry, None);
    }
}
