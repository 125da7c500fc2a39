//! Round-trips of Karmada and Clusterpedia objects through the typed models: sample objects
//! (modelled on the CRDs) parse into the typed fields, and serialise back to exactly the same
//! document, unknown fields included.
#![allow(clippy::unwrap_used)]

use kairship_core::models::cluster::{Cluster, ClusterSyncMode};
use kairship_core::models::operator::Karmada;
use kairship_core::models::pedia::PediaCluster;
use kairship_core::models::policy::{
    ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
};
use kairship_core::models::work::{ResourceBinding, binding_name};
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Parses `yaml` as `T`, checks that serialising gives back the same document, returns `T`.
fn round_trip<T: DeserializeOwned + Serialize>(yaml: &str) -> T {
    let original: serde_json::Value = serde_saphyr::from_str(yaml).unwrap();
    let typed: T = serde_json::from_value(original.clone()).unwrap();
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(back, original, "round trip changed the document");
    typed
}

const CLUSTER: &str = r#"
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member-1
  labels:
    env: prod
spec:
  id: 5f3e0c7a-1111-2222-3333-444455556666
  syncMode: Push
  apiEndpoint: https://10.0.0.1:6443
  secretRef:
    namespace: karmada-cluster
    name: member-1
  impersonatorSecretRef:
    namespace: karmada-cluster
    name: member-1-impersonator
  provider: aws
  region: eu-west-1
  zone: eu-west-1a
  taints:
  - key: maintenance
    value: "true"
    effect: NoSchedule
  resourceModels:
  - grade: 0
    ranges:
    - name: cpu
      min: "0"
      max: "1"
status:
  kubernetesVersion: v1.31.2
  apiEnablements:
  - groupVersion: apps/v1
    resources:
    - name: deployments
      kind: Deployment
  conditions:
  - type: Ready
    status: "True"
    reason: ClusterReady
    message: cluster is healthy and ready to accept workloads
    lastTransitionTime: "2024-05-01T10:00:00Z"
  nodeSummary:
    totalNum: 3
    readyNum: 2
  resourceSummary:
    allocatable:
      cpu: "12"
      memory: 48Gi
      pods: "330"
    allocating:
      cpu: 250m
    allocated:
      cpu: 4500m
      memory: 10Gi
    allocatableModelings:
    - grade: 0
      count: 3
"#;

#[test]
fn cluster_round_trip() {
    let cluster: Cluster = round_trip(CLUSTER);
    assert_eq!(cluster.spec.sync_mode, Some(ClusterSyncMode::Push));
    assert_eq!(
        cluster.spec.api_endpoint.as_deref(),
        Some("https://10.0.0.1:6443")
    );
    assert_eq!(cluster.spec.secret_ref.as_ref().unwrap().name, "member-1");
    assert_eq!(
        (cluster.spec.region.as_deref(), cluster.spec.zone.as_deref()),
        (Some("eu-west-1"), Some("eu-west-1a"))
    );
    assert_eq!(cluster.spec.taints[0].effect, "NoSchedule");
    assert!(
        cluster.spec.extra.contains_key("id") && cluster.spec.extra.contains_key("resourceModels")
    );
    let status = cluster.status.as_ref().unwrap();
    assert_eq!(status.kubernetes_version.as_deref(), Some("v1.31.2"));
    assert_eq!(status.node_summary.unwrap().ready_num, 2);
    let resources = status.resource_summary.as_ref().unwrap();
    assert_eq!(resources.allocatable["memory"].0, "48Gi");
    assert_eq!(resources.allocating["cpu"].0, "250m");
    assert!(resources.extra.contains_key("allocatableModelings"));
    assert!(cluster.is_ready());
}

#[test]
fn cluster_readiness_and_defaults() {
    let minimal: Cluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "m"},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]}
    }))
    .unwrap();
    assert!(!minimal.is_ready());
    assert_eq!(
        minimal.spec,
        Default::default(),
        "a missing spec reads as empty"
    );
    let no_status = Cluster::new("m", Default::default());
    assert!(!no_status.is_ready());
}

const PROPAGATION_POLICY: &str = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx
  namespace: default
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx
  - apiVersion: v1
    kind: ConfigMap
    labelSelector:
      matchLabels:
        app: nginx
  placement:
    clusterAffinity:
      clusterNames:
      - member-1
      - member-2
      exclude:
      - member-3
    clusterTolerations:
    - key: maintenance
      operator: Exists
      effect: NoSchedule
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - targetCluster:
            clusterNames:
            - member-1
          weight: 1
    spreadConstraints:
    - spreadByField: cluster
      maxGroups: 2
      minGroups: 1
  priority: 10
  conflictResolution: Overwrite
  propagateDeps: true
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 120
      purgeMode: Gracefully
  activationPreference: Lazy
