//! The controllers against kube-sandbox: a host cluster holding Instances and Karmada-instance
//! clusters served over loopback HTTP.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kairship_core::controllers::ReadBackend;
use kairship_core::instance::{
    DeletionPolicy, Instance, InstanceMode, InstanceSpec, InstanceState, ProvisionSpec,
};
use kairship_core::models::operator::{Karmada, KarmadaStatus};
use kairship_core::models::pedia::PediaCluster;
use kairship_core::models::policy::{
    ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
};
use kairship_core::models::{NamespacedSecretRef, ObjectCondition};
use kairship_core::rbac::{InstanceRole, SubjectKind, cluster_role_binding};
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, Client, Resource};

fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now())
}

const LIMIT: Duration = Duration::from_secs(20);

fn q(s: &str) -> Quantity {
    Quantity(s.to_owned())
}

async fn create<K>(client: &Client, namespace: Option<&str>, obj: K)
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
{
    let api: Api<K> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::default_namespaced(client.clone()),
    };
    api.create(&PostParams::default(), &obj).await.unwrap();
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    }
}

fn deployment(name: &str, replicas: i32, ready: i32) -> Deployment {
    // A Deployment kube-apiserver accepts: a selector matching the template, a container.
    let mut deployment: Deployment = serde_json::from_value(serde_json::json!({
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}
            }
        }
    }))
    .unwrap();
    deployment.metadata = meta(name);
    if let Some(spec) = deployment.spec.as_mut() {
        spec.replicas = Some(replicas);
    }
    deployment.status = Some(DeploymentStatus {
        ready_replicas: Some(ready),
        ..DeploymentStatus::default()
    });
    deployment
}

/// Objects in the instance's control plane that the summary counts.
async fn populate_objects(instance: &KarmadaInstance) {
    let c = instance.client();
    for (name, replicas, ready) in [("web", 2, 2), ("api", 3, 1)] {
        let api: Api<Deployment> = Api::default_namespaced(c.clone());
        let created = api
            .create(&PostParams::default(), &deployment(name, replicas, ready))
            .await
            .unwrap();
        let mut with_status = created;
        with_status.status = Some(DeploymentStatus {
            ready_replicas: Some(ready),
            observed_generation: with_status.metadata.generation,
            replicas: Some(replicas),
            ..DeploymentStatus::default()
        });
        api.replace_status(name, &PostParams::default(), &with_status)
            .await
            .unwrap();
    }
    create(
        &c,
        None,
        Service {
            metadata: meta("web"),
            ..Service::default()
        },
    )
    .await;
    create(
        &c,
        None,
        ConfigMap {
            metadata: meta("settings"),
            ..ConfigMap::default()
        },
    )
    .await;
    create(
        &c,
        None,
        Secret {
            metadata: meta("token"),
            ..Secret::default()
        },
    )
    .await;
    let pp: Api<PropagationPolicy> = Api::default_namespaced(c.clone());
    for name in ["pp-a", "pp-b"] {
        let obj: PropagationPolicy = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]}
        }))
        .unwrap();
        pp.create(&PostParams::default(), &obj).await.unwrap();
    }
    let cpp: Api<ClusterPropagationPolicy> = Api::all(c.clone());
    let obj: ClusterPropagationPolicy = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "cpp"},
        "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace", "name": "x"}]}
    }))
    .unwrap();
    cpp.create(&PostParams::default(), &obj).await.unwrap();
    let op: Api<OverridePolicy> = Api::default_namespaced(c.clone());
    let obj: OverridePolicy = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "op"}, "spec": {}
    }))
    .unwrap();
    op.create(&PostParams::default(), &obj).await.unwrap();
    let cop: Api<ClusterOverridePolicy> = Api::all(c);
    let obj: ClusterOverridePolicy = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "cop"}, "spec": {}
    }))
    .unwrap();
    cop.create(&PostParams::default(), &obj).await.unwrap();
}

async fn count<K>(api: Api<K>) -> i64
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    i64::try_from(api.list(&ListParams::default()).await.unwrap().items.len()).unwrap()
}

