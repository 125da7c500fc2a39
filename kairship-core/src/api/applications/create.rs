//! Multicloud applications: the request of `CreateApplication` (a workload, optionally its
//! Service, where Karmada places it and what it changes per cluster) and the plain functions
//! that check it and turn it into the Kubernetes and Karmada objects the call creates, in the
//! order it creates them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::types::{ApplicationService, ApplicationSpec, ClusterOverride, Placement};
use crate::api::body::{MAX_NAME_LEN, check_name};
use crate::api::error::ApiError;
use crate::api::kinds::POLICY_GROUP;

/// Label put on every object an application call creates, holding the application's name.
pub const APPLICATION_LABEL: &str = "kairship.io/application";

/// The workload kinds an application can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` DaemonSet.
    DaemonSet,
    /// `batch/v1` Job.
    Job,
    /// `batch/v1` CronJob.
    CronJob,
}

impl WorkloadKind {
    const ALL: [WorkloadKind; 5] = [
        WorkloadKind::Deployment,
        WorkloadKind::StatefulSet,
        WorkloadKind::DaemonSet,
        WorkloadKind::Job,
        WorkloadKind::CronJob,
    ];

    /// The kind spelled `kind` (`Deployment`).
    pub fn parse(kind: &str) -> Option<WorkloadKind> {
        Self::ALL.into_iter().find(|k| k.kind() == kind)
    }

    /// `kind` of the object.
    pub fn kind(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::Job => "Job",
            WorkloadKind::CronJob => "CronJob",
        }
    }

    /// `(group, version, plural)`.
    pub fn gvr(self) -> (&'static str, &'static str, &'static str) {
        match self {
            WorkloadKind::Deployment => ("apps", "v1", "deployments"),
            WorkloadKind::StatefulSet => ("apps", "v1", "statefulsets"),
            WorkloadKind::DaemonSet => ("apps", "v1", "daemonsets"),
            WorkloadKind::Job => ("batch", "v1", "jobs"),
            WorkloadKind::CronJob => ("batch", "v1", "cronjobs"),
        }
    }

    /// `apiVersion` of the object.
    pub fn api_version(self) -> &'static str {
        match self {
            WorkloadKind::Job | WorkloadKind::CronJob => "batch/v1",
            _ => "apps/v1",
        }
    }

    /// JSON pointer of the pod template.
    pub fn template_path(self) -> &'static str {
        match self {
            WorkloadKind::CronJob => "/spec/jobTemplate/spec/template",
            _ => "/spec/template",
        }
    }

    /// Whether it has `spec.replicas` (overridable per cluster).
    pub fn has_replicas(self) -> bool {
        matches!(self, WorkloadKind::Deployment | WorkloadKind::StatefulSet)
    }

    /// Whether Karmada can divide it between clusters (replicas, or a Job's parallelism).
    pub fn divisible(self) -> bool {
        matches!(
            self,
            WorkloadKind::Deployment | WorkloadKind::StatefulSet | WorkloadKind::Job
        )
    }
}

/// What one object of an application is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The namespace, when the instance does not hold it yet.
    Namespace,
    /// The workload.
    Workload(WorkloadKind),
    /// Its Service.
    Service,
    /// Its PropagationPolicy.
    PropagationPolicy,
    /// The OverridePolicy of one cluster.
    OverridePolicy,
}

impl Part {
    /// `(group, version, plural)` of the object, `core` for the core group.
    pub fn gvr(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Part::Namespace => ("core", "v1", "namespaces"),
            Part::Workload(kind) => kind.gvr(),
            Part::Service => ("core", "v1", "services"),
            Part::PropagationPolicy => (POLICY_GROUP, "v1alpha1", "propagationpolicies"),
            Part::OverridePolicy => (POLICY_GROUP, "v1alpha1", "overridepolicies"),
        }
    }
}

/// One object an application call creates.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    /// What it is.
    pub part: Part,
    /// Its name.
    pub name: String,
    /// The object.
    pub body: Value,
}

impl Planned {
    /// The Namespace of an application whose namespace the instance does not hold yet
    /// (created first, as `:promote` does).
    pub fn namespace(namespace: &str) -> Planned {
        Planned {
            part: Part::Namespace,
            name: namespace.to_owned(),
            body: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        }
    }

    /// `Kind namespace/name` (`Namespace name`), for messages.
    pub fn describe(&self) -> String {
        let kind = self.body["kind"].as_str().unwrap_or_default();
        if self.part == Part::Namespace {
            return format!("{kind} {}", self.name);
        }
        let ns = self.body["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        format!("{kind} {ns}/{}", self.name)
    }
}

/// A member cluster as placement sees it: name, labels, provider, region and zone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberCluster {
    /// Name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// `spec.provider`.
    pub provider: Option<String>,
    /// `spec.region`.
    pub region: Option<String>,
    /// `spec.zones`, with the deprecated `spec.zone` when set.
    pub zones: Vec<String>,
}