"#;

#[test]
fn propagation_policies_round_trip() {
    let pp: PropagationPolicy = round_trip(PROPAGATION_POLICY);
    assert_eq!(pp.spec.resource_selectors.len(), 2);
    assert_eq!(pp.spec.resource_selectors[0].name.as_deref(), Some("nginx"));
    let selector = pp.spec.resource_selectors[1]
        .label_selector
        .as_ref()
        .unwrap();
    assert_eq!(selector.match_labels.as_ref().unwrap()["app"], "nginx");
    let placement = pp.spec.placement.as_ref().unwrap();
    assert_eq!(
        placement.cluster_affinity.as_ref().unwrap().cluster_names,
        ["member-1", "member-2"]
    );
    assert_eq!(
        placement.cluster_affinity.as_ref().unwrap().exclude,
        ["member-3"]
    );
    assert_eq!(
        placement.cluster_tolerations[0].operator.as_deref(),
        Some("Exists")
    );
    let scheduling = placement.replica_scheduling.as_ref().unwrap();
    assert_eq!(
        scheduling.replica_scheduling_type.as_deref(),
        Some("Divided")
    );
    assert!(scheduling.extra.contains_key("weightPreference"));
    assert!(placement.extra.contains_key("spreadConstraints"));
    assert_eq!(
        (pp.spec.priority, pp.spec.propagate_deps),
        (Some(10), Some(true))
    );
    assert!(
        pp.spec.extra.contains_key("failover")
            && pp.spec.extra.contains_key("activationPreference")
    );

    let cluster_scoped = PROPAGATION_POLICY
        .replace("kind: PropagationPolicy", "kind: ClusterPropagationPolicy")
        .replace("  namespace: default\n", "");
    let cpp: ClusterPropagationPolicy = round_trip(&cluster_scoped);
    assert_eq!(cpp.spec, pp.spec);
}

const OVERRIDE_POLICY: &str = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata:
  name: nginx-eu
  namespace: default
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx
  overrideRules:
  - targetCluster:
      clusterNames:
      - member-1
    overriders:
      plaintext:
      - path: /spec/replicas
        operator: replace
        value: 3
      imageOverrider:
      - component: Registry
        operator: replace
        value: registry.eu.example.com
      labelsOverrider:
      - operator: add
        value:
          region: eu
      annotationsOverrider:
      - operator: remove
        value:
          legacy: ""
      argsOverrider:
      - containerName: nginx
        operator: add
        value:
        - --verbose
  - overriders:
      commandOverrider:
      - containerName: nginx
        operator: add
        value:
        - /bin/sh
"#;

#[test]
fn override_policies_round_trip() {
    let op: OverridePolicy = round_trip(OVERRIDE_POLICY);
    let rule = &op.spec.override_rules[0];
    assert_eq!(
        rule.target_cluster.as_ref().unwrap().cluster_names,
        ["member-1"]
    );
    assert_eq!(rule.overriders.plaintext[0].path, "/spec/replicas");
    assert_eq!(
        rule.overriders.plaintext[0].value,
        Some(serde_json::json!(3))
    );
    assert_eq!(rule.overriders.image_overrider[0].component, "Registry");
    assert_eq!(rule.overriders.labels_overrider[0].value["region"], "eu");
    assert_eq!(rule.overriders.annotations_overrider[0].operator, "remove");
    assert!(rule.overriders.extra.contains_key("argsOverrider"));
    assert!(op.spec.override_rules[1].target_cluster.is_none());

    let cluster_scoped = OVERRIDE_POLICY
        .replace("kind: OverridePolicy", "kind: ClusterOverridePolicy")
        .replace("  namespace: default\n", "");
    let cop: ClusterOverridePolicy = round_trip(&cluster_scoped);
    assert_eq!(cop.spec, op.spec);
}

const RESOURCE_BINDING: &str = r#"
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata:
  name: nginx-deployment
  namespace: default
  annotations:
    propagationpolicy.karmada.io/name: nginx
    propagationpolicy.karmada.io/namespace: default
  labels:
    propagationpolicy.karmada.io/permanent-id: 0c3d2b1a
