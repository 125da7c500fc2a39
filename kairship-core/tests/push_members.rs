//! Push members as a real Karmada treats them, over real HTTP: a sandbox host with an
//! Adopt-mode Instance whose kubeconfig is the least-privilege identity of
//! docs/kairship/access.md, a sandbox Karmada instance serving the cluster proxy and running
//! the emulated cluster-status controller and execution-space handling, sandbox members
//! recording reads in their audit trail, and the Kairship API in front.
//!
//! Member reads carry the caller (the member's own RBAC decides, its audit names the caller);
//! the member's impersonator may impersonate only who holds the cluster proxy, never
//! `system:masters`; an unjoin waits for Karmada to clean the member before removing the
//! join's objects, and a forced unjoin of an unreachable member completes and says what stays.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use api_fixture::{ApiEnv, P};
use async_trait::async_trait;
use base64::Engine as _;
use common::{KarmadaInstance, eventually, install_karmada_crds};
use http::StatusCode;
use kairship_core::access::{
    AccessError, Authenticator, Authorizer, Caller, InstanceResource, Verb, WriteIdentity,
};
use kairship_core::api::ServiceConfig;
use kairship_core::karmada_sim::{cluster_proxy, cluster_status, execution_space};
use kube::api::{ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};
use kube_sandbox::{ClusterOptions, ServeOptions, Served, SimNode, UserInfo};
use serde_json::{Value, json};

const INSTANCE: &str = "inst-p";
const LABEL: &str = "kairship.io/member-cluster";
/// Kairship's identity in the instance (docs/kairship/access.md, `kairship-gateway`).
const KAIRSHIP_TOKEN: &str = "kairship-identity-token";
const IMPERSONATOR: &str = "system:serviceaccount:karmada-cluster:karmada-impersonator";

/// Kairship's callers: `alice` administers, `editor` and `viewer` read inside the instance.
struct Callers;

#[async_trait]
impl Authenticator for Callers {
    async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
        match token {
            "alice" => Ok(Caller::new(token, vec![])),
            // Readers with uids: member reads need no `uids` impersonation right.
            "editor" | "viewer" => {
                let mut caller = Caller::new(token, vec![]);
                caller.uid = Some(format!("uid-{token}"));
                Ok(caller)
            }
            _ => Err(AccessError::Unauthenticated("unknown token".into())),
        }
    }
}

#[async_trait]
impl Authorizer for Callers {
    async fn allowed(
        &self,
        caller: &Caller,
        verb: Verb,
        _: InstanceResource,
        _: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(caller.user == "alice" || !verb.is_write())
    }
}

fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn dynamic(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

async fn create(client: &Client, resource: &ApiResource, ns: Option<&str>, body: Value) {
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    api.create(&PostParams::default(), &dynamic(body))
        .await
        .unwrap();
}

fn cluster_roles() -> ApiResource {
    ar(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
    )
}

fn cluster_role_bindings() -> ApiResource {
    ar(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
    )
}

/// A ClusterRole `name` with `rules`, bound to the users `users`.
async fn grant(client: &Client, name: &str, rules: Value, users: &[&str]) {
    create(
        client,
        &cluster_roles(),
        None,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name}, "rules": rules}),
    )
    .await;
    let subjects: Vec<Value> = users
        .iter()
        .map(|u| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u}))
        .collect();
    create(
        client,
        &cluster_role_bindings(),
        None,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": name}, "subjects": subjects,
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}}),
    )
    .await;
}

struct Member {
    cluster: kube_sandbox::Cluster,
    served: Served,
}