/// The zones of a `Cluster`: `spec.zones`, and the deprecated `spec.zone` when it is set (a
/// Karmada before v1.7, or a Cluster stored before `zones` existed).
pub fn cluster_zones(cluster: &Value) -> Vec<String> {
    let mut zones: Vec<String> = cluster
        .pointer("/spec/zones")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|z| !z.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(zone) = cluster
        .pointer("/spec/zone")
        .and_then(Value::as_str)
        .filter(|z| !z.is_empty() && !zones.iter().any(|known| known == z))
    {
        zones.push(zone.to_owned());
    }
    zones
}

impl MemberCluster {
    /// The member cluster of a `Cluster` object.
    pub fn of(cluster: &Value) -> MemberCluster {
        let text = |p: &str| {
            cluster
                .pointer(p)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        MemberCluster {
            name: text("/metadata/name").unwrap_or_default(),
            labels: cluster
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                        .collect()
                })
                .unwrap_or_default(),
            provider: text("/spec/provider"),
            region: text("/spec/region"),
            zones: cluster_zones(cluster),
        }
    }
}

impl Placement {
    fn is_empty(&self) -> bool {
        self.cluster_names.is_empty()
            && self.cluster_labels.is_empty()
            && self.providers.is_empty()
            && self.regions.is_empty()
            && self.zones.is_empty()
    }

    /// Whether Karmada's cluster affinity of this placement selects `cluster`.
    pub fn selects(&self, cluster: &MemberCluster) -> bool {
        let one_of = |values: &[String], value: &Option<String>| {
            values.is_empty() || value.as_ref().is_some_and(|v| values.contains(v))
        };
        (self.cluster_names.is_empty() || self.cluster_names.contains(&cluster.name))
            && self
                .cluster_labels
                .iter()
                .all(|(k, v)| cluster.labels.get(k) == Some(v))
            && one_of(&self.providers, &cluster.provider)
            && one_of(&self.regions, &cluster.region)
            // Karmada's `matchZones` for `In`: any zone of the cluster among the values
            // (`pkg/util/selector.go`).
            && (self.zones.is_empty() || cluster.zones.iter().any(|z| self.zones.contains(z)))
    }

    /// Clusters named by weights or overrides that the placement does not list by name: they
    /// must be checked against the instance's member clusters.
    pub fn needs_members(&self, overrides: &[ClusterOverride]) -> bool {
        self.cluster_names.is_empty() && (!self.weights.is_empty() || !overrides.is_empty())
    }

    /// The PropagationPolicy's `spec.placement` this placement stands for.
    pub fn karmada_placement(&self) -> Value {
        let mut placement = json!({"clusterAffinity": self.cluster_affinity()});
        if !self.weights.is_empty() {
            let list: Vec<Value> = self
                .weights
                .iter()
                .map(|(cluster, weight)| {
                    json!({"targetCluster": {"clusterNames": [cluster]}, "weight": weight})
                })
                .collect();
            placement["replicaScheduling"] = json!({
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"staticWeightList": list},
            });
        }
        placement
    }

    fn cluster_affinity(&self) -> Value {
        let mut affinity = Map::new();
        if !self.cluster_names.is_empty() {
            affinity.insert("clusterNames".into(), json!(self.cluster_names));
        }
        if !self.cluster_labels.is_empty() {
            affinity.insert(
                "labelSelector".into(),
                json!({"matchLabels": self.cluster_labels}),
            );
        }
        let fields: Vec<Value> = [
            ("provider", &self.providers),
            ("region", &self.regions),
            ("zone", &self.zones),
        ]
        .into_iter()
        .filter(|(_, values)| !values.is_empty())
        .map(|(key, values)| json!({"key": key, "operator": "In", "values": values}))
        .collect();
        if !fields.is_empty() {
            affinity.insert("fieldSelector".into(), json!({"matchExpressions": fields}));
        }
        Value::Object(affinity)
    }
}

/// Checks that every cluster weights and overrides name is one `members` the placement
/// selects (for placements by label, provider, region or zone).
pub fn check_against_members(
    spec: &ApplicationSpec,
    members: &[MemberCluster],
) -> Result<(), ApiError> {
    let selected: BTreeSet<&str> = members
        .iter()
        .filter(|m| spec.placement.selects(m))
        .map(|m| m.name.as_str())
        .collect();
    let named = spec
        .placement
        .weights
        .keys()
        .map(|c| ("placement.weights", c))
        .chain(spec.overrides.iter().map(|o| ("overrides", &o.cluster)));
    for (field, cluster) in named {
        if !selected.contains(cluster.as_str()) {
            let which = if selected.is_empty() {
                "it selects no member cluster".to_owned()
            } else {
                format!(
                    "it selects {}",
                    selected.iter().copied().collect::<Vec<_>>().join(", ")
                )
            };
            return Err(ApiError::invalid_field(
                field,
                format!("cluster {cluster:?} is not in the placement ({which})"),
            ));
        }
    }
    Ok(())
}

use kube_kit::labels::is_label_value;

fn is_label_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(|p| check_name("", p).is_ok()) && !name.is_empty() && is_label_value(name)
}

