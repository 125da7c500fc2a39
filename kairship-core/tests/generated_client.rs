//! A client generated from the served OpenAPI document works against the real API server.
//!
//! The API server runs in-process on loopback in front of a sandbox host cluster (with an
//! Instance) and a sandbox Karmada instance, with the static token file and policy for
//! access. The test fetches `/openapi.json`, generates a Python client with
//! `openapi-generator-cli -g python`, and runs `tests/generated_client/check.py` with the tools
//! venv's python: through the generated client it lists and reads instances, creates, lists
//! and reads a ConfigMap and a Deployment inside the instance, pauses the Deployment, and
//! checks that 404 and 403
//! surface as the client's exceptions carrying our `{code, message}` body; through the generic
//! resource paths it creates, lists (several namespaces), patches (merge patch) and deletes a
//! ConfigMap, lists its events, and meets 404 for a resource the instance does not serve; it
//! previews and creates an application, restarts a Job and pauses and resumes a CronJob;
//! it joins a sandbox member cluster from its kubeconfig, registers a Pull member, updates and
//! unjoins a member; it adopts an instance from a pasted kubeconfig and meets 400 for a bad
//! one. The test then checks
//! the script's report and the instance's objects.
//!
//! The tools (`openapi-generator-cli`, Java, and a python with the generated client's
//! dependencies) are looked up on PATH, then in `~/.cache/kubeocean-rs/venv` (what `.ci/run`
//! installs). Without them the test prints a notice and passes, unless
//! `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use kube_sandbox::testing::tools::{on_path, skip_or_fail, venv_bin};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::{KarmadaInstance, ensure_namespace, register_adopted};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kairship_core::api::{HostInstanceClients, KairshipService, ServiceConfig};
use kairship_core::auth::{StaticAuthorizer, StaticTokenAuthenticator};
use kairship_core::instance::Instance;
use kairship_core::router::{
    DirectBackend, DiscoveryCache, EmbeddedCacheBackend, InstanceClients, InstanceWriter,
    SplitRouter,
};
use kairship_core::server::{AppParts, app, serve};
use kube::Api;
use kube_kit::client::ClientOptions;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const INSTANCE: &str = "inst-1";
const NS: &str = "team-a";
const MEMBER: &str = "member-1";
const INSTALL: &str = "python3 -m venv ~/.cache/kubeocean-rs/venv && \
     ~/.cache/kubeocean-rs/venv/bin/pip install 'openapi-generator-cli==7.26.0' \
     'pydantic==2.14.4' 'python-dateutil==4.0.0' 'urllib3==2.8.0' 'typing-extensions==4.16.0' \
     (and a Java runtime)";

/// What the test needs from the machine.
struct Tools {
    generator: PathBuf,
    python: PathBuf,
}