spec:
  resource:
    apiVersion: apps/v1
    kind: Deployment
    name: nginx
    namespace: default
    uid: 9a8b7c6d
    resourceVersion: "1234"
  replicas: 4
  replicaRequirements:
    resourceRequest:
      cpu: 100m
  clusters:
  - name: member-1
    replicas: 3
  - name: member-2
    replicas: 1
  placement:
    clusterAffinity:
      clusterNames:
      - member-1
      - member-2
  conflictResolution: Abort
status:
  schedulerObservedGeneration: 2
  lastScheduledTime: "2024-05-01T10:00:00Z"
  conditions:
  - type: Scheduled
    status: "True"
    reason: Success
    message: Binding has been scheduled successfully.
    lastTransitionTime: "2024-05-01T10:00:00Z"
  - type: FullyApplied
    status: "True"
    reason: FullyAppliedSuccess
    message: All works have been successfully applied
    lastTransitionTime: "2024-05-01T10:00:01Z"
  aggregatedStatus:
  - clusterName: member-1
    applied: true
    health: Healthy
    status:
      readyReplicas: 3
      replicas: 3
  - clusterName: member-2
    applied: false
    appliedMessage: quota exceeded
    health: Unknown
"#;

#[test]
fn resource_binding_round_trip() {
    let rb: ResourceBinding = round_trip(RESOURCE_BINDING);
    assert_eq!(rb.spec.resource.kind, "Deployment");
    assert_eq!(rb.spec.resource.resource_version.as_deref(), Some("1234"));
    assert_eq!(rb.spec.replicas, Some(4));
    let placed: Vec<(&str, Option<i32>)> = rb
        .spec
        .clusters
        .iter()
        .map(|c| (c.name.as_str(), c.replicas))
        .collect();
    assert_eq!(placed, [("member-1", Some(3)), ("member-2", Some(1))]);
    let status = rb.status.as_ref().unwrap();
    assert_eq!(status.scheduler_observed_generation, Some(2));
    assert_eq!(status.conditions.len(), 2);
    assert_eq!(
        status.aggregated_status[0].status.as_ref().unwrap()["readyReplicas"],
        3
    );
    assert_eq!(
        status.aggregated_status[1].applied_message.as_deref(),
        Some("quota exceeded")
    );
    assert!(rb.uses_propagation_policy("default", "nginx"));
    assert!(!rb.uses_propagation_policy("other", "nginx"));
    assert!(!rb.uses_cluster_propagation_policy("nginx"));
    assert_eq!(
        binding_name(&rb.spec.resource.kind, &rb.spec.resource.name),
        "nginx-deployment"
    );
    assert_eq!(
        binding_name("ClusterRole", "system:aggregate-to-edit"),
        "system.aggregate-to-edit-clusterrole"
    );
}

const KARMADA: &str = r#"
apiVersion: operator.karmada.io/v1alpha1
kind: Karmada
metadata:
  name: prod
  namespace: karmada-prod
  generation: 3
spec:
  hostCluster:
    networking:
      dnsDomain: cluster.local
  privateRegistry:
    registry: registry.example.com
  featureGates:
    Failover: true
  components:
    etcd:
      local:
        imageRepository: registry.k8s.io/etcd
        imageTag: 3.5.16-0
        replicas: 1
        volumeData:
          emptyDir: {}
    karmadaAPIServer:
      imageRepository: registry.k8s.io/kube-apiserver
      imageTag: v1.31.3
      replicas: 1
      serviceType: NodePort
      serviceSubnet: 10.96.0.0/12
    karmadaAggregatedAPIServer:
      imageTag: v1.14.0
    kubeControllerManager:
      imageTag: v1.31.3
    karmadaControllerManager:
      imageTag: v1.14.0
      controllers:
      - "*"
    karmadaScheduler:
      imageTag: v1.14.0
    karmadaWebhook:
      imageTag: v1.14.0
    karmadaSearch:
      imageTag: v1.14.0
status:
  observedGeneration: 3
  secretRef:
    namespace: karmada-prod
    name: prod-karmada-admin-config
  apiServerService:
    name: prod-karmada-apiserver
  karmadaVersion: v1.14.0
  kubernetesVersion: v1.31.3
  conditions:
  - type: Ready
    status: "True"
    reason: Completed
    message: karmada init job is completed
    lastTransitionTime: "2024-05-01T10:00:00Z"
"#;