/// A DNS-1035 label (Service names): lower-case letters, digits and '-', starting with a
/// letter, at most 63 characters.
fn is_dns_label(name: &str) -> bool {
    name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn check_placement(placement: &Placement, kind: WorkloadKind) -> Result<(), ApiError> {
    if placement.is_empty() {
        return Err(ApiError::invalid_field(
            "placement",
            "selects no cluster: give clusterNames, clusterLabels, providers, regions or zones",
        ));
    }
    let mut seen = BTreeSet::new();
    for cluster in &placement.cluster_names {
        check_name("placement.clusterNames", cluster)?;
        if !seen.insert(cluster) {
            return Err(ApiError::invalid_field(
                "placement.clusterNames",
                format!("cluster {cluster:?} is named twice"),
            ));
        }
    }
    for (key, value) in &placement.cluster_labels {
        if !is_label_key(key) || !is_label_value(value) {
            return Err(ApiError::invalid_field(
                "placement.clusterLabels",
                format!("{key:?}={value:?} is not a valid label"),
            ));
        }
    }
    for (field, values) in [
        ("placement.providers", &placement.providers),
        ("placement.regions", &placement.regions),
        ("placement.zones", &placement.zones),
    ] {
        if let Some(bad) = values.iter().find(|v| v.is_empty() || v.len() > 128) {
            return Err(ApiError::invalid_field(
                field,
                format!("{bad:?} must be 1 to 128 characters"),
            ));
        }
    }
    if !placement.weights.is_empty() && !kind.divisible() {
        return Err(ApiError::invalid_field(
            "placement.weights",
            format!(
                "a {} has no replicas to divide between clusters",
                kind.kind()
            ),
        ));
    }
    for (cluster, weight) in &placement.weights {
        check_name("placement.weights", cluster)?;
        if *weight < 1 {
            return Err(ApiError::invalid_field(
                "placement.weights",
                format!("the weight of {cluster:?} is {weight}: weights are at least 1"),
            ));
        }
        if !placement.cluster_names.is_empty() && !placement.cluster_names.contains(cluster) {
            return Err(ApiError::invalid_field(
                "placement.weights",
                format!("cluster {cluster:?} is not in placement.clusterNames"),
            ));
        }
    }
    Ok(())
}

fn check_overrides(spec: &ApplicationSpec, kind: WorkloadKind) -> Result<(), ApiError> {
    let mut seen = BTreeSet::new();
    for o in &spec.overrides {
        check_name("overrides.cluster", &o.cluster)?;
        if !seen.insert(&o.cluster) {
            return Err(ApiError::invalid_field(
                "overrides",
                format!("cluster {:?} has two overrides: merge them", o.cluster),
            ));
        }
        let names = &spec.placement.cluster_names;
        if !names.is_empty() && !names.contains(&o.cluster) {
            return Err(ApiError::invalid_field(
                "overrides",
                format!(
                    "cluster {:?} is not in the placement (clusterNames: {})",
                    o.cluster,
                    names.join(", ")
                ),
            ));
        }
        if o.image.is_none() && o.replicas.is_none() && o.env.is_empty() && o.args.is_empty() {
            return Err(ApiError::invalid_field(
                "overrides",
                format!(
                    "the override of {:?} changes nothing: give image, replicas, env or args",
                    o.cluster
                ),
            ));
        }
        if let Some(image) = &o.image {
            parse_image(image).ok_or_else(|| {
                ApiError::invalid_field(
                    "overrides.image",
                    format!("{image:?} is not an image reference"),
                )
            })?;
        }
        if let Some(replicas) = o.replicas {
            if !kind.has_replicas() {
                return Err(ApiError::invalid_field(
                    "overrides.replicas",
                    format!("a {} has no replicas", kind.kind()),
                ));
            }
            if replicas < 0 {
                return Err(ApiError::invalid_field(
                    "overrides.replicas",
                    format!("{replicas} is negative"),
                ));
            }
        }
        if let Some(bad) = o.env.iter().find(|e| !is_env_name(&e.name)) {
            return Err(ApiError::invalid_field(
                "overrides.env",
                format!("{:?} is not an environment variable name", bad.name),
            ));
        }
        let name = override_policy_name(&workload_name(&spec.workload), &o.cluster);
        if name.len() > MAX_NAME_LEN {
            return Err(ApiError::invalid_field(
                "overrides.cluster",
                format!("the OverridePolicy name {name:?} would be longer than {MAX_NAME_LEN}"),
            ));
        }
    }
    Ok(())
}

fn workload_name(workload: &Value) -> String {
    workload
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Name of the OverridePolicy of `cluster` in application `name`.
pub fn override_policy_name(name: &str, cluster: &str) -> String {
    format!("{name}-{cluster}")
}

/// An image reference split as Karmada's image overrider sees it: registry (if the first
/// segment is a host), repository, and tag or digest.
#[derive(Debug, PartialEq, Eq)]
pub struct ImageParts<'a> {
    /// `registry.k8s.io`, `localhost:5000`.
    pub registry: Option<&'a str>,
    /// `library/nginx`.
    pub repository: &'a str,
    /// `1.27` or `@sha256:...` (as Karmada spells a digest tag).
    pub tag: Option<&'a str>,
}

/// Splits `image` (`[registry/]repository[:tag][@digest]`), `None` when it is not a
/// reference.
pub fn parse_image(image: &str) -> Option<ImageParts<'_>> {
    if image.is_empty() || image.chars().any(|c| c.is_whitespace()) {
        return None;
    }
    let (rest, digest) = match image.find('@') {
        Some(at) => (&image[..at], Some(&image[at..])),
        None => (image, None),
    };
    let (registry, path) = match rest.split_once('/') {
        Some((first, path)) if first.contains(['.', ':']) || first == "localhost" => {
            (Some(first), path)
        }
        _ => (None, rest),
    };
    let (repository, tag) = match path.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, Some(tag)),
        _ => (path, None),
    };
    let valid_repo = !repository.is_empty()
        && repository.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-' | '/')
        });
    if !valid_repo || tag.is_some_and(str::is_empty) {
        return None;
    }
    Some(ImageParts {
        registry,
        repository,
        tag: digest.or(tag),
    })
}