impl Member {
    /// A member whose audit trail records reads; `editor` may read everything in it, `viewer`
    /// nothing (the member's own RBAC).
    async fn start(name: &str) -> Member {
        let cluster = kube_sandbox::Cluster::with_options(
            name,
            ClusterOptions {
                workload_controllers: true,
                audit_reads: true,
                ..ClusterOptions::default()
            },
        );
        cluster
            .add_node(&SimNode::new(&format!("{name}-node-1"), "4", "8Gi"))
            .unwrap();
        grant(
            &cluster.client(),
            "member-readers",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]),
            &["editor"],
        )
        .await;
        create(
            &cluster.client(),
            &ar("", "v1", "Namespace", "namespaces"),
            None,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}),
        )
        .await;
        let served = cluster.serve(ServeOptions::default()).await.unwrap();
        Member { cluster, served }
    }

    fn client(&self) -> Client {
        self.cluster.client()
    }

    /// `Kind namespace/name` of every object in the member carrying the join's label, the
    /// `karmada.io/managed` label, or one of the impersonator's names.
    async fn left_by(&self, cluster: &str) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for resource in [
            ar("", "v1", "Namespace", "namespaces"),
            ar("", "v1", "ServiceAccount", "serviceaccounts"),
            ar("", "v1", "Secret", "secrets"),
            ar("", "v1", "ConfigMap", "configmaps"),
            cluster_roles(),
            cluster_role_bindings(),
        ] {
            let api: Api<DynamicObject> = Api::all_with(self.client(), &resource);
            for o in api.list(&ListParams::default()).await.unwrap().items {
                let labels = o.metadata.labels.clone().unwrap_or_default();
                let name = o.metadata.name.clone().unwrap();
                let ours = labels.get(LABEL).is_some_and(|c| c == cluster)
                    || labels
                        .get("karmada.io/managed")
                        .is_some_and(|v| v == "true")
                    || name.starts_with("karmada-");
                if ours {
                    found.insert(match o.metadata.namespace {
                        Some(ns) => format!("{} {ns}/{name}", resource.kind),
                        None => format!("{} {name}", resource.kind),
                    });
                }
            }
        }
        found
    }
}

type Env = ApiEnv;

impl ApiEnv {
    async fn start() -> Env {
        Self::start_with(ServiceConfig::default().unjoin_wait).await
    }