#[test]
fn operator_karmada_round_trip() {
    let k: Karmada = round_trip(KARMADA);
    let components = k.spec.components.as_ref().unwrap();
    assert_eq!(
        components.etcd.local.as_ref().unwrap().image_tag.as_deref(),
        Some("3.5.16-0")
    );
    assert!(
        components
            .etcd
            .local
            .as_ref()
            .unwrap()
            .extra
            .contains_key("volumeData")
    );
    assert_eq!(
        components.karmada_api_server.as_ref().unwrap().replicas,
        Some(1)
    );
    assert_eq!(
        components
            .karmada_search
            .as_ref()
            .unwrap()
            .image_tag
            .as_deref(),
        Some("v1.14.0")
    );
    assert!(components.karmada_descheduler.is_none());
    assert_eq!(
        k.spec.private_registry.as_ref().unwrap().registry,
        "registry.example.com"
    );
    assert!(k.spec.extra.contains_key("hostCluster"));
    let status = k.status.as_ref().unwrap();
    assert_eq!(
        status.secret_ref.as_ref().unwrap().name,
        "prod-karmada-admin-config"
    );
    assert_eq!(
        status.api_server_service.as_ref().unwrap().name,
        "prod-karmada-apiserver"
    );
    assert_eq!(status.karmada_version.as_deref(), Some("v1.14.0"));
    assert_eq!(k.ready(), Some(true));
    assert!(k.observed_current_generation());

    let mut pending = k.clone();
    pending.metadata.generation = Some(4);
    pending.status.as_mut().unwrap().conditions[0].status = "False".into();
    assert_eq!(pending.ready(), Some(false));
    assert!(!pending.observed_current_generation());
    pending.status = None;
    assert_eq!(pending.ready(), None);
}

const PEDIA_CLUSTER: &str = r#"
apiVersion: cluster.clusterpedia.io/v1alpha2
kind: PediaCluster
metadata:
  name: kairship-prod
spec:
  authenticationFrom:
    kubeconfig:
      name: kairship-prod-kubeconfig
      key: kubeconfig
  syncResources:
  - group: apps
    resources:
    - deployments
  - group: ""
    versions:
    - v1
    resources:
    - services
    - configmaps
  syncAllCustomResources: false
  shardingName: shard-a
status:
  apiserver: https://prod-karmada-apiserver.karmada-prod.svc:5443
  version: v1.31.3
  shardingName: shard-a
  conditions:
  - type: Ready
    status: "True"
    reason: Healthy
    message: cluster is ready
    lastTransitionTime: "2024-05-01T10:00:00Z"
  syncResources:
  - group: apps
    resources:
    - name: deployments
      kind: Deployment
      namespaced: true
      syncConditions: []
"#;

#[test]
fn pedia_cluster_round_trip() {
    let pc: PediaCluster = round_trip(PEDIA_CLUSTER);
    let auth = pc.spec.authentication_from.as_ref().unwrap();
    assert_eq!(
        auth.kubeconfig.as_ref().unwrap().name,
        "kairship-prod-kubeconfig"
    );
    assert_eq!(pc.spec.sync_resources[1].group, "");
    assert_eq!(
        pc.spec.sync_resources[1].resources,
        ["services", "configmaps"]
    );
    assert_eq!(pc.spec.sync_all_custom_resources, Some(false));
    assert!(pc.spec.extra.contains_key("shardingName"));
    let status = pc.status.as_ref().unwrap();
    assert_eq!(status.version.as_deref(), Some("v1.31.3"));
    assert!(status.extra.contains_key("syncResources"));
}

#[test]
fn pedia_cluster_inline_kubeconfig_is_base64_on_the_wire() {
    let pc: PediaCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cluster.clusterpedia.io/v1alpha2", "kind": "PediaCluster",
        "metadata": {"name": "x"},
        "spec": {"kubeconfig": "YXBpVmVyc2lvbjogdjE=", "syncResources": []}
    }))
    .unwrap();
    assert_eq!(pc.spec.kubeconfig.as_ref().unwrap().0, b"apiVersion: v1");
    assert_eq!(
        serde_json::to_value(&pc).unwrap()["spec"]["kubeconfig"],
        "YXBpVmVyc2lvbjogdjE="
    );
}