/// The workload checked and completed: `kind`, `apiVersion`, namespace, the application label,
/// default pod labels (`app: <name>`) and `apps/v1` selector.
fn prepare_workload(
    namespace: &str,
    workload: &Value,
) -> Result<(WorkloadKind, String, Value), ApiError> {
    let Value::Object(_) = workload else {
        return Err(ApiError::invalid_field("workload", "must be an object"));
    };
    let kind_text = workload["kind"].as_str().unwrap_or_default();
    let kind = WorkloadKind::parse(kind_text).ok_or_else(|| {
        ApiError::invalid_field(
            "workload.kind",
            format!(
                "{kind_text:?} is not a workload kind an application has: Deployment, \
                 StatefulSet, DaemonSet, Job or CronJob"
            ),
        )
    })?;
    match workload.get("apiVersion") {
        None | Some(Value::Null) => {}
        Some(Value::String(v)) if v == kind.api_version() => {}
        Some(other) => {
            return Err(ApiError::invalid_field(
                "workload.apiVersion",
                format!("is {other}; a {} is {:?}", kind.kind(), kind.api_version()),
            ));
        }
    }
    let name = workload_name(workload);
    check_name("workload.metadata.name", &name)?;
    match workload.pointer("/metadata/namespace") {
        None | Some(Value::Null) => {}
        Some(Value::String(ns)) if ns == namespace => {}
        Some(other) => {
            return Err(ApiError::invalid_field(
                "workload.metadata.namespace",
                format!("is {other}, but the application is in namespace {namespace:?}"),
            ));
        }
    }
    let mut body = workload.clone();
    body["apiVersion"] = json!(kind.api_version());
    body["kind"] = json!(kind.kind());
    body["metadata"]["namespace"] = json!(namespace);
    add_label(&mut body, &name);
    let template = body.pointer_mut(kind.template_path()).ok_or_else(|| {
        ApiError::invalid_field(
            "workload",
            format!(
                "a {} needs its pod template at {}",
                kind.kind(),
                kind.template_path()
            ),
        )
    })?;
    let first_container = template.pointer("/spec/containers/0");
    if first_container
        .and_then(|c| c.get("image"))
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(ApiError::invalid_field(
            "workload",
            "the pod template needs a container with an image",
        ));
    }
    let labels = template.pointer("/metadata/labels");
    if labels.and_then(Value::as_object).is_none_or(Map::is_empty) {
        template["metadata"]["labels"] = json!({"app": name});
    }
    let pod_labels = template["metadata"]["labels"].clone();
    if matches!(
        kind,
        WorkloadKind::Deployment | WorkloadKind::StatefulSet | WorkloadKind::DaemonSet
    ) && body.pointer("/spec/selector").is_none()
    {
        body["spec"]["selector"] = json!({"matchLabels": pod_labels});
    }
    Ok((kind, name, body))
}

fn add_label(object: &mut Value, application: &str) {
    let metadata = &mut object["metadata"];
    if !metadata["labels"].is_object() {
        metadata["labels"] = json!({});
    }
    metadata["labels"][APPLICATION_LABEL] = json!(application);
}

fn metadata(namespace: &str, name: &str, application: &str) -> Value {
    json!({"name": name, "namespace": namespace, "labels": {APPLICATION_LABEL: application}})
}