/// A Karmada instance `name` with one ready member `m1`, its kubeconfig in the host Secret
/// `<name>-kubeconfig`.
async fn karmada_with_one_member(hc: &Client, name: &str) -> KarmadaInstance {
    let karmada = KarmadaInstance::start(name).await;
    karmada
        .add_member(&Member::new("m1", true, (1, 1), "1", "1Gi", "110"))
        .await;
    put_kubeconfig_secret(
        hc,
        &format!("{name}-kubeconfig"),
        "kubeconfig",
        &karmada.served.kubeconfig_yaml,
    )
    .await;
    karmada
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adopted_instance_runs_and_sums_its_members() {
    let host = host().await;
    let hc = host.client();
    let karmada = KarmadaInstance::start("prod").await;
    let members = [
        Member::new("m1", true, (3, 3), "12", "48Gi", "330"),
        Member::new("m2", true, (2, 1), "3500m", "16Gi", "220"),
        Member::new("m3", false, (1, 0), "2", "7680Mi", "110"),
    ];
    for m in &members {
        karmada.add_member(m).await;
    }
    populate_objects(&karmada).await;

    let (ctx, stop) = start_manager(&hc, fast_config());
    let instances: Api<Instance> = Api::all(hc.clone());
    instances
        .create(&PostParams::default(), &adopt_instance("prod"))
        .await
        .unwrap();
    // No kubeconfig yet: in process.
    wait_state(&hc, "prod", InstanceState::InProcess, LIMIT).await;
    put_kubeconfig_secret(
        &hc,
        "prod-kubeconfig",
        "kubeconfig",
        &karmada.served.kubeconfig_yaml,
    )
    .await;
    let running = wait_state(&hc, "prod", InstanceState::Running, LIMIT).await;
    let status = running.status.unwrap();
    assert!(status.control_plane_ready);
    let version = karmada
        .client()
        .apiserver_version()
        .await
        .unwrap()
        .git_version;
    assert_eq!(status.kubernetes_version.as_deref(), Some(version.as_str()));

    let kc = karmada.client();
    let services = count(Api::<Service>::all(kc.clone())).await;
    let secrets = count(Api::<Secret>::all(kc.clone())).await;
    let configmaps = count(Api::<ConfigMap>::all(kc.clone())).await;
    let summary = eventually("the summary", LIMIT, || async {
        let i = get_instance(&hc, "prod").await?;
        let s = i.status?.summary?;
        (s.cluster_summary.total_num == 3
            && s.resource_total_num.services == services
            && s.resource_total_num.secrets == secrets
            && s.resource_total_num.configmaps == configmaps
            && s.workload_summary.deployments.total_num == 2)
            .then_some(s)
    })
    .await;
    assert_eq!(
        (
            summary.cluster_summary.total_num,
            summary.cluster_summary.ready_num
        ),
        (3, 2)
    );
    assert_eq!(
        (
            summary.node_summary.total_num,
            summary.node_summary.ready_num
        ),
        (6, 4)
    );
    let allocatable = &summary.resource_summary.allocatable;
    assert_eq!(allocatable["cpu"], q("17500m"));
    // 48Gi + 16Gi + 7680Mi
    assert_eq!(
        allocatable["memory"],
        q(&format!("{}Mi", 48 * 1024 + 16 * 1024 + 7680))
    );
    assert_eq!(allocatable["pods"], q("660"));
    assert_eq!(summary.resource_summary.allocated["cpu"], q("300m"));
    assert_eq!(summary.workload_summary.deployments.ready_num, 1);
    assert_eq!(summary.policy_total_num.propagationpolicies, 3);
    assert_eq!(summary.policy_total_num.overridepolicies, 2);
    assert_eq!(summary.resource_total_num.persistentvolumeclaims, 0);

    // A member's status change reaches the summary.
    let mut grown = members[2].clone();
    grown.ready = true;
    grown.nodes = (4, 4);
    grown.cpu = "6".into();
    karmada.set_member(&grown).await;
    let updated = eventually("the summary to follow the member", LIMIT, || async {
        let s = get_instance(&hc, "prod").await?.status?.summary?;
        (s.cluster_summary.ready_num == 3).then_some(s)
    })
    .await;
    assert_eq!(
        (
            updated.node_summary.total_num,
            updated.node_summary.ready_num
        ),
        (9, 8)
    );
    assert_eq!(updated.resource_summary.allocatable["cpu"], q("21500m"));

    // A change that leaves the summary as it is writes nothing.
    let before = get_instance(&hc, "prod").await.unwrap();
    let passes = ctx.writes.statistics_passes();
    let mut labelled = karmada.clusters().get("m1").await.unwrap();
    labelled
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert("team".into(), "blue".into());
    karmada
        .clusters()
        .replace("m1", &PostParams::default(), &labelled)
        .await
        .unwrap();
    eventually("a statistics pass", LIMIT, || async {
        (ctx.writes.statistics_passes() > passes).then_some(())
    })
    .await;
    let after = get_instance(&hc, "prod").await.unwrap();
    // The resourceVersion, not the write counter: the previous pass's write is visible to a
    // GET before that pass counts it, so a counter read here could still be one behind.
    assert_eq!(
        after.metadata.resource_version, before.metadata.resource_version,
        "the Instance was not written"
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unreachable_instance_becomes_unavailable_and_recovers() {
    let host = host().await;
    let hc = host.client();
    let karmada = karmada_with_one_member(&hc, "edge").await;
    let (_ctx, stop) = start_manager(&hc, fast_config());
    Api::<Instance>::all(hc.clone())
        .create(&PostParams::default(), &adopt_instance("edge"))
        .await
        .unwrap();
    wait_state(&hc, "edge", InstanceState::Running, LIMIT).await;

    let fault = karmada.cluster.faults().add(kube_sandbox::FaultRule::all(
        kube_sandbox::FaultAction::Status(503),
    ));
    let down = wait_state(&hc, "edge", InstanceState::Unavailable, LIMIT).await;
    let status = down.status.unwrap();
    assert_eq!(
        status.consecutive_probe_failures, 3,
        "the configured threshold"
    );
    assert!(!status.control_plane_ready);
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ControlPlaneUnreachable")
    );

    karmada.cluster.faults().remove(fault);
    let up = wait_state(&hc, "edge", InstanceState::Running, LIMIT).await;
    assert_eq!(up.status.unwrap().consecutive_probe_failures, 0);
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn provision_creates_the_operator_object_and_follows_it() {
    let host = host().await;
    let hc = host.client();
    ensure_namespace(&hc, "karmada-prod").await;
    let karmada = KarmadaInstance::start("managed").await;
    let (_ctx, stop) = start_manager(&hc, fast_config());
    let instance = Instance::new(
        "managed",
        InstanceSpec {
            mode: InstanceMode::Provision,
            kubeconfig_secret_ref: None,
            provision: Some(ProvisionSpec {
                karmada_version: "v1.14.0".into(),
                host_namespace: "karmada-prod".into(),
                image_registry: None,
                image_tags: BTreeMap::new(),
                components: vec![],
                feature_gates: BTreeMap::new(),
            }),
            alias: None,
            deletion_policy: DeletionPolicy::Delete,
        },
    );
    Api::<Instance>::all(hc.clone())
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    let karmadas: Api<Karmada> = Api::namespaced(hc.clone(), "karmada-prod");
    let created = eventually("the operator's Karmada object", LIMIT, || async {
        karmadas.get_opt("managed").await.unwrap()
    })
    .await;
    let components = created.spec.components.as_ref().unwrap();
    assert_eq!(
        components
            .karmada_scheduler
            .as_ref()
            .unwrap()
            .image_tag
            .as_deref(),
        Some("v1.14.0")
    );

    // The operator is still installing.
    let mut installing = created.clone();
    installing.status = Some(KarmadaStatus {
        conditions: vec![ObjectCondition {
            type_: "Ready".into(),
            status: "False".into(),
            reason: Some("Installing".into()),
            message: Some("installing etcd".into()),
            last_transition_time: Some(now()),
            ..ObjectCondition::default()
        }],
        ..KarmadaStatus::default()
    });
    karmadas
        .replace_status("managed", &PostParams::default(), &installing)
        .await
        .unwrap();
    eventually("Provisioned=False from the operator", LIMIT, || async {
        let s = get_instance(&hc, "managed").await?.status?;
        let c = s.conditions.iter().find(|c| c.type_ == "Provisioned")?;
        (c.status == "False"
            && c.message == "installing etcd"
            && s.state == InstanceState::InProcess)
            .then_some(())
    })
    .await;

    // The operator finishes and publishes the admin kubeconfig.
    put_kubeconfig_secret(
        &hc,
        "managed-admin",
        "karmada.config",
        &karmada.served.kubeconfig_yaml,
    )
    .await;
    let mut done = karmadas.get("managed").await.unwrap();
    done.status = Some(KarmadaStatus {
        conditions: vec![ObjectCondition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: Some("Completed".into()),
            message: Some("Karmada is installed".into()),
            last_transition_time: Some(now()),
            ..ObjectCondition::default()
        }],
        secret_ref: Some(NamespacedSecretRef {
            namespace: KAIRSHIP_NS.into(),
            name: "managed-admin".into(),
            ..NamespacedSecretRef::default()
        }),
        karmada_version: Some("v1.14.0".into()),
        ..KarmadaStatus::default()
    });
    karmadas
        .replace_status("managed", &PostParams::default(), &done)
        .await
        .unwrap();
    let running = wait_state(&hc, "managed", InstanceState::Running, LIMIT).await;
    let status = running.status.unwrap();
    assert_eq!(status.karmada_version.as_deref(), Some("v1.14.0"));
    assert!(status.kubernetes_version.is_some());
    let provisioned = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Provisioned")
        .unwrap();
    assert_eq!(provisioned.status, "True");

    // Deleting (no members) releases the operator object (deletionPolicy Delete).
    Api::<Instance>::all(hc.clone())
        .delete("managed", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Instance to go", LIMIT, || async {
        get_instance(&hc, "managed").await.is_none().then_some(())
    })
    .await;
    assert!(karmadas.get_opt("managed").await.unwrap().is_none());
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn delete_is_refused_with_members_and_cleans_up_without() {
    let host = host().await;
    let hc = host.client();
    ensure_namespace(&hc, "clusterpedia-system").await;
    let karmada = karmada_with_one_member(&hc, "shared").await;
    let mut config = fast_config();
    config.read_backend = ReadBackend::Clusterpedia {
        namespace: "clusterpedia-system".into(),
    };
    let (_ctx, stop) = start_manager(&hc, config);
    let instances: Api<Instance> = Api::all(hc.clone());
    instances
        .create(&PostParams::default(), &adopt_instance("shared"))
        .await
        .unwrap();
    wait_state(&hc, "shared", InstanceState::Running, LIMIT).await;

    // Registered with Clusterpedia, roles created; an IAM binding exists.
    let pedias: Api<PediaCluster> = Api::all(hc.clone());
    let pedia = eventually("the PediaCluster", LIMIT, || async {
        pedias.get_opt("kairship-shared").await.unwrap()
    })
    .await;
    let secret_name = &pedia
        .spec
        .authentication_from
        .unwrap()
        .kubeconfig
        .unwrap()
        .name;
    let pedia_secrets: Api<Secret> = Api::namespaced(hc.clone(), "clusterpedia-system");
    assert!(pedia_secrets.get_opt(secret_name).await.unwrap().is_some());
    let roles: Api<ClusterRole> = Api::all(hc.clone());
    eventually("the instance roles", LIMIT, || async {
        let r = roles
            .get_opt("kairship:instance:shared:view")
            .await
            .unwrap()?;
        roles
            .get_opt("kairship:instance:shared:admin")
            .await
            .unwrap()
            .map(|_| r)
    })
    .await;
    let bindings: Api<ClusterRoleBinding> = Api::all(hc.clone());
    let binding = cluster_role_binding("shared", InstanceRole::Edit, SubjectKind::User, "alice");
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();

    // Members remain: refused with a clear condition.
    instances
        .delete("shared", &DeleteParams::default())
        .await
        .unwrap();
    let blocked = eventually("DeletionBlocked", LIMIT, || async {
        let s = get_instance(&hc, "shared").await?.status?;
        s.conditions
            .iter()
            .find(|c| c.type_ == "DeletionBlocked" && c.status == "True")
            .cloned()
    })
    .await;
    assert_eq!(blocked.reason, "MemberClustersPresent");
    let status = wait_state(&hc, "shared", InstanceState::Terminal, LIMIT)
        .await
        .status
        .unwrap();
    assert_eq!(
        status.phase,
        Some(kairship_core::instance::InstancePhase::DeletionBlocked)
    );
    assert!(
        blocked.message.contains("1 member cluster"),
        "{}",
        blocked.message
    );
    assert!(
        pedias.get_opt("kairship-shared").await.unwrap().is_some(),
        "kept while blocked"
    );

    // The last member leaves: the delete completes and everything Kairship made is gone.
    karmada
        .clusters()
        .delete("m1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Instance to go", LIMIT, || async {
        get_instance(&hc, "shared").await.is_none().then_some(())
    })
    .await;
    assert!(pedias.get_opt("kairship-shared").await.unwrap().is_none());
    assert!(pedia_secrets.get_opt(secret_name).await.unwrap().is_none());
    for role in ["admin", "edit", "view"] {
        let name = format!("kairship:instance:shared:{role}");
        assert!(roles.get_opt(&name).await.unwrap().is_none(), "{name}");
    }
    let name = binding.metadata.name.unwrap();
    assert!(bindings.get_opt(&name).await.unwrap().is_none());
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn force_annotation_deletes_despite_members() {
    let host = host().await;
    let hc = host.client();
    let karmada = karmada_with_one_member(&hc, "forced").await;
    let (_ctx, stop) = start_manager(&hc, fast_config());
    let instances: Api<Instance> = Api::all(hc.clone());
    let mut instance = adopt_instance("forced");
    instance.metadata.annotations = Some(BTreeMap::from([(
        "kairship.io/force-delete".to_owned(),
        "true".to_owned(),
    )]));
    instances
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    wait_state(&hc, "forced", InstanceState::Running, LIMIT).await;
    instances
        .delete("forced", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Instance to go", LIMIT, || async {
        get_instance(&hc, "forced").await.is_none().then_some(())
    })
    .await;
    assert_eq!(
        karmada
            .clusters()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1,
        "members untouched"
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hanging_instance_does_not_delay_the_others() {
    let host = host().await;
    let hc = host.client();
    let slow = KarmadaInstance::start("slow").await;
    let fast = KarmadaInstance::start("fast").await;
    let member = Member::new("m1", true, (1, 1), "1", "1Gi", "110");
    fast.add_member(&member).await;
    slow.cluster.faults().add(kube_sandbox::FaultRule::all(
        kube_sandbox::FaultAction::Hang,
    ));
    for (name, k) in [("slow", &slow), ("fast", &fast)] {
        put_kubeconfig_secret(
            &hc,
            &format!("{name}-kubeconfig"),
            "kubeconfig",
            &k.served.kubeconfig_yaml,
        )
        .await;
    }
    let (_ctx, stop) = start_manager(&hc, fast_config());
    let instances: Api<Instance> = Api::all(hc.clone());
    for name in ["slow", "fast"] {
        instances
            .create(&PostParams::default(), &adopt_instance(name))
            .await
            .unwrap();
    }
    wait_state(&hc, "fast", InstanceState::Running, LIMIT).await;
    let mut grown = member.clone();
    grown.nodes = (7, 7);
    fast.set_member(&grown).await;
    eventually("the fast instance's summary", LIMIT, || async {
        let s = get_instance(&hc, "fast").await?.status?.summary?;
        (s.node_summary.total_num == 7).then_some(())
    })
    .await;
    let slow_state = get_instance(&hc, "slow")
        .await
        .unwrap()
        .status
        .map(|s| s.state);
    assert_ne!(slow_state, Some(InstanceState::Running));
    wait_state(&hc, "slow", InstanceState::Unavailable, LIMIT).await;
    stop.cancel();
    slow.cluster.shutdown();
}

/// Whether the host's RBAC lets `user` `get` the instance `name` (on `instances`, in
/// `namespace` when given, as a RoleBinding would grant it).
async fn may_get_instance(host: &Client, user: &str, name: &str, namespace: Option<&str>) -> bool {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            resource_attributes: Some(ResourceAttributes {
                group: Some("kairship.io".into()),
                resource: Some("instances".into()),
                name: Some(name.into()),
                namespace: namespace.map(str::to_owned),
                verb: Some("get".into()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer = Api::<SubjectAccessReview>::all(host.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    answer.status.unwrap().allowed
}

fn role_ref(role: &str) -> k8s_openapi::api::rbac::v1::RoleRef {
    k8s_openapi::api::rbac::v1::RoleRef {
        api_group: "rbac.authorization.k8s.io".into(),
        kind: "ClusterRole".into(),
        name: role.into(),
    }
}

fn user(name: &str) -> Option<Vec<k8s_openapi::api::rbac::v1::Subject>> {
    Some(vec![k8s_openapi::api::rbac::v1::Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "User".into(),
        name: name.into(),
        namespace: None,
    }])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleting_an_instance_deletes_every_binding_to_its_roles() {
    use k8s_openapi::api::rbac::v1::RoleBinding;
    let host = host().await;
    let hc = host.client();
    ensure_namespace(&hc, "team-a").await;
    let karmada = KarmadaInstance::start("reborn").await;
    register_adopted(&hc, "reborn", &karmada).await;
    let (_ctx, stop) = start_manager(&hc, fast_config());
    let roles: Api<ClusterRole> = Api::all(hc.clone());
    let view = "kairship:instance:reborn:view";
    eventually("the instance roles", LIMIT, || async {
        roles.get_opt(view).await.unwrap()
    })
    .await;

    // Ordinary bindings, as access.md tells users to write them, and two that are not the
    // instance's.
    let crbs: Api<ClusterRoleBinding> = Api::all(hc.clone());
    let rbs: Api<RoleBinding> = Api::namespaced(hc.clone(), "team-a");
    let crb = |name: &str, role: &str, subject: &str| ClusterRoleBinding {
        metadata: meta(name),
        role_ref: role_ref(role),
        subjects: user(subject),
    };
    let rb = |name: &str, role: &str, subject: &str| RoleBinding {
        metadata: meta(name),
        role_ref: role_ref(role),
        subjects: user(subject),
    };
    for binding in [
        crb("reborn-viewer-bob", view, "bob"),
        crb("unrelated", "view", "bob"),
    ] {
        crbs.create(&PostParams::default(), &binding).await.unwrap();
    }
    for binding in [
        rb("reborn-viewer-carol", view, "carol"),
        rb("unrelated", "view", "carol"),
    ] {
        rbs.create(&PostParams::default(), &binding).await.unwrap();
    }
    assert!(may_get_instance(&hc, "bob", "reborn", None).await);
    assert!(may_get_instance(&hc, "carol", "reborn", Some("team-a")).await);

    Api::<Instance>::all(hc.clone())
        .delete("reborn", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Instance to go", LIMIT, || async {
        get_instance(&hc, "reborn").await.is_none().then_some(())
    })
    .await;
    assert!(crbs.get_opt("reborn-viewer-bob").await.unwrap().is_none());
    assert!(rbs.get_opt("reborn-viewer-carol").await.unwrap().is_none());
    assert!(crbs.get_opt("unrelated").await.unwrap().is_some());
    assert!(rbs.get_opt("unrelated").await.unwrap().is_some());
    assert!(roles.get_opt(view).await.unwrap().is_none());

    // A new instance of the same name gets roles of the same names, and grants the old
    // subjects nothing.
    Api::<Instance>::all(hc.clone())
        .create(&PostParams::default(), &adopt_instance("reborn"))
        .await
        .unwrap();
    eventually("the new instance's roles", LIMIT, || async {
        roles.get_opt(view).await.unwrap()
    })
    .await;
    assert!(!may_get_instance(&hc, "bob", "reborn", None).await);
    assert!(!may_get_instance(&hc, "carol", "reborn", Some("team-a")).await);
    stop.cancel();
}

/// The Ready condition of instance `name` once its message satisfies `check`.
async fn ready_condition(
    host: &Client,
    name: &str,
    check: impl Fn(&str) -> bool,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    eventually(&format!("the Ready condition of {name}"), LIMIT, || async {
        let status = get_instance(host, name).await?.status?;
        status
            .conditions
            .into_iter()
            .find(|c| c.type_ == "Ready" && check(&c.message))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adopt_credentials_name_the_secret_and_key_without_fallback() {
    let host = host().await;
    let hc = host.client();
    let karmada = KarmadaInstance::start("creds").await;
    let kubeconfig = karmada.served.kubeconfig_yaml.clone();
    let (_ctx, stop) = start_manager(&hc, fast_config());
    let instances: Api<Instance> = Api::all(hc.clone());
    let with_key = |name: &str, key: Option<&str>| {
        let mut instance = adopt_instance(name);
        if let Some(r) = instance.spec.kubeconfig_secret_ref.as_mut() {
            r.key = key.map(str::to_owned);
        }
        instance
    };

    // The named key is missing although another usable one exists: no fallback, named.
    put_kubeconfig_secret(&hc, "keyed-kubeconfig", "kubeconfig", &kubeconfig).await;
    instances
        .create(&PostParams::default(), &with_key("keyed", Some("mine")))
        .await
        .unwrap();
    // No Secret at all.
    instances
        .create(
            &PostParams::default(),
            &with_key("absent", Some("kubeconfig")),
        )
        .await
        .unwrap();
    // No key given: the documented fallback keys apply.
    put_kubeconfig_secret(&hc, "fallback-kubeconfig", "karmada.config", &kubeconfig).await;
    instances
        .create(&PostParams::default(), &with_key("fallback", None))
        .await
        .unwrap();

    let keyed = ready_condition(&hc, "keyed", |m| m.contains("Secret")).await;
    assert_eq!(keyed.reason, "WaitingForCredentials");
    assert_eq!(
        keyed.message,
        r#"Secret kairship-system/keyed-kubeconfig has no key "mine""#
    );
    let absent = ready_condition(&hc, "absent", |m| m.contains("Secret")).await;
    assert_eq!(absent.reason, "WaitingForCredentials");
    assert_eq!(
        absent.message,
        r#"Secret kairship-system/absent-kubeconfig not found (key "kubeconfig")"#
    );
    let running = wait_state(&hc, "fallback", InstanceState::Running, LIMIT).await;
    // `/version` of Karmada's API server is its Kubernetes version; no component Deployment
    // on this host names the Karmada release, so that is unknown.
    let version = karmada
        .client()
        .apiserver_version()
        .await
        .unwrap()
        .git_version;
    let status = running.status.unwrap();
    assert_eq!(status.kubernetes_version.as_deref(), Some(version.as_str()));
    assert_eq!(status.karmada_version, None);
    let keyed = get_instance(&hc, "keyed").await.unwrap().status.unwrap();
    assert_eq!(
        keyed.state,
        InstanceState::InProcess,
        "never read another key"
    );
    stop.cancel();
}

/// Karmada's component Deployment on the host, as the Helm chart and `karmadactl init` run it.
async fn karmada_component(hc: &Client, namespace: &str, image: &str) {
    ensure_namespace(hc, namespace).await;
    let labels = serde_json::json!({"app": "karmada-controller-manager"});
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "karmada-controller-manager", "labels": labels},
        "spec": {"selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "karmada-controller-manager", "image": image}]}}}
    }))
    .unwrap();
    Api::<Deployment>::namespaced(hc.clone(), namespace)
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adopted_instance_reports_the_karmada_release_not_the_kubernetes_version() {
    let host = host().await;
    let hc = host.client();
    let karmada = karmada_with_one_member(&hc, "released").await;
    // A second Karmada whose components run in a namespace of their own, named by the
    // annotation.
    let other = karmada_with_one_member(&hc, "elsewhere").await;
    karmada_component(
        &hc,
        "karmada-system",
        "docker.io/karmada/karmada-controller-manager:v1.19.0",
    )
    .await;
    karmada_component(
        &hc,
        "karmada-edge",
        "registry.example/karmada/karmada-controller-manager:v1.18.2",
    )
    .await;
    let (_ctx, stop) = start_manager(&hc, fast_config());
    let instances: Api<Instance> = Api::all(hc.clone());
    instances
        .create(&PostParams::default(), &adopt_instance("released"))
        .await
        .unwrap();
    let mut annotated = adopt_instance("elsewhere");
    annotated.metadata.annotations = Some(BTreeMap::from([(
        "kairship.io/karmada-namespace".to_owned(),
        "karmada-edge".to_owned(),
    )]));
    instances
        .create(&PostParams::default(), &annotated)
        .await
        .unwrap();
    for (name, cluster, release) in [
        ("released", &karmada, "v1.19.0"),
        ("elsewhere", &other, "v1.18.2"),
    ] {
        let kubernetes = cluster
            .client()
            .apiserver_version()
            .await
            .unwrap()
            .git_version;
        assert_ne!(kubernetes, release);
        let status = eventually("the Karmada release in the status", LIMIT, || async {
            get_instance(&hc, name)
                .await?
                .status
                .filter(|s| s.karmada_version.is_some() && s.kubernetes_version.is_some())
        })
        .await;
        assert_eq!(status.karmada_version.as_deref(), Some(release), "{name}");
        assert_eq!(
            status.kubernetes_version.as_deref(),
            Some(kubernetes.as_str()),
            "{name}"
        );
    }
    stop.cancel();
}