#[test]
fn resource_identities() {
    fn id<K: Resource<DynamicType = ()>>() -> (String, String, String) {
        (
            K::api_version(&()).into_owned(),
            K::kind(&()).into_owned(),
            K::plural(&()).into_owned(),
        )
    }
    let cases = [
        (
            id::<Cluster>(),
            ("cluster.karmada.io/v1alpha1", "Cluster", "clusters"),
        ),
        (
            id::<PropagationPolicy>(),
            (
                "policy.karmada.io/v1alpha1",
                "PropagationPolicy",
                "propagationpolicies",
            ),
        ),
        (
            id::<ClusterPropagationPolicy>(),
            (
                "policy.karmada.io/v1alpha1",
                "ClusterPropagationPolicy",
                "clusterpropagationpolicies",
            ),
        ),
        (
            id::<OverridePolicy>(),
            (
                "policy.karmada.io/v1alpha1",
                "OverridePolicy",
                "overridepolicies",
            ),
        ),
        (
            id::<ClusterOverridePolicy>(),
            (
                "policy.karmada.io/v1alpha1",
                "ClusterOverridePolicy",
                "clusteroverridepolicies",
            ),
        ),
        (
            id::<ResourceBinding>(),
            (
                "work.karmada.io/v1alpha2",
                "ResourceBinding",
                "resourcebindings",
            ),
        ),
        (
            id::<Karmada>(),
            ("operator.karmada.io/v1alpha1", "Karmada", "karmadas"),
        ),
        (
            id::<PediaCluster>(),
            (
                "cluster.clusterpedia.io/v1alpha2",
                "PediaCluster",
                "pediaclusters",
            ),
        ),
        (
            id::<kairship_core::Instance>(),
            ("kairship.io/v1alpha1", "Instance", "instances"),
        ),
    ];
    for ((api_version, kind, plural), want) in cases {
        assert_eq!((api_version.as_str(), kind.as_str(), plural.as_str()), want);
    }
    // Scopes are part of the type: these only compile with the right scope.
    let _ = kube::core::ApiResource::erase::<Cluster>(&());
    fn cluster_scoped<K: Resource<Scope = kube::core::ClusterResourceScope>>() {}
    fn namespaced<K: Resource<Scope = kube::core::NamespaceResourceScope>>() {}
    cluster_scoped::<Cluster>();
    cluster_scoped::<ClusterPropagationPolicy>();
    cluster_scoped::<ClusterOverridePolicy>();
    cluster_scoped::<PediaCluster>();
    cluster_scoped::<kairship_core::Instance>();
    namespaced::<PropagationPolicy>();
    namespaced::<OverridePolicy>();
    namespaced::<ResourceBinding>();
    namespaced::<Karmada>();
}

// ---- Checks against the upstream CRD YAMLs -------------------------------------------------

/// Where the Karmada and Clusterpedia CRD YAMLs are: `$KAIRSHIP_SHARED_CRDS_DIR`, else
/// `deploy/crds/upstream` in the workspace.
fn shared_crds_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("KAIRSHIP_SHARED_CRDS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/upstream")
        });
    if dir.is_dir() {
        Some(dir)
    } else {
        panic!(
            "no CRD directory at {} (set KAIRSHIP_SHARED_CRDS_DIR)",
            dir.display()
        );
    }
}