fn service(
    namespace: &str,
    name: &str,
    pod_labels: &Value,
    service: &ApplicationService,
) -> Result<Value, ApiError> {
    if !is_dns_label(name) {
        return Err(ApiError::invalid_field(
            "workload.metadata.name",
            format!(
                "{name:?} cannot name a Service: a Service name is a DNS label (lower-case \
                 letters, digits and '-', starting with a letter, at most 63 characters)"
            ),
        ));
    }
    if service.ports.is_empty() {
        return Err(ApiError::invalid_field(
            "service.ports",
            "a Service needs at least one port",
        ));
    }
    if let Some(t) = &service.type_
        && !matches!(t.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer")
    {
        return Err(ApiError::invalid_field(
            "service.type",
            format!("{t:?} is not ClusterIP, NodePort or LoadBalancer"),
        ));
    }
    let several = service.ports.len() > 1;
    let mut ports = Vec::new();
    for p in &service.ports {
        for (field, port) in [("port", Some(p.port)), ("targetPort", p.target_port)] {
            if let Some(port) = port
                && !(1..=65535).contains(&port)
            {
                return Err(ApiError::invalid_field(
                    &format!("service.ports.{field}"),
                    format!("{port} is not a port (1 to 65535)"),
                ));
            }
        }
        let protocol = p.protocol.as_deref().unwrap_or("TCP");
        if !matches!(protocol, "TCP" | "UDP" | "SCTP") {
            return Err(ApiError::invalid_field(
                "service.ports.protocol",
                format!("{protocol:?} is not TCP, UDP or SCTP"),
            ));
        }
        let mut port = json!({
            "port": p.port,
            "targetPort": p.target_port.unwrap_or(p.port),
            "protocol": protocol,
        });
        match &p.name {
            Some(n) if !is_dns_label(n) => {
                return Err(ApiError::invalid_field(
                    "service.ports.name",
                    format!("{n:?} is not a DNS label"),
                ));
            }
            Some(n) => port["name"] = json!(n),
            None if several => port["name"] = json!(format!("port-{}", p.port)),
            None => {}
        }
        ports.push(port);
    }
    let mut spec = json!({"selector": pod_labels, "ports": ports});
    if let Some(t) = &service.type_ {
        spec["type"] = json!(t);
    }
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(namespace, name, name),
        "spec": spec,
    }))
}

fn propagation_policy(
    namespace: &str,
    name: &str,
    kind: WorkloadKind,
    with_service: bool,
    placement: &Placement,
) -> Value {
    let mut selectors =
        vec![json!({"apiVersion": kind.api_version(), "kind": kind.kind(), "name": name})];
    if with_service {
        selectors.push(json!({"apiVersion": "v1", "kind": "Service", "name": name}));
    }
    let placement_json = placement.karmada_placement();
    json!({
        "apiVersion": format!("{POLICY_GROUP}/v1alpha1"),
        "kind": "PropagationPolicy",
        "metadata": metadata(namespace, name, name),
        "spec": {"resourceSelectors": selectors, "placement": placement_json},
    })
}

fn overriders(kind: WorkloadKind, workload: &Value, o: &ClusterOverride) -> Value {
    let container = format!("{}/spec/containers/0", kind.template_path());
    let mut overriders = Map::new();
    if let Some(parts) = o.image.as_deref().and_then(parse_image) {
        let predicate = json!({"path": format!("{container}/image")});
        let component = |component: &str, value: Option<&str>| match value {
            Some(v) => json!({"component": component, "operator": "replace", "value": v,
                "predicate": predicate}),
            None => json!({"component": component, "operator": "remove", "predicate": predicate}),
        };
        overriders.insert(
            "imageOverrider".into(),
            json!([
                component("Registry", parts.registry),
                component("Repository", Some(parts.repository)),
                component("Tag", parts.tag),
            ]),
        );
    }
    let mut plaintext = Vec::new();
    if let Some(replicas) = o.replicas {
        plaintext.push(json!({"path": "/spec/replicas", "operator": "replace", "value": replicas}));
    }
    if !o.env.is_empty() {
        let has_env = workload
            .pointer(&format!("{container}/env"))
            .is_some_and(Value::is_array);
        if has_env {
            plaintext.extend(o.env.iter().map(|e| {
                json!({"path": format!("{container}/env/-"), "operator": "add",
                    "value": {"name": e.name, "value": e.value}})
            }));
        } else {
            let env: Vec<Value> = o
                .env
                .iter()
                .map(|e| json!({"name": e.name, "value": e.value}))
                .collect();
            plaintext
                .push(json!({"path": format!("{container}/env"), "operator": "add", "value": env}));
        }
    }
    if !plaintext.is_empty() {
        overriders.insert("plaintext".into(), Value::Array(plaintext));
    }
    if !o.args.is_empty() {
        let container_name = workload
            .pointer(&format!("{container}/name"))
            .cloned()
            .unwrap_or(Value::Null);
        overriders.insert(
            "argsOverrider".into(),
            json!([{"containerName": container_name, "operator": "add", "value": o.args}]),
        );
    }
    Value::Object(overriders)
}