/// Whether `python` can import what the generated client imports at run time.
fn has_client_dependencies(python: &Path) -> bool {
    Command::new(python)
        .args([
            "-c",
            "import pydantic, dateutil, urllib3, typing_extensions",
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn find_tools() -> Result<Tools, String> {
    let generator = on_path("openapi-generator-cli")
        .or_else(|| venv_bin("openapi-generator-cli"))
        .ok_or("openapi-generator-cli not found")?;
    on_path("java").ok_or("java not found")?;
    let python = [venv_bin("python"), on_path("python3")]
        .into_iter()
        .flatten()
        .find(|p| has_client_dependencies(p))
        .ok_or("no python with pydantic, python-dateutil, urllib3 and typing-extensions")?;
    Ok(Tools { generator, python })
}

/// The tools, or `None` after a skip notice; panics when tools are required.
fn tools_or_skip(test: &str) -> Option<Tools> {
    match find_tools() {
        Ok(tools) => Some(tools),
        Err(missing) => {
            skip_or_fail(test, &missing, INSTALL);
            None
        }
    }
}

/// A fresh directory under the system's temporary directory.
fn scratch_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!(
        "kairship-generated-client-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

struct Server {
    host: kube_sandbox::Cluster,
    instance: KarmadaInstance,
    member: kube_sandbox::Cluster,
    base: String,
    stop: CancellationToken,
    /// A member cluster to join, served over loopback HTTP.
    joinable: (kube_sandbox::Cluster, kube_sandbox::Served),
}

/// Member cluster `member-1` of the instance (one node, the workload controllers, Deployment
/// `legacy` with ConfigMap `legacy-config` made there before Karmada), registered in the
/// instance as Karmada's Push mode does, so the instance's cluster proxy reaches it.
async fn start_member(instance: &KarmadaInstance) -> kube_sandbox::Cluster {
    use base64::Engine as _;
    let b64 = |t: &str| base64::engine::general_purpose::STANDARD.encode(t);
    let member = kube_sandbox::Cluster::with_options(
        MEMBER,
        kube_sandbox::ClusterOptions {
            workload_controllers: true,
            ..kube_sandbox::ClusterOptions::default()
        },
    );
    member
        .add_node(&kube_sandbox::SimNode::new("member-1-node", "4", "8Gi"))
        .unwrap();
    let mc = member.client();
    ensure_namespace(&mc, NS).await;
    let post = |client: kube::Client, path: String, body: Value| async move {
        let request = http::Request::post(path)
            .header("content-type", "application/json")
            .body(body.to_string().into_bytes())
            .unwrap();
        client.request_text(request).await.unwrap();
    };
    post(
        mc.clone(),
        format!("/api/v1/namespaces/{NS}/configmaps"),
        serde_json::json!({
            "metadata": {"name": "legacy-config"}, "data": {"mode": "legacy"}
        }),
    )
    .await;
    post(
        mc.clone(),
        format!("/apis/apps/v1/namespaces/{NS}/deployments"),
        serde_json::json!({
            "metadata": {"name": "legacy", "labels": {"app": "legacy"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "legacy"}},
                "template": {"metadata": {"labels": {"app": "legacy"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}],
                        "volumes": [{"name": "cfg", "configMap": {"name": "legacy-config"}}]}}}
        }),
    )
    .await;
    // Member reads are made as the caller: the member lets `admin` read, and the instance
    // lets it use the cluster proxy.
    let grant_read = |client: kube::Client, rules: Value| async move {
        post(
            client.clone(),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles".into(),
            serde_json::json!({"metadata": {"name": "api-admin-read"}, "rules": rules}),
        )
        .await;
        post(
                client,
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings".into(),
                serde_json::json!({"metadata": {"name": "api-admin-read"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "api-admin-read"},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "admin"}]}),
            )
            .await;
    };
    grant_read(
        mc.clone(),
        serde_json::json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]),
    )
    .await;
    let served = member
        .serve(kube_sandbox::ServeOptions::default())
        .await
        .unwrap();
    let ic = instance.client();
    grant_read(
        ic.clone(),
        serde_json::json!([{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/proxy"], "verbs": ["get", "list", "watch"]}]),
    )
    .await;
    ensure_namespace(&ic, "karmada-cluster").await;
    // The admin token stands in for the impersonator's: it may impersonate anyone.
    post(
        ic.clone(),
        "/api/v1/namespaces/karmada-cluster/secrets".into(),
        serde_json::json!({
            "metadata": {"name": MEMBER},
            "data": {"token": b64(member.admin_token()), "caBundle": b64(served.cluster_ca_pem())}
        }),
    )
    .await;
    post(
        ic.clone(),
        "/apis/cluster.karmada.io/v1alpha1/clusters".into(),
        serde_json::json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": MEMBER},
            "spec": {"syncMode": "Push", "apiEndpoint": served.url,
                "secretRef": {"namespace": "karmada-cluster", "name": MEMBER},
                "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": MEMBER}}
        }),
    )
    .await;
    kube_sandbox::testing::install_crds(
        &ic,
        vec![common::load_crd(
            "karmada/work.karmada.io_resourcebindings.yaml",
        )],
    )
    .await;
    std::mem::forget(served);
    member
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Host with the Instance, the instance with a namespace, and the API server with the static
/// token file (admin, viewer) and policy (admin: everything; viewer: reads of inst-1).
async fn start_server() -> Server {
    kube_kit::client::install_crypto_provider();
    let host = common::host().await;
    let instance = KarmadaInstance::start_with(
        INSTANCE,
        kairship_core::karmada_sim::cluster_proxy::with_cluster_proxy(
            kube_sandbox::ClusterOptions::default(),
        ),
    )
    .await;
    ensure_namespace(&instance.client(), NS).await;
    let member = start_member(&instance).await;
    // The member's pod runs before the client asks for it.
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(member.client(), NS);
    common::eventually("the legacy pod", Duration::from_secs(30), || async {
        let list = pods.list(&Default::default()).await.ok()?;
        (list.items.len() == 1).then_some(())
    })
    .await;
    register_adopted(&host.client(), INSTANCE, &instance).await;

    let clients: Arc<dyn InstanceClients> = Arc::new(HostInstanceClients::new(
        host.client(),
        ClientOptions::new("kairship-generated-client-test"),
        Duration::from_secs(5),
        Duration::from_secs(30),
    ));
    let router = Arc::new(SplitRouter::new(
        Arc::new(EmbeddedCacheBackend::new(clients.clone())),
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients.clone())),
    ));
    let authorizer = StaticAuthorizer::parse(&format!(
        "user:admin  *     *\nuser:viewer read  {INSTANCE}\n"
    ))
    .unwrap();
    let tokens =
        StaticTokenAuthenticator::parse("admin-token,admin,u1\nviewer-token,viewer,u2").unwrap();
    let service = KairshipService::new(
        host.client(),
        router,
        Arc::new(authorizer),
        ServiceConfig::default(),
    )
    .with_discovery(clients, Arc::new(DiscoveryCache::default()));
    let app = app(AppParts {
        api: Arc::new(service),
        authenticator: Arc::new(tokens),
        proxy: None,
        grpc: None,
        console: None,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(serve(listener, app, None, stop.clone()));
    let joinable = kube_sandbox::Cluster::with_options(
        "py-member",
        kube_sandbox::ClusterOptions {
            workload_controllers: true,
            ..kube_sandbox::ClusterOptions::default()
        },
    );
    let served = joinable
        .serve(kube_sandbox::ServeOptions::default())
        .await
        .unwrap();
    Server {
        host,
        instance,
        member,
        base: format!("http://{addr}"),
        stop,
        joinable: (joinable, served),
    }
}

/// Generates the Python client of `spec` into `out`, as package `kairship_client`.
fn generate(tools: &Tools, spec: &Path, out: &Path) {
    let output = Command::new(&tools.generator)
        .arg("generate")
        .arg("-i")
        .arg(spec)
        .args(["-g", "python", "-o"])
        .arg(out)
        .args([
            "--package-name",
            "kairship_client",
            "--global-property",
            "apiTests=false,modelTests=false,apiDocs=false,modelDocs=false",
        ])
        .output()
        .expect("run openapi-generator-cli");
    assert!(
        output.status.success(),
        "openapi-generator-cli failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_python_client_drives_the_api() {
    let Some(tools) = tools_or_skip("a_generated_python_client_drives_the_api") else {
        return;
    };
    let server = start_server().await;
    let spec: Value = reqwest::get(format!("{}/openapi.json", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let dir = scratch_dir();
    let spec_path = dir.join("openapi.json");
    std::fs::write(&spec_path, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
    let client_dir = dir.join("client");
    generate(&tools, &spec_path, &client_dir);
    eprintln!("client generated into {}", client_dir.display());

    let kubeconfig_path = dir.join("pasted.kubeconfig");
    std::fs::write(&kubeconfig_path, &server.instance.served.kubeconfig_yaml).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/generated_client/check.py");
    // The script blocks on HTTP calls to this process: run it off the runtime's threads.
    let python = tools.python.clone();
    let base = server.base.clone();
    let member_kubeconfig = server.joinable.1.kubeconfig_yaml.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .env("PYTHONPATH", &client_dir)
            .env("KAIRSHIP_URL", base)
            .env("KAIRSHIP_INSTANCE", INSTANCE)
            .env("KAIRSHIP_NAMESPACE", NS)
            .env("KAIRSHIP_MEMBER", MEMBER)
            .env("KAIRSHIP_ADMIN_TOKEN", "admin-token")
            .env("KAIRSHIP_VIEWER_TOKEN", "viewer-token")
            .env("KAIRSHIP_MEMBER_KUBECONFIG", member_kubeconfig)
            .env("KAIRSHIP_KUBECONFIG_FILE", kubeconfig_path)
            .output()
            .expect("run python")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "check.py failed ({}):\n{stdout}\n{stderr}",
        output.status
    );

    eprintln!("check.py reported:\n{stdout}");
    // The script reports one JSON object per step.
    let report: Vec<Value> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let step = |name: &str| {
        report
            .iter()
            .find(|r| r["step"] == name)
            .unwrap_or_else(|| panic!("no step {name} in {stdout}"))
            .clone()
    };
    assert_eq!(
        step("list_instances")["names"],
        serde_json::json!([INSTANCE])
    );
    assert_eq!(step("list_instances")["total"], 1);
    assert_eq!(step("get_instance")["name"], INSTANCE);
    assert_eq!(step("create_configmap")["name"], "from-python");
    assert_eq!(step("get_configmap")["data"]["greeting"], "hello");
    assert!(
        step("list_configmaps")["names"]
            .as_array()
            .unwrap()
            .contains(&Value::from("from-python"))
    );
    assert_eq!(step("create_deployment")["name"], "web");
    assert_eq!(step("get_deployment")["replicas"], 2);
    assert_eq!(step("pause_deployment")["paused"], true);
    let not_found = step("get_missing");
    assert_eq!(not_found["status"], 404);
    assert_eq!(not_found["code"], 5);
    assert!(
        not_found["message"]
            .as_str()
            .unwrap()
            .contains("nothing-here")
    );
    let denied = step("viewer_create");
    assert_eq!(denied["status"], 403);
    assert_eq!(denied["code"], 7);
    assert!(!denied["message"].as_str().unwrap().is_empty());

    // The generic resource paths.
    assert_eq!(step("generic_create")["name"], "generic-python");
    assert_eq!(step("generic_create")["kind"], "ConfigMap");
    assert_eq!(
        step("generic_list")["names"],
        serde_json::json!(["generic-python"])
    );
    assert_eq!(step("generic_list")["total"], 1);
    assert_eq!(step("generic_patch")["labels"]["patched"], "yes");
    assert_eq!(step("generic_patch")["labels"]["via"], "generic");
    assert_eq!(
        step("generic_events")["names"],
        serde_json::json!(["generic-python.1"])
    );
    let unknown = step("generic_unknown");
    assert_eq!(
        (unknown["status"].clone(), unknown["code"].clone()),
        (404.into(), 5.into())
    );
    assert!(unknown["message"].as_str().unwrap().contains("gizmos"));
    assert_eq!(step("generic_delete")["name"], "generic-python");

    // Applications and the Job/CronJob verbs.
    let dry = step("application_dry_run");
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        dry["kinds"],
        serde_json::json!([
            "Deployment",
            "Service",
            "PropagationPolicy",
            "OverridePolicy"
        ])
    );
    assert_eq!(
        step("application_create")["names"],
        serde_json::json!(["shop", "shop", "shop", "shop-east"])
    );
    let invalid = step("application_invalid");
    assert_eq!(
        (invalid["status"].clone(), invalid["code"].clone()),
        (400.into(), 3.into())
    );
    assert!(
        invalid["message"]
            .as_str()
            .unwrap()
            .starts_with("workload.kind")
    );
    assert_eq!(step("restart_job")["renewed"], true);
    assert_eq!(step("pause_cronjob")["suspend"], true);
    assert_eq!(step("resume_cronjob")["suspend"], false);

    // Adopting from a pasted kubeconfig: a bad one is refused, a good one becomes the
    // Instance and its Secret, and is not in the answer.
    let invalid = step("adopt_invalid");
    assert_eq!(
        (invalid["status"].clone(), invalid["code"].clone()),
        (400.into(), 3.into())
    );
    assert!(
        invalid["message"]
            .as_str()
            .unwrap()
            .starts_with("kubeconfig")
    );
    let adopted = step("adopt_instance");
    assert_eq!(
        (&adopted["name"], &adopted["mode"], &adopted["alias"]),
        (&"py-adopted".into(), &"Adopt".into(), &"From Python".into())
    );
    assert_eq!(adopted["secret"]["name"], "py-adopted-kubeconfig");
    assert_eq!(adopted["echoed"], false);
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(server.host.client(), common::KAIRSHIP_NS);
    let stored = secrets.get("py-adopted-kubeconfig").await.unwrap();
    assert_eq!(
        stored.data.unwrap()["kubeconfig"].0,
        server.instance.served.kubeconfig_yaml.as_bytes()
    );
    assert!(
        secrets
            .get_opt("py-bad-kubeconfig")
            .await
            .unwrap()
            .is_none()
    );
    let shop: Api<Deployment> = Api::namespaced(server.instance.client(), NS);
    assert!(shop.get_opt("shop").await.unwrap().is_some());
    // The member views and :promote.
    let member_pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(server.member.client(), NS);
    let pod = member_pods.list(&Default::default()).await.unwrap().items[0]
        .metadata
        .name
        .clone()
        .unwrap();
    assert_eq!(
        step("member_nodes")["names"],
        serde_json::json!(["member-1-node"])
    );
    assert_eq!(
        step("member_deployments")["names"],
        serde_json::json!(["legacy"])
    );
    assert_eq!(step("member_deployment")["cluster"], MEMBER);
    assert_eq!(step("member_namespaces")["total"], 1);
    assert_eq!(step("member_node")["name"], "member-1-node");
    assert_eq!(
        step("promote_dry_run")["kinds"],
        serde_json::json!(["ConfigMap", "Deployment", "PropagationPolicy"])
    );
    assert_eq!(step("promote")["dry_run"], false);
    assert_eq!(
        step("workload_pods")["pods"],
        serde_json::json!([[MEMBER, pod]])
    );
    let unknown_member = step("member_unknown");
    assert_eq!(
        (
            unknown_member["status"].clone(),
            unknown_member["code"].clone()
        ),
        (404.into(), 5.into())
    );
    let promoted: Api<ConfigMap> = Api::namespaced(server.instance.client(), NS);
    assert_eq!(
        promoted.get("legacy-config").await.unwrap().data.unwrap()["mode"],
        "legacy"
    );

    // The instance holds what the client created, and nothing the viewer tried.
    let configmaps: Api<ConfigMap> = Api::namespaced(server.instance.client(), NS);
    let cm = configmaps.get("from-python").await.unwrap();
    assert_eq!(cm.data.unwrap()["greeting"], "hello");
    assert!(
        configmaps
            .get_opt("generic-python")
            .await
            .unwrap()
            .is_none()
    );
    assert!(configmaps.get_opt("viewer-made").await.unwrap().is_none());
    let deployments: Api<Deployment> = Api::namespaced(server.instance.client(), NS);
    let web = deployments.get("web").await.unwrap();
    let web = web.spec.unwrap();
    assert_eq!((web.replicas, web.paused), (Some(2), Some(true)));
    assert_eq!(
        Api::<Instance>::all(server.host.client())
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        2,
        "inst-1 and py-adopted"
    );

    // Member clusters: Push join, Pull registration, update, unjoin.
    let joined = step("join_member");
    assert_eq!(
        (joined["syncMode"].clone(), joined["secretRef"].clone()),
        ("Push".into(), "py-member".into())
    );
    assert_eq!(
        step("register_member")["kinds"],
        serde_json::json!([
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Secret",
            "Deployment"
        ])
    );
    assert_eq!(step("update_member")["labels"]["tier"], "gold");
    assert_eq!(step("remove_member")["name"], "py-member");
    assert!(
        !stdout.contains(server.joinable.0.admin_token()),
        "a member credential in the client's answers"
    );
    std::fs::remove_dir_all(&dir).ok();
}