    /// The environment, unjoins waiting at most `unjoin_wait` for Karmada.
    async fn start_with(unjoin_wait: Duration) -> Env {
        let instance = KarmadaInstance::start_with(
            INSTANCE,
            cluster_proxy::with_cluster_proxy(ClusterOptions::default()),
        )
        .await;
        let admin = instance.client();
        install_karmada_crds(
            &admin,
            &[
                "work.karmada.io_resourcebindings.yaml",
                "work.karmada.io_clusterresourcebindings.yaml",
                "work.karmada.io_works.yaml",
            ],
        )
        .await;
        // Kairship's identity: impersonation and reads only (docs/kairship/access.md).
        instance
            .cluster
            .auth()
            .add_token(KAIRSHIP_TOKEN, UserInfo::new("kairship", &[]));
        grant(
            &admin,
            "kairship-gateway",
            json!([
                {"apiGroups": [""], "resources": ["users", "groups"], "verbs": ["impersonate"]},
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
            ]),
            &["kairship"],
        )
        .await;
        // Inside the instance: alice administers; viewer and editor may use the cluster proxy.
        grant(
            &admin,
            "alice-admin",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
            &["alice"],
        )
        .await;
        grant(
            &admin,
            "cluster-proxy",
            json!([{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/proxy"], "verbs": ["get", "list", "watch"]}]),
            &["viewer", "editor"],
        )
        .await;
        let kubeconfig = instance
            .served
            .kubeconfig_yaml
            .replace(instance.cluster.admin_token(), KAIRSHIP_TOKEN);
        assert_ne!(kubeconfig, instance.served.kubeconfig_yaml);
        let env = ApiEnv::builder(INSTANCE)
            .instance(instance)
            .kubeconfig(kubeconfig)
            .callers(Arc::new(Callers), Arc::new(Callers))
            .user_agent("kairship-push-members-test")
            .write_identity(WriteIdentity::Impersonate)
            .with_proxy()
            .without_grpc()
            .config(ServiceConfig {
                unjoin_wait,
                ..ServiceConfig::default()
            })
            .start()
            .await;
        cluster_status::spawn(admin.clone(), Duration::from_millis(300), env.stop.clone());
        execution_space::spawn(admin, Duration::from_millis(300), env.stop.clone());
        env
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        self.call_as(method, path, token, body).await
    }

    /// Joins `member` as `name` (as alice) and waits until it is Ready.
    async fn join(&self, name: &str, member: &Member) -> Value {
        let (status, cluster) = self
            .call(
                "POST",
                &format!("{P}/instances/{INSTANCE}/clusters:join"),
                "alice",
                Some(json!({"name": name, "kubeconfig": member.served.kubeconfig_yaml})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{cluster}");
        let clusters = self.clusters();
        eventually("the member to be Ready", Duration::from_secs(30), || {
            let clusters = clusters.clone();
            async move {
                let c = serde_json::to_value(clusters.get(name).await.ok()?).unwrap();
                execution_space::is_ready(&c).then_some(())
            }
        })
        .await;
        cluster
    }

    fn clusters(&self) -> Api<DynamicObject> {
        Api::all_with(
            self.instance.client(),
            &ar("cluster.karmada.io", "v1alpha1", "Cluster", "clusters"),
        )
    }

    /// A Work in the execution space of `cluster` applying ConfigMap `demo/<name>`, and that
    /// ConfigMap in the member as Karmada's execution controller applies it (its labels and
    /// annotations, as in the recorded member objects of a real Karmada).
    async fn propagated_config_map(&self, cluster: &str, member: &Member, name: &str) {
        let space = execution_space::execution_space(cluster);
        let id = format!("{name}-permanent-id");
        let labels = json!({"karmada.io/managed": "true", "work.karmada.io/permanent-id": id});
        let annotations = json!({"work.karmada.io/name": name, "work.karmada.io/namespace": space,
                                 "work.karmada.io/conflict-resolution": "abort"});
        let manifest = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "demo", "labels": labels, "annotations": annotations},
            "data": {"k": "v"}});
        let spaces = Api::<DynamicObject>::all_with(
            self.instance.client(),
            &ar("", "v1", "Namespace", "namespaces"),
        );
        eventually("the execution space", Duration::from_secs(10), || async {
            spaces.get_opt(&space).await.unwrap().map(|_| ())
        })
        .await;
        create(
            &self.instance.client(),
            &ar("work.karmada.io", "v1alpha1", "Work", "works"),
            Some(&space),
            json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                   "metadata": {"name": name, "namespace": space,
                                "labels": {"work.karmada.io/permanent-id": id},
                                "finalizers": [execution_space::EXECUTION_FINALIZER]},
                   "spec": {"workload": {"manifests": [manifest]}}}),
        )
        .await;
        create(
            &member.client(),
            &ar("", "v1", "ConfigMap", "configmaps"),
            Some("demo"),
            manifest,
        )
        .await;
    }
}

fn audit_of<'a>(
    member: &'a Member,
    resource: &'a str,
    user: &'a str,
) -> impl Iterator<Item = kube_sandbox::apiserver::audit::AuditEvent> + 'a {
    member
        .cluster
        .audit_events()
        .into_iter()
        .filter(move |e| e.resource == resource && e.verb == "list" && e.user == user)
}