/// Checks `spec` and returns the objects to create in `namespace`, in order: the workload,
/// its Service, its PropagationPolicy (named as the workload) and one OverridePolicy per
/// cluster override (`<name>-<cluster>`).
pub fn plan(namespace: &str, spec: &ApplicationSpec) -> Result<Vec<Planned>, ApiError> {
    check_name("namespace", namespace)?;
    let (kind, name, workload) = prepare_workload(namespace, &spec.workload)?;
    check_placement(&spec.placement, kind)?;
    check_overrides(spec, kind)?;
    if !spec.overrides.is_empty()
        && workload
            .pointer(&format!("{}/spec/containers/0/name", kind.template_path()))
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        return Err(ApiError::invalid_field(
            "workload",
            "the first container needs a name for per-cluster overrides",
        ));
    }
    let pod_labels = workload
        .pointer(&format!("{}/metadata/labels", kind.template_path()))
        .cloned()
        .unwrap_or(Value::Null);
    let mut planned = vec![Planned {
        part: Part::Workload(kind),
        name: name.clone(),
        body: workload.clone(),
    }];
    if let Some(s) = &spec.service {
        planned.push(Planned {
            part: Part::Service,
            name: name.clone(),
            body: service(namespace, &name, &pod_labels, s)?,
        });
    }
    planned.push(Planned {
        part: Part::PropagationPolicy,
        name: name.clone(),
        body: propagation_policy(
            namespace,
            &name,
            kind,
            spec.service.is_some(),
            &spec.placement,
        ),
    });
    for o in &spec.overrides {
        let op_name = override_policy_name(&name, &o.cluster);
        planned.push(Planned {
            part: Part::OverridePolicy,
            name: op_name.clone(),
            body: json!({
                "apiVersion": format!("{POLICY_GROUP}/v1alpha1"),
                "kind": "OverridePolicy",
                "metadata": metadata(namespace, &op_name, &name),
                "spec": {
                    "resourceSelectors": [
                        {"apiVersion": kind.api_version(), "kind": kind.kind(), "name": name},
                    ],
                    "overrideRules": [{
                        "targetCluster": {"clusterNames": [o.cluster]},
                        "overriders": overriders(kind, &workload, o),
                    }],
                },
            }),
        });
    }
    Ok(planned)
}