fn load_crd(dir: &std::path::Path, file: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

/// The openAPIV3Schema of `version`, after checking group, kind, plural, scope and that the
/// version is served.
fn checked_schema<K: Resource<DynamicType = ()>>(
    crd: &serde_json::Value,
    namespaced: bool,
) -> serde_json::Value {
    let spec = &crd["spec"];
    assert_eq!(spec["group"], K::group(&()).as_ref());
    assert_eq!(spec["names"]["kind"], K::kind(&()).as_ref());
    assert_eq!(spec["names"]["plural"], K::plural(&()).as_ref());
    assert_eq!(
        spec["scope"],
        if namespaced { "Namespaced" } else { "Cluster" }
    );
    let version = spec["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == K::version(&()).as_ref())
        .unwrap_or_else(|| panic!("{} is not a version of {}", K::version(&()), K::kind(&())));
    assert_eq!(
        version["served"],
        true,
        "{} {} is not served",
        K::kind(&()),
        K::version(&())
    );
    version["schema"]["openAPIV3Schema"].clone()
}

/// JSON paths in `value` that the schema does not declare.
fn undeclared_paths(
    value: &serde_json::Value,
    schema: &serde_json::Value,
    path: &str,
    out: &mut Vec<String>,
) {
    match value {
        serde_json::Value::Object(map) => {
            let properties = schema.get("properties").and_then(|p| p.as_object());
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let preserve = schema.get("x-kubernetes-preserve-unknown-fields")
                == Some(&serde_json::Value::Bool(true));
            for (key, child) in map {
                let child_path = format!("{path}.{key}");
                match (properties.and_then(|p| p.get(key)), additional) {
                    (Some(child_schema), _) | (None, Some(child_schema)) => {
                        undeclared_paths(child, child_schema, &child_path, out)
                    }
                    (None, None) if preserve || properties.is_none() => {}
                    (None, None) => out.push(child_path),
                }
            }
        }
        serde_json::Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    undeclared_paths(item, item_schema, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

fn assert_conforms(value: &impl Serialize, schema: &serde_json::Value) {
    let json = serde_json::to_value(value).unwrap();
    let mut bad = Vec::new();
    undeclared_paths(&json, schema, "", &mut bad);
    assert!(bad.is_empty(), "fields not in the CRD schema: {bad:?}");
}

#[test]
fn models_match_the_upstream_crds() {
    let Some(dir) = shared_crds_dir() else { return };
    let policy_schema = checked_schema::<PropagationPolicy>(
        &load_crd(&dir, "karmada/policy.karmada.io_propagationpolicies.yaml"),
        true,
    );
    let pp: PropagationPolicy = serde_saphyr::from_str(PROPAGATION_POLICY).unwrap();
    assert_conforms(&pp, &policy_schema);

    let cpp_schema = checked_schema::<ClusterPropagationPolicy>(
        &load_crd(
            &dir,
            "karmada/policy.karmada.io_clusterpropagationpolicies.yaml",
        ),
        false,
    );
    assert_conforms(
        &ClusterPropagationPolicy::new("x", pp.spec.clone()),
        &cpp_schema,
    );

    let op_schema = checked_schema::<OverridePolicy>(
        &load_crd(&dir, "karmada/policy.karmada.io_overridepolicies.yaml"),
        true,
    );
    let op: OverridePolicy = serde_saphyr::from_str(OVERRIDE_POLICY).unwrap();
    assert_conforms(&op, &op_schema);
    let cop_schema = checked_schema::<ClusterOverridePolicy>(
        &load_crd(
            &dir,
            "karmada/policy.karmada.io_clusteroverridepolicies.yaml",
        ),
        false,
    );
    assert_conforms(
        &ClusterOverridePolicy::new("x", op.spec.clone()),
        &cop_schema,
    );

    let rb_schema = checked_schema::<ResourceBinding>(
        &load_crd(&dir, "karmada/work.karmada.io_resourcebindings.yaml"),
        true,
    );
    let rb: ResourceBinding = serde_saphyr::from_str(RESOURCE_BINDING).unwrap();
    assert_conforms(&rb, &rb_schema);

    let karmada_schema = checked_schema::<Karmada>(
        &load_crd(&dir, "karmada/operator.karmada.io_karmadas.yaml"),
        true,
    );
    let k: Karmada = serde_saphyr::from_str(KARMADA).unwrap();
    assert_conforms(&k, &karmada_schema);
    // What Kairship itself writes for a Provision-mode instance.
    let provision: kairship_core::instance::ProvisionSpec =
        serde_json::from_value(serde_json::json!({
            "karmadaVersion": "v1.14.0", "hostNamespace": "karmada-prod",
            "imageRegistry": "registry.example.com", "imageTags": {"etcd": "3.5.16-0"},
            "components": ["karmadaSearch", "karmadaDescheduler", "karmadaMetricsAdapter"],
            "featureGates": {"Failover": true}
        }))
        .unwrap();
    assert_conforms(
        &kairship_core::lifecycle::operator_karmada("prod", &provision),
        &karmada_schema,
    );

    let pedia_schema = checked_schema::<PediaCluster>(
        &load_crd(
            &dir,
            "clusterpedia/cluster.clusterpedia.io_pediaclusters.yaml",
        ),
        false,
    );
    let pc: PediaCluster = serde_saphyr::from_str(PEDIA_CLUSTER).unwrap();
    assert_conforms(&pc, &pedia_schema);
    let written = kairship_core::virtual_cluster::pedia_cluster(
        "prod",
        kairship_core::virtual_cluster::default_sync_resources(),
    );
    assert_conforms(&written, &pedia_schema);
}

#[test]
fn schema_check_reports_undeclared_fields() {
    // The walker itself: a misspelt field must be reported.
    let schema = serde_json::json!({
        "properties": {"spec": {"properties": {"placement": {"type": "object", "properties": {"clusterAffinity": {}}}}}}
    });
    let mut bad = Vec::new();
    undeclared_paths(
        &serde_json::json!({"spec": {"placement": {"clusterAfinity": {}}}}),
        &schema,
        "",
        &mut bad,
    );
    assert_eq!(bad, [".spec.placement.clusterAfinity"]);
}