#[tokio::test]
async fn member_reads_are_the_callers_and_the_impersonator_names_only_proxy_users() {
    let env = Env::start().await;
    let member = Member::start("member-r").await;
    env.join("m1", &member).await;

    // The editor reads the member's nodes: the member answers for the editor.
    let path = format!("{P}/instances/{INSTANCE}/clusters/m1/nodes");
    let (status, nodes) = env.call("GET", &path, "editor", None).await;
    assert_eq!(status, StatusCode::OK, "{nodes}");
    assert_eq!(nodes["items"][0]["metadata"]["name"], "member-r-node-1");
    let read = audit_of(&member, "nodes", "editor").next().unwrap();
    assert_eq!(read.code, 200);
    assert_eq!(read.impersonated_by.as_deref(), Some(IMPERSONATOR));
    assert_eq!(read.groups, ["system:authenticated"]);
    // The viewer may use the instance and its cluster proxy, but the member refuses it.
    let (status, refused) = env.call("GET", &path, "viewer", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("User \"viewer\" cannot list resource \"nodes\""),
        "{refused}"
    );
    let refusal = audit_of(&member, "nodes", "viewer").next().unwrap();
    assert_eq!(refusal.code, 403);
    // Through the native proxy too: Karmada's cluster proxy is asked as the caller.
    let native = format!(
        "{P}/instances/{INSTANCE}/proxy/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/nodes"
    );
    let (status, nodes) = env.call("GET", &native, "editor", None).await;
    assert_eq!(status, StatusCode::OK, "{nodes}");
    assert_eq!(audit_of(&member, "nodes", "editor").count(), 2);
    let (status, refused) = env.call("GET", &native, "viewer", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    // Nobody read the member as Kairship's own identity.
    assert_eq!(audit_of(&member, "nodes", "kairship").count(), 0);
    // Workload pods too: the editor's list of a member's pods is the editor's.
    let (status, listed) = env
        .call(
            "GET",
            &format!("{P}/instances/{INSTANCE}/clusters/m1/namespaces/demo/resources/core/v1/pods"),
            "editor",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert!(audit_of(&member, "pods", "editor").next().is_some());

    // The impersonator's rules name exactly who holds the cluster proxy in the instance.
    let role = Api::<DynamicObject>::all_with(member.client(), &cluster_roles())
        .get("karmada-impersonator")
        .await
        .unwrap();
    let rules = &role.data["rules"];
    let names = |resource: &str| -> Vec<String> {
        rules
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["resources"][0] == resource)
            .flat_map(|r| r["resourceNames"].as_array().unwrap().clone())
            .map(|n| n.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("users"), ["alice", "editor", "kairship", "viewer"]);
    assert!(!names("groups").contains(&"system:masters".to_owned()));
    let binding = Api::<DynamicObject>::all_with(member.client(), &cluster_role_bindings())
        .get("karmada-impersonator")
        .await
        .unwrap();
    assert_eq!(
        binding.data["subjects"],
        json!([{"kind": "ServiceAccount", "name": "karmada-impersonator", "namespace": "karmada-cluster"}])
    );

    // With its own token, the impersonator may act as a named subject and as nobody else:
    // never as system:masters.
    let secret = Api::<DynamicObject>::namespaced_with(
        member.client(),
        "karmada-cluster",
        &ar("", "v1", "Secret", "secrets"),
    )
    .get("karmada-impersonator-token")
    .await
    .unwrap();
    let token = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(secret.data["data"]["token"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    let http = reqwest::Client::new();
    let nodes_url = format!("{}/api/v1/nodes", member.served.url.trim_end_matches('/'));
    let as_impersonator = |headers: &[(&str, &str)]| {
        let mut req = http.get(&nodes_url).bearer_auth(&token);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status();
            (status, resp.text().await.unwrap())
        }
    };
    let (status, text) = as_impersonator(&[("Impersonate-User", "editor")]).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    for headers in [
        vec![("Impersonate-User", "intruder")],
        vec![
            ("Impersonate-User", "editor"),
            ("Impersonate-Group", "system:masters"),
        ],
        vec![("Impersonate-User", "admin")],
    ] {
        let (status, text) = as_impersonator(&headers).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{headers:?}: {text}");
        assert!(text.contains("cannot impersonate"), "{text}");
    }
}

#[tokio::test]
async fn unjoin_waits_for_karmada_and_leaves_nothing_in_the_member() {
    let env = Env::start().await;
    let member = Member::start("member-u").await;
    env.join("m2", &member).await;
    env.propagated_config_map("m2", &member, "shop-config")
        .await;
    // A ConfigMap of the member's own, which nobody may take away.
    create(
        &member.client(),
        &ar("", "v1", "ConfigMap", "configmaps"),
        Some("demo"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mine"}}),
    )
    .await;
    assert!(
        member
            .left_by("m2")
            .await
            .contains("ConfigMap demo/shop-config")
    );

    let (status, answer) = env
        .call(
            "DELETE",
            &format!("{P}/instances/{INSTANCE}/clusters/m2"),
            "alice",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["metadata"]["name"], "m2");
    assert_eq!(answer["unjoin"]["leftBehind"], json!([]), "{answer}");
    // When the call answers, Karmada is done: the Cluster and its execution space are gone.
    assert!(env.clusters().get_opt("m2").await.unwrap().is_none());
    let spaces = Api::<DynamicObject>::all_with(
        env.instance.client(),
        &ar("", "v1", "Namespace", "namespaces"),
    );
    assert!(spaces.get_opt("karmada-es-m2").await.unwrap().is_none());
    let secrets = Api::<DynamicObject>::namespaced_with(
        env.instance.client(),
        "karmada-cluster",
        &ar("", "v1", "Secret", "secrets"),
    );
    assert!(secrets.get_opt("m2").await.unwrap().is_none());
    assert!(secrets.get_opt("m2-impersonator").await.unwrap().is_none());
    // Nothing Kairship or Karmada made stays in the member (its garbage collector removes
    // the dependents of the join's anchor binding).
    eventually(
        "the member to hold nothing of the join",
        Duration::from_secs(15),
        || async { member.left_by("m2").await.is_empty().then_some(()) },
    )
    .await;
    let config_maps = Api::<DynamicObject>::namespaced_with(
        member.client(),
        "demo",
        &ar("", "v1", "ConfigMap", "configmaps"),
    );
    assert!(config_maps.get_opt("mine").await.unwrap().is_some());
    // Karmada deleted its object with the join's credentials, before they went.
    let deleted = member
        .cluster
        .audit_events()
        .into_iter()
        .find(|e| e.resource == "configmaps" && e.verb == "delete")
        .unwrap();
    assert_eq!(
        deleted.user,
        "system:serviceaccount:karmada-cluster:karmada-m2"
    );
    assert_eq!(deleted.code, 200);
}

#[tokio::test]
async fn a_forced_unjoin_of_an_unreachable_member_completes_and_says_what_stays() {
    let env = Env::start().await;
    let member = Member::start("member-gone").await;
    env.join("m3", &member).await;
    env.propagated_config_map("m3", &member, "edge-config")
        .await;
    member.served.stop();
    let clusters = env.clusters();
    eventually("the member to be NotReady", Duration::from_secs(30), || {
        let clusters = clusters.clone();
        async move {
            let c = serde_json::to_value(clusters.get("m3").await.ok()?).unwrap();
            (!execution_space::is_ready(&c)).then_some(())
        }
    })
    .await;

    let path = format!("{P}/instances/{INSTANCE}/clusters/m3");
    // Unforced: nothing is removed.
    let (status, refused) = env.call("DELETE", &path, "alice", None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("nothing was removed"),
        "{refused}"
    );
    assert!(env.clusters().get_opt("m3").await.unwrap().is_some());

    // Forced: it completes, and the answer names what stays in the member.
    let (status, answer) = env
        .call("DELETE", &format!("{path}?force=true"), "alice", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let left: Vec<String> = answer["unjoin"]["leftBehind"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    for stays in [
        "ClusterRoleBinding karmada-controller-manager:karmada-m3 in the member",
        "ServiceAccount karmada-cluster/karmada-impersonator in the member",
        "ClusterRole karmada-impersonator in the member",
        "ConfigMap demo/edge-config in the member: applied by Karmada, which could not delete it",
    ] {
        assert!(
            left.iter().any(|l| l.starts_with(stays)),
            "{stays}: {left:?}"
        );
    }
    assert!(env.clusters().get_opt("m3").await.unwrap().is_none());
    let secrets = Api::<DynamicObject>::namespaced_with(
        env.instance.client(),
        "karmada-cluster",
        &ar("", "v1", "Secret", "secrets"),
    );
    assert!(secrets.get_opt("m3").await.unwrap().is_none());
    // And the member indeed still holds them.
    assert!(
        member
            .left_by("m3")
            .await
            .contains("ConfigMap demo/edge-config")
    );
}

#[tokio::test]
async fn an_unjoin_karmada_cannot_finish_in_time_says_so_and_the_same_call_finishes_later() {
    let env = Env::start_with(Duration::from_secs(2)).await;
    let member = Member::start("member-s").await;
    env.join("m4", &member).await;
    // A Work Karmada cannot clean up: it applied a kind the member does not serve.
    let space = execution_space::execution_space("m4");
    let spaces = Api::<DynamicObject>::all_with(
        env.instance.client(),
        &ar("", "v1", "Namespace", "namespaces"),
    );
    eventually("the execution space", Duration::from_secs(10), || async {
        spaces.get_opt(&space).await.unwrap().map(|_| ())
    })
    .await;
    let works = Api::<DynamicObject>::namespaced_with(
        env.instance.client(),
        &space,
        &ar("work.karmada.io", "v1alpha1", "Work", "works"),
    );
    works
        .create(
            &PostParams::default(),
            &dynamic(
                json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                "metadata": {"name": "stuck", "namespace": space,
                             "labels": {"work.karmada.io/permanent-id": "stuck-id"},
                             "finalizers": [execution_space::EXECUTION_FINALIZER]},
                "spec": {"workload": {"manifests": [{"apiVersion": "gadgets.example.com/v1",
                    "kind": "Gadget", "metadata": {"name": "g", "namespace": "demo"}}]}}}),
            ),
        )
        .await
        .unwrap();

    let path = format!("{P}/instances/{INSTANCE}/clusters/m4");
    let (status, busy) = env.call("DELETE", &path, "alice", None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{busy}");
    let message = busy["message"].as_str().unwrap();
    assert!(
        message.contains("1 Works left in karmada-es-m4"),
        "{message}"
    );
    assert!(message.contains("unjoin again"), "{message}");
    // Meanwhile the Cluster shows its deletion, and the credentials stay for Karmada.
    let cluster = env.clusters().get("m4").await.unwrap();
    assert!(cluster.metadata.deletion_timestamp.is_some());
    let secrets = Api::<DynamicObject>::namespaced_with(
        env.instance.client(),
        "karmada-cluster",
        &ar("", "v1", "Secret", "secrets"),
    );
    assert!(secrets.get_opt("m4").await.unwrap().is_some());
    assert!(
        member
            .left_by("m4")
            .await
            .contains("ServiceAccount karmada-cluster/karmada-impersonator")
    );

    // Whatever held Karmada up is resolved (here the Work no longer applies anything), and
    // the same call finishes the unjoin.
    works
        .patch(
            "stuck",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"workload": {"manifests": []}}})),
        )
        .await
        .unwrap();
    let (status, answer) = env.call("DELETE", &path, "alice", None).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["unjoin"]["leftBehind"], json!([]), "{answer}");
    assert!(secrets.get_opt("m4").await.unwrap().is_none());
    eventually(
        "the member to hold nothing of the join",
        Duration::from_secs(15),
        || async { member.left_by("m4").await.is_empty().then_some(()) },
    )
    .await;
}