/// The ordinal of position `index` (0-based) for messages: `1st`, `2nd`, `3rd`, `4th`.
pub fn ordinal(index: usize) -> String {
    let n = index + 1;
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ApplicationPort, EnvVar};

    fn deployment() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 4, "template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1.27"}]}}}})
    }

    fn spec() -> ApplicationSpec {
        ApplicationSpec {
            workload: deployment(),
            service: Some(ApplicationService {
                type_: None,
                ports: vec![ApplicationPort {
                    port: 80,
                    target_port: Some(8080),
                    ..Default::default()
                }],
            }),
            placement: Placement {
                cluster_names: vec!["east".into(), "west".into()],
                weights: [("east".to_owned(), 2), ("west".to_owned(), 1)].into(),
                ..Default::default()
            },
            overrides: vec![
                ClusterOverride {
                    cluster: "east".into(),
                    image: Some("registry.east.example:5000/team/web:2.0".into()),
                    replicas: Some(3),
                    ..Default::default()
                },
                ClusterOverride {
                    cluster: "west".into(),
                    env: vec![EnvVar {
                        name: "REGION".into(),
                        value: "west".into(),
                    }],
                    args: vec!["--verbose".into()],
                    ..Default::default()
                },
            ],
            dry_run: false,
        }
    }

    #[test]
    fn plan_creates_objects_in_order_that_refer_to_each_other() {
        let planned = plan("team-a", &spec()).unwrap();
        let parts: Vec<(Part, &str)> = planned.iter().map(|p| (p.part, p.name.as_str())).collect();
        assert_eq!(
            parts,
            [
                (Part::Workload(WorkloadKind::Deployment), "web"),
                (Part::Service, "web"),
                (Part::PropagationPolicy, "web"),
                (Part::OverridePolicy, "web-east"),
                (Part::OverridePolicy, "web-west"),
            ]
        );
        let [workload, service, pp, east, west] = &planned[..] else {
            panic!("{planned:?}")
        };
        assert_eq!(workload.body["metadata"]["namespace"], "team-a");
        assert_eq!(
            workload.body["metadata"]["labels"][APPLICATION_LABEL],
            "web"
        );
        let pod_labels = &workload.body["spec"]["template"]["metadata"]["labels"];
        assert_eq!(pod_labels, &json!({"app": "web"}));
        assert_eq!(
            workload.body["spec"]["selector"],
            json!({"matchLabels": {"app": "web"}})
        );
        assert_eq!(&service.body["spec"]["selector"], pod_labels);
        assert_eq!(
            service.body["spec"]["ports"],
            json!([{"port": 80, "targetPort": 8080, "protocol": "TCP"}])
        );
        assert_eq!(
            pp.body["spec"]["resourceSelectors"],
            json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                   {"apiVersion": "v1", "kind": "Service", "name": "web"}])
        );
        assert_eq!(
            pp.body["spec"]["placement"],
            json!({"clusterAffinity": {"clusterNames": ["east", "west"]},
                "replicaScheduling": {"replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": [
                        {"targetCluster": {"clusterNames": ["east"]}, "weight": 2},
                        {"targetCluster": {"clusterNames": ["west"]}, "weight": 1}]}}})
        );
        let path = json!({"path": "/spec/template/spec/containers/0/image"});
        assert_eq!(
            east.body["spec"],
            json!({"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                "overrideRules": [{"targetCluster": {"clusterNames": ["east"]}, "overriders": {
                    "imageOverrider": [
                        {"component": "Registry", "operator": "replace", "value": "registry.east.example:5000", "predicate": path},
                        {"component": "Repository", "operator": "replace", "value": "team/web", "predicate": path},
                        {"component": "Tag", "operator": "replace", "value": "2.0", "predicate": path}],
                    "plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 3}]}}]})
        );
        assert_eq!(
            west.body["spec"]["overrideRules"][0]["overriders"],
            json!({
                "plaintext": [{"path": "/spec/template/spec/containers/0/env", "operator": "add",
                    "value": [{"name": "REGION", "value": "west"}]}],
                "argsOverrider": [{"containerName": "web", "operator": "add", "value": ["--verbose"]}]})
        );
    }

    #[test]
    fn placement_by_labels_and_region_uses_karmada_selectors() {
        let mut s = spec();
        s.service = None;
        s.overrides.clear();
        s.placement = Placement {
            cluster_labels: [("env".to_owned(), "prod".to_owned())].into(),
            regions: vec!["eu".into()],
            zones: vec!["eu-1a".into()],
            ..Default::default()
        };
        let planned = plan("default", &s).unwrap();
        assert_eq!(planned.len(), 2);
        assert_eq!(
            planned[1].body["spec"]["placement"],
            json!({"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}},
                "fieldSelector": {"matchExpressions": [
                    {"key": "region", "operator": "In", "values": ["eu"]},
                    {"key": "zone", "operator": "In", "values": ["eu-1a"]}]}}})
        );
        assert_eq!(
            planned[1].body["spec"]["resourceSelectors"],
            json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}])
        );
    }

    #[test]
    fn zones_of_a_cluster_and_placement_by_zone() {
        // (spec of the Cluster, zones placement sees)
        let cases = [
            (json!({"zones": ["eu-1a", "eu-1b"]}), vec!["eu-1a", "eu-1b"]),
            (json!({"zone": "eu-1a"}), vec!["eu-1a"]),
            (json!({"zone": "", "zones": ["eu-1b"]}), vec!["eu-1b"]),
            (json!({"zone": "eu-1a", "zones": ["eu-1a"]}), vec!["eu-1a"]),
            (json!({"region": "eu"}), vec![]),
        ];
        for (spec, want) in cases {
            let cluster = json!({"metadata": {"name": "m"}, "spec": spec});
            assert_eq!(cluster_zones(&cluster), want, "{spec}");
        }
        let placement = Placement {
            zones: vec!["eu-1b".into(), "eu-1c".into()],
            ..Default::default()
        };
        let member =
            |spec: Value| MemberCluster::of(&json!({"metadata": {"name": "m"}, "spec": spec}));
        // Karmada's `In` on zones: any zone of the cluster among the values.
        assert!(placement.selects(&member(json!({"zones": ["eu-1a", "eu-1b"]}))));
        assert!(placement.selects(&member(json!({"zone": "eu-1c"}))));
        assert!(!placement.selects(&member(json!({"zones": ["eu-1a"]}))));
        assert!(!placement.selects(&member(json!({}))));
    }

    #[test]
    fn cronjob_templates_and_existing_env() {
        let mut s = spec();
        s.workload = json!({"kind": "CronJob", "metadata": {"name": "tick"}, "spec": {
            "schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}]}]}}}}}});
        s.service = None;
        s.placement.weights.clear();
        s.overrides = vec![ClusterOverride {
            cluster: "east".into(),
            image: Some("busybox@sha256:abc".into()),
            env: vec![EnvVar {
                name: "B".into(),
                value: "2".into(),
            }],
            ..Default::default()
        }];
        let planned = plan("default", &s).unwrap();
        assert_eq!(planned[0].body["apiVersion"], "batch/v1");
        assert!(planned[0].body["spec"].get("selector").is_none());
        assert_eq!(
            planned[0].body["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"],
            json!({"app": "tick"})
        );
        let overriders = &planned[2].body["spec"]["overrideRules"][0]["overriders"];
        let c = "/spec/jobTemplate/spec/template/spec/containers/0";
        assert_eq!(
            overriders["plaintext"],
            json!([{"path": format!("{c}/env/-"), "operator": "add", "value": {"name": "B", "value": "2"}}])
        );
        assert_eq!(overriders["imageOverrider"][0]["operator"], "remove");
        assert_eq!(overriders["imageOverrider"][2]["value"], "@sha256:abc");
        assert_eq!(
            overriders["imageOverrider"][2]["predicate"]["path"],
            format!("{c}/image")
        );
    }

    #[test]
    fn bad_requests_name_the_field() {
        type Change = fn(&mut ApplicationSpec);
        let cases: Vec<(&str, Change, &str)> = vec![
            (
                "unknown kind",
                |s| s.workload["kind"] = json!("Pod"),
                "workload.kind",
            ),
            (
                "wrong apiVersion",
                |s| s.workload["apiVersion"] = json!("batch/v1"),
                "workload.apiVersion",
            ),
            (
                "bad name",
                |s| s.workload["metadata"]["name"] = json!("Web_1"),
                "workload.metadata.name",
            ),
            (
                "other namespace",
                |s| s.workload["metadata"]["namespace"] = json!("other"),
                "workload.metadata.namespace",
            ),
            (
                "no image",
                |s| s.workload["spec"]["template"]["spec"]["containers"][0]["image"] = json!(""),
                "workload",
            ),
            (
                "empty placement",
                |s| {
                    s.placement = Placement::default();
                    s.overrides.clear();
                },
                "placement",
            ),
            (
                "bad cluster name",
                |s| s.placement.cluster_names.push("East!".into()),
                "placement.clusterNames",
            ),
            (
                "weight outside placement",
                |s| {
                    s.placement.weights.insert("north".into(), 1);
                },
                "placement.weights",
            ),
            (
                "zero weight",
                |s| {
                    s.placement.weights.insert("east".into(), 0);
                },
                "placement.weights",
            ),
            (
                "override outside placement",
                |s| s.overrides[0].cluster = "north".into(),
                "overrides",
            ),
            (
                "override changing nothing",
                |s| {
                    s.overrides[1] = ClusterOverride {
                        cluster: "west".into(),
                        ..Default::default()
                    }
                },
                "overrides",
            ),
            (
                "two overrides of a cluster",
                |s| s.overrides[1].cluster = "east".into(),
                "overrides",
            ),
            (
                "bad image",
                |s| s.overrides[0].image = Some("Not An Image".into()),
                "overrides.image",
            ),
            (
                "negative replicas",
                |s| s.overrides[0].replicas = Some(-1),
                "overrides.replicas",
            ),
            (
                "bad env",
                |s| {
                    s.overrides[1].env[0].name = "1X".into();
                },
                "overrides.env",
            ),
            (
                "service without ports",
                |s| s.service.as_mut().unwrap().ports.clear(),
                "service.ports",
            ),
            (
                "bad port",
                |s| s.service.as_mut().unwrap().ports[0].port = 70000,
                "service.ports.port",
            ),
            (
                "bad service type",
                |s| s.service.as_mut().unwrap().type_ = Some("External".into()),
                "service.type",
            ),
            (
                "service name not a DNS label",
                |s| s.workload["metadata"]["name"] = json!("web.v2"),
                "workload.metadata.name",
            ),
            (
                "bad label",
                |s| {
                    s.placement
                        .cluster_labels
                        .insert("env".into(), "<prod>".into());
                },
                "placement.clusterLabels",
            ),
        ];
        for (what, change, field) in cases {
            let mut s = spec();
            change(&mut s);
            let err = plan("team-a", &s).expect_err(what);
            assert_eq!(err.code, crate::api::Code::InvalidArgument, "{what}");
            assert!(
                err.message.starts_with(&format!("{field}: ")),
                "{what}: {}",
                err.message
            );
        }
    }

    #[test]
    fn replicas_and_weights_only_where_they_mean_something() {
        let mut s = spec();
        s.workload = json!({"kind": "DaemonSet", "metadata": {"name": "agent"},
            "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "agent"}]}}}});
        let err = plan("default", &s).unwrap_err();
        assert!(err.message.starts_with("placement.weights"), "{err}");
        s.placement.weights.clear();
        let err = plan("default", &s).unwrap_err();
        assert!(err.message.starts_with("overrides.replicas"), "{err}");
    }

    #[test]
    fn members_selected_by_the_placement() {
        let cluster = |name: &str, env: &str, region: &str| {
            MemberCluster::of(&json!({"metadata": {"name": name, "labels": {"env": env}},
                "spec": {"region": region}}))
        };
        let members = [
            cluster("a", "prod", "eu"),
            cluster("b", "prod", "us"),
            cluster("c", "dev", "eu"),
        ];
        let mut s = spec();
        s.placement = Placement {
            cluster_labels: [("env".to_owned(), "prod".to_owned())].into(),
            regions: vec!["eu".into()],
            ..Default::default()
        };
        s.overrides.truncate(1);
        s.overrides[0].cluster = "a".into();
        assert!(s.placement.needs_members(&s.overrides));
        assert!(check_against_members(&s, &members).is_ok());
        s.overrides[0].cluster = "b".into();
        let err = check_against_members(&s, &members).unwrap_err();
        assert_eq!(
            err.message,
            "overrides: cluster \"b\" is not in the placement (it selects a)"
        );
    }

    #[test]
    fn image_references() {
        for (image, want) in [
            ("nginx", Some((None, "nginx", None))),
            ("nginx:1.27", Some((None, "nginx", Some("1.27")))),
            ("library/nginx:1", Some((None, "library/nginx", Some("1")))),
            (
                "localhost:5000/app",
                Some((Some("localhost:5000"), "app", None)),
            ),
            (
                "registry.k8s.io/pause:3.9",
                Some((Some("registry.k8s.io"), "pause", Some("3.9"))),
            ),
            ("app@sha256:00", Some((None, "app", Some("@sha256:00")))),
            ("", None),
            ("Upper", None),
            ("a b", None),
            ("app:", None),
        ] {
            let got = parse_image(image).map(|p| (p.registry, p.repository, p.tag));
            assert_eq!(got, want, "{image}");
        }
    }

    #[test]
    fn ordinals() {
        let got: Vec<String> = [0, 1, 2, 3, 10, 20].into_iter().map(ordinal).collect();
        assert_eq!(got, ["1st", "2nd", "3rd", "4th", "11th", "21st"]);
    }
}
