//! `kairship sandbox`: Kairship end to end on loopback. A host sandbox cluster and two
//! Karmada-instance sandbox clusters (with Karmada's resource types, member `Cluster` objects
//! whose status carries node and resource summaries, and sample workloads with their
//! PropagationPolicy and ResourceBindings), Instances in Adopt mode pointing at them, the
//! controller-manager and the API server in-process, an admin and a viewer with their tokens
//! and issued kubeconfigs. Prints what to try, then runs until interrupted.

mod members;
mod samples;
mod spare;
mod users;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kairship_core::access::WriteIdentity;
use kairship_core::api::{BearerToken, CreateKubeconfigRequest, tls};
use kairship_core::auth::SubjectAccessReviewAuthorizer;
use kairship_core::controllers::{Context, ControllerConfig, NoopRegistry};
use kairship_core::instance::{
    DeletionPolicy, Instance, InstanceMode, InstanceSpec, InstanceState,
    KARMADA_NAMESPACE_ANNOTATION, SecretKeyReference,
};
use kairship_core::rbac::InstanceRole;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use kube_kit::admin::Metrics;
use kube_kit::client::{ClientOptions, user_agent};
use kube_sandbox::{ServeOptions, Served};
use serde_json::json;

use crate::wiring::ReadBackendFlag;
use crate::wiring::{self, ApiOptions};
use users::{User, write_private};

/// Namespace of the instances' kubeconfig Secrets on the host.
const NAMESPACE: &str = "kairship-system";

/// The instance the viewer may read (the admin administers all of them).
const VIEWER_INSTANCE: &str = "karmada-a";

/// The member of the viewer's instance holding the workload Karmada does not manage.
const PROMOTE_FROM: &str = "a-east";

/// Flags of `kairship sandbox`.
#[derive(clap::Args, Debug)]
pub struct SandboxArgs {
    /// Directory the kubeconfigs and the users' tokens are written to.
    #[arg(long, default_value = "kairship-sandbox")]
    dir: PathBuf,
    /// Serve the clusters and the Kairship API over HTTPS (the API with a generated
    /// certificate, written to `<dir>/kairship-ca.crt` and embedded in issued kubeconfigs).
    #[arg(long)]
    tls: bool,
    /// Loopback port of the Kairship API (REST, Swagger UI, native proxy and gRPC); 0 picks
    /// a free one.
    #[arg(long, default_value_t = 8443)]
    api_port: u16,
}

/// A CRD that accepts any content: enough for the sandbox, which only stores and counts.
fn open_crd(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
) -> anyhow::Result<CustomResourceDefinition> {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{
                "name": version, "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    });
    Ok(serde_json::from_value(crd)?)
}

async fn create_crds(client: &Client, crds: Vec<CustomResourceDefinition>) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        api.create(&PostParams::default(), &crd)
            .await
            .context("creating a CRD in the sandbox")?;
    }
    Ok(())
}

/// The release the sandbox's Karmada instances stand for (the tag of their component images).
const SANDBOX_KARMADA_VERSION: &str = "v1.19.0";

/// Where a Karmada install runs its components on the host, as the Helm chart and `karmadactl
/// init` do: the karmada-controller-manager Deployment, whose image tag names the release
/// (what the controller-manager reports as the instance's `karmadaVersion`). Its pods stay
/// Pending: the host has no nodes.
async fn karmada_components(host: &Client, namespace: &str) -> anyhow::Result<()> {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))?;
    Api::<Namespace>::all(host.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating the namespace {namespace}"))?;
    let labels = json!({"app": "karmada-controller-manager"});
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "karmada-controller-manager", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{
                    "name": "karmada-controller-manager",
                    "image": format!("docker.io/karmada/karmada-controller-manager:{SANDBOX_KARMADA_VERSION}"),
                }]},
            },
        },
    }))?;
    Api::<Deployment>::namespaced(host.clone(), namespace)
        .create(&PostParams::default(), &deployment)
        .await
        .with_context(|| format!("creating karmada-controller-manager in {namespace}"))?;
    Ok(())
}

/// One Karmada instance: its resource types and `members` (name, ready, nodes, cpu, memory).
async fn karmada_instance(
    name: &str,
    members: &[(&str, bool, i32, &str, &str)],
    options: &ServeOptions,
) -> anyhow::Result<(kube_sandbox::Cluster, Served, Vec<members::Member>)> {
    // A Karmada control plane runs no Deployment controller (its workloads run in the
    // members), so the instance clusters keep the workload controllers off; they serve
    // Karmada's cluster proxy to their members.
    let cluster = kube_sandbox::Cluster::with_options(
        name,
        kairship_core::karmada_sim::cluster_strategy::with_cluster_strategy(
            kairship_core::karmada_sim::cluster_proxy::with_cluster_proxy(
                kube_sandbox::ClusterOptions::default(),
            ),
        ),
    );
    let client = cluster.client();
    create_crds(
        &client,
        vec![
            open_crd(
                "cluster.karmada.io",
                "v1alpha1",
                "Cluster",
                "clusters",
                false,
            )?,
            open_crd(
                "policy.karmada.io",
                "v1alpha1",
                "PropagationPolicy",
                "propagationpolicies",
                true,
            )?,
            open_crd(
                "policy.karmada.io",
                "v1alpha1",
                "ClusterPropagationPolicy",
                "clusterpropagationpolicies",
                false,
            )?,
            open_crd(
                "policy.karmada.io",
                "v1alpha1",
                "OverridePolicy",
                "overridepolicies",
                true,
            )?,
            open_crd(
                "policy.karmada.io",
                "v1alpha1",
                "ClusterOverridePolicy",
                "clusteroverridepolicies",
                false,
            )?,
            open_crd(
                "work.karmada.io",
                "v1alpha2",
                "ResourceBinding",
                "resourcebindings",
                true,
            )?,
            open_crd(
                "work.karmada.io",
                "v1alpha2",
                "ClusterResourceBinding",
                "clusterresourcebindings",
                false,
            )?,
            open_crd("work.karmada.io", "v1alpha1", "Work", "works", true)?,
        ],
    )
    .await?;
    let clusters: Api<kairship_core::models::cluster::Cluster> = Api::all(client.clone());
    let mut running = Vec::new();
    for (member, ready, nodes, cpu, memory) in members {
        // Served as the instance is, its admin kubeconfig next to the instance's.
        let serve = ServeOptions {
            kubeconfig_path: options
                .kubeconfig_path
                .as_ref()
                .map(|p| p.with_file_name(format!("{member}.kubeconfig"))),
            ..options.clone()
        };
        let started = members::start(member, *ready, *nodes, cpu, memory, &serve).await?;
        let spec = members::register(&client, &started).await?;
        running.push(started);
        let created = clusters
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": member}, "spec": spec}))?,
            )
            .await
            .with_context(|| format!("creating member {member} in {name}"))?;
        let mut with_status = created;
        with_status.status = Some(serde_json::from_value(json!({
            "kubernetesVersion": "v1.31.2",
            "conditions": [{"type": "Ready", "status": if *ready { "True" } else { "False" }}],
            "nodeSummary": {"totalNum": nodes, "readyNum": if *ready { *nodes } else { 0 }},
            "resourceSummary": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": (nodes * 110).to_string()},
                "allocated": {"cpu": "500m", "memory": "1Gi"}
            }
        }))?);
        clusters
            .replace_status(member, &PostParams::default(), &with_status)
            .await
            .with_context(|| format!("setting the status of member {member} in {name}"))?;
    }
    // The samples are placed and propagated by the instance's (emulated) Karmada.
    let ready: Vec<&str> = members.iter().filter(|m| m.1).map(|m| m.0).collect();
    samples::create(&client, name, &ready).await?;
    let served = cluster.serve(options.clone()).await?;
    Ok((cluster, served, running))
}

/// Runs the sandbox until SIGTERM/SIGINT. A port that cannot be bound exits with status 2.
pub async fn run(args: SandboxArgs) -> anyhow::Result<()> {
    // Bound before anything starts, so a busy port fails at once.
    let api_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.api_port));
    let listener = match tokio::net::TcpListener::bind(api_addr).await {
        Ok(l) => l,
        Err(err) => {
            eprintln!("error: cannot listen on {api_addr}: {err} (--api-port 0 picks a free port)");
            std::process::exit(2);
        }
    };
    let api_addr = listener.local_addr().context("the API listener")?;
    kube_kit::client::install_crypto_provider();
    let shutdown = kube_kit::shutdown::signal_token()?;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    // Absolute, so the printed commands work from any directory.
    let dir = std::fs::canonicalize(&args.dir)
        .with_context(|| format!("resolving {}", args.dir.display()))?;
    let options = |name: &str| ServeOptions {
        tls: args.tls,
        kubeconfig_path: Some(dir.join(format!("{name}.kubeconfig"))),
        ..ServeOptions::default()
    };
    // The host cluster runs the workload controllers, as a real one's controller-manager does.
    let host = kube_sandbox::Cluster::with_options(
        "host",
        kube_sandbox::ClusterOptions {
            workload_controllers: true,
            ..kube_sandbox::ClusterOptions::default()
        },
    );
    let hc = host.client();
    create_crds(&hc, kairship_core::crds()).await?;
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(hc.clone())
        .create(&PostParams::default(), &ns)
        .await
        .context("creating the kairship-system namespace")?;
    let host_served = host.serve(options("host")).await?;

    let instances = [
        (
            "karmada-a",
            vec![
                ("a-east", true, 3, "12", "48Gi"),
                ("a-west", true, 2, "8", "32Gi"),
            ],
        ),
        (
            "karmada-b",
            vec![
                ("b-1", true, 5, "40", "160Gi"),
                ("b-2", false, 1, "4", "16Gi"),
                ("b-3", true, 2, "7500m", "30Gi"),
            ],
        ),
    ];
    let mut running = Vec::new();
    let mut member_clusters = Vec::new();
    let secrets: Api<Secret> = Api::namespaced(hc.clone(), NAMESPACE);
    let instance_api: Api<Instance> = Api::all(hc.clone());
    for (name, members) in &instances {
        let (cluster, served, started) = karmada_instance(name, members, &options(name)).await?;
        member_clusters.push((*name, started));
        let secret_name = format!("{name}-kubeconfig");
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(secret_name.clone()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(
                "kubeconfig".to_owned(),
                ByteString(served.kubeconfig_yaml.clone().into_bytes()),
            )])),
            ..Secret::default()
        };
        secrets.create(&PostParams::default(), &secret).await?;
        let components = format!("{name}-system");
        karmada_components(&hc, &components).await?;
        let mut instance = Instance::new(
            name,
            InstanceSpec {
                mode: InstanceMode::Adopt,
                kubeconfig_secret_ref: Some(SecretKeyReference {
                    namespace: NAMESPACE.into(),
                    name: secret_name,
                    key: Some("kubeconfig".into()),
                }),
                provision: None,
                alias: None,
                deletion_policy: DeletionPolicy::Retain,
            },
        );
        instance.metadata.annotations = Some(BTreeMap::from([(
            KARMADA_NAMESPACE_ANNOTATION.to_owned(),
            components,
        )]));
        instance_api
            .create(&PostParams::default(), &instance)
            .await?;
        // Karmada's cluster-status controller, emulated: joined Push members become Ready.
        kairship_core::karmada_sim::cluster_status::spawn(
            cluster.client(),
            Duration::from_secs(2),
            shutdown.clone(),
        );
        // And its cluster controller's handling of execution spaces: an unjoin waits for it.
        kairship_core::karmada_sim::execution_space::spawn(
            cluster.client(),
            Duration::from_secs(2),
            shutdown.clone(),
        );
        // And its propagation: what is created in the instance is placed on the members.
        kairship_core::karmada_sim::propagation::spawn(cluster.client(), shutdown.clone());
        running.push((cluster, served));
    }

    let users = vec![
        User::new(
            "admin",
            "sandbox-admin",
            InstanceRole::Admin,
            instances
                .iter()
                .map(|(name, _)| (*name).to_owned())
                .collect(),
        )?,
        User::new(
            "viewer",
            "sandbox-viewer",
            InstanceRole::View,
            vec![VIEWER_INSTANCE.to_owned()],
        )?,
    ];
    for user in &users {
        write_private(&user.token_path(&dir), user.token().as_bytes())?;
    }
    users::bind(&hc, &users).await?;
    // The admin also adopts and provisions new instances (the console's New instance page).
    users::grant_instance_admin(&hc, "sandbox-admin").await?;
    // Writes reach the instances as the user who makes them: each instance grants its users.
    for (cluster, _) in &running {
        users::grant_inside(&cluster.client(), cluster.name(), &users).await?;
    }
    // A member cluster no instance has joined yet, to try a join with.
    running.push(spare::start(&options(spare::NAME)).await?);
    // The members decide for the callers Karmada's cluster proxy impersonates; each member's
    // impersonator acts for those who hold its proxy in the instance, and nobody else.
    for (instance, started) in &member_clusters {
        let instance_client = running
            .iter()
            .find(|(cluster, _)| cluster.name() == *instance)
            .map(|(cluster, _)| cluster.client())
            .with_context(|| format!("instance {instance} is not running"))?;
        for member in started {
            users::grant_inside(&member.cluster.client(), instance, &users).await?;
            members::limit_impersonator(&instance_client, member).await?;
        }
        // A Deployment made in the first member before Karmada, what `:promote` brings in.
        if let Some(first) = started.first() {
            members::create_legacy(&first.cluster.client()).await?;
        }
    }

    let config = ControllerConfig {
        probe_interval: Duration::from_secs(2),
        ..ControllerConfig::default()
    };

    // The API server, wired as `kairship apiserver --token-file` with SubjectAccessReview on
    // the host decides it.
    let tls = if args.tls {
        let dev = tls::generate_dev_certificate(&["localhost".to_owned(), "127.0.0.1".to_owned()])
            .context("generating the API's certificate")?;
        std::fs::write(dir.join("kairship-ca.crt"), &dev.cert_pem)
            .context("writing the API's certificate")?;
        let config = tls::server_config(dev.cert_pem.as_bytes(), dev.key_pem.as_bytes())
            .context("the API's TLS configuration")?;
        Some((config, dev.cert_pem))
    } else {
        None
    };
    let base = format!(
        "{}://{api_addr}",
        if tls.is_some() { "https" } else { "http" }
    );
    let authenticator = wiring::authenticator(&hc, Some(users::authenticator(&users)), None);
    let api = wiring::build(ApiOptions {
        host: hc.clone(),
        client_options: ClientOptions::new(user_agent(
            "kairship-sandbox",
            env!("CARGO_PKG_VERSION"),
        )),
        read_backend: ReadBackendFlag::Cache,
        read_your_writes_timeout: Duration::from_secs(1),
        host_timeout: Duration::from_secs(10),
        instance_client_refresh: Duration::from_secs(30),
        shutdown: shutdown.clone(),
        authenticator: authenticator.clone(),
        authorizer: Arc::new(SubjectAccessReviewAuthorizer::new(hc.clone())),
        external_url: Some(base.clone()),
        ca_pem: tls.as_ref().map(|(_, ca)| ca.clone()),
        write_identity: WriteIdentity::Impersonate,
        console_sessions: kairship_core::console::session_store::HostSessionConfig::in_namespace(
            "default",
            kairship_core::console::session::DEFAULT_SESSION_TTL,
        ),
        oidc: None,
        per_caller_limit: None,
        audit: wiring::AuditOptions {
            namespace: "default".into(),
            retention: kairship_core::audit::Retention::default(),
        },
    })
    .await?;
    // The controllers' statistics read the API server's instance cache: one copy in the process.
    let registry = Arc::new(NoopRegistry);
    let ctx = match &api.instance_cache {
        Some(cache) => Context::sharing_instance_cache(
            hc.clone(),
            config,
            registry,
            &Metrics::new(),
            cache.clone(),
        ),
        None => Context::new(hc.clone(), config, registry, &Metrics::new()),
    };
    let controllers = tokio::spawn(kairship_core::controllers::run(ctx, shutdown.clone()));
    users::wait_for_roles(&hc, &users).await?;
    let server = tokio::spawn(kairship_core::server::serve(
        listener,
        api.app,
        tls.map(|(config, _)| config),
        shutdown.clone(),
    ));

    // Each user's kubeconfig, issued as `POST instances/{i}/kubeconfig` issues it.
    for user in &users {
        let caller = authenticator
            .authenticate(user.token())
            .await
            .with_context(|| format!("authenticating {}", user.user))?;
        let issued = api
            .service
            .create_kubeconfig(
                &caller,
                &BearerToken::new(user.token()),
                CreateKubeconfigRequest {
                    instance: VIEWER_INSTANCE.to_owned(),
                    server: Some(base.clone()),
                    request_server: None,
                },
            )
            .await
            .map_err(|e| {
                anyhow::anyhow!("issuing a kubeconfig for {}: {}", user.user, e.message)
            })?;
        write_private(&user.kubeconfig_path(&dir), issued.kubeconfig.as_bytes())?;
    }

    // Show the Instances once both are running with a summary (or after 30 s regardless).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let list = instance_api.list(&Default::default()).await?;
        let done = list.items.iter().all(|i| {
            i.status
                .as_ref()
                .is_some_and(|s| s.state == InstanceState::Running && s.summary.is_some())
        });
        if done || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "host:      {}",
        host_served
            .kubeconfig_path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    for (cluster, served) in &running {
        let path = served
            .kubeconfig_path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        println!("{}: {path}", cluster.name());
    }
    for instance in instance_api.list(&Default::default()).await?.items {
        let status = serde_json::json!({
            "name": instance.metadata.name,
            "status": instance.status,
        });
        print!("---\n{}", serde_saphyr::to_string(&status)?);
    }
    print!("{}", try_these(&base, api_addr, &dir, &users, args.tls));
    let curl = if args.tls {
        format!("curl -s --cacert {}", dir.join("kairship-ca.crt").display())
    } else {
        "curl -s".to_owned()
    };
    print!("{}", spare::try_join(&curl, &dir, VIEWER_INSTANCE));
    println!("--- running; Ctrl-C to stop");
    shutdown.cancelled().await;
    server
        .await
        .context("API server task")?
        .context("the API server stopped")?;
    controllers.await.context("controller task")?;
    host.shutdown();
    for (cluster, _) in &running {
        cluster.shutdown();
    }
    for member in member_clusters.iter().flat_map(|(_, m)| m) {
        member.cluster.shutdown();
    }
    Ok(())
}

/// What to try, as shell commands: the tokens are read from their files, never printed.
fn try_these(base: &str, addr: SocketAddr, dir: &Path, users: &[User], tls: bool) -> String {
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    let ca = dir.join("kairship-ca.crt");
    let curl = if tls {
        format!("curl -s --cacert {}", ca.display())
    } else {
        "curl -s".to_owned()
    };
    line(format!(
        "--- Kairship API on {base} (REST, Swagger UI, native proxy and gRPC)"
    ));
    for user in users {
        line(format!(
            "{:<7} {} on {}: token {}, kubeconfig of {VIEWER_INSTANCE} {}",
            format!("{}:", user.name),
            user.role,
            user.instances.join(", "),
            user.token_path(dir).display(),
            user.kubeconfig_path(dir).display(),
        ));
    }
    line(format!("swagger: {base}/swagger-ui/"));
    line("--- try:".to_owned());
    line(format!("KS={base}/apis/kairship.io/v1alpha1"));
    for user in users {
        line(format!(
            "{}=\"Authorization: Bearer $(cat {})\"",
            user.name.to_uppercase(),
            user.token_path(dir).display()
        ));
    }
    let ns = samples::NAMESPACE;
    let i = VIEWER_INSTANCE;
    line(format!(
        "{curl} -H \"$ADMIN\" $KS/instances | jq -r '.items[].metadata.name'    # both instances"
    ));
    line(format!(
        "{curl} -H \"$VIEWER\" $KS/instances | jq -r '.items[].metadata.name'   # {i} only"
    ));
    line(format!(
        "{curl} -H \"$VIEWER\" $KS/instances/{i}/namespaces/{ns}/workloads | jq '.items[] | {{name, readyReplicas, clusters}}'"
    ));
    line(format!(
        "{curl} -H \"$VIEWER\" -X POST $KS/instances/{i}/namespaces/{ns}/deployments/web:restart   # 403 PermissionDenied"
    ));
    line(format!(
        "{curl} -H \"$ADMIN\" -X POST $KS/instances/{i}/namespaces/{ns}/deployments/web:restart | jq .metadata.name"
    ));
    line(format!(
        "{curl} -H \"$VIEWER\" $KS/instances/{i}/namespaces/{ns}/deployments/web/pods | jq -r '.items[] | [.metadata.annotations[\"{}\"], .metadata.name, .status.phase, .spec.nodeName] | @tsv'   # pods per member cluster",
        kairship_core::api::CLUSTER_ANNOTATION
    ));
    line(format!(
        "{curl} -H \"$ADMIN\" -X POST \"$KS/instances/{i}/clusters/{PROMOTE_FROM}/namespaces/{ns}/deployments/{}:promote?dryRun=true\" | jq -r '.objects[].kind'",
        members::LEGACY_DEPLOYMENT
    ));
    line(format!(
        "{curl} -H \"$ADMIN\" \"$KS/audit?instance={i}\" | jq -r '.items[] | [.time, .door, .user, .verb, .object.resource, .object.name, .code] | @tsv'   # who wrote what"
    ));
    if !tls {
        // kubectl (client-go) only sends a kubeconfig's credentials over HTTPS.
        line("# kubectl needs the API over HTTPS: restart with --tls for these".to_owned());
    }
    for user in users {
        line(format!(
            "kubectl --kubeconfig {} get deployments,configmaps,propagationpolicies -A",
            user.kubeconfig_path(dir).display()
        ));
    }
    if let Some(viewer) = users.iter().find(|u| u.role == InstanceRole::View) {
        line(format!(
            "kubectl --kubeconfig {} -n {ns} delete configmap {}   # Forbidden",
            viewer.kubeconfig_path(dir).display(),
            samples::CONFIG_MAP
        ));
    }
    if let Some(admin) = users.first() {
        let transport = if tls {
            format!("-cacert {}", ca.display())
        } else {
            "-plaintext".to_owned()
        };
        line(format!(
            "grpcurl {transport} -H \"authorization: Bearer $(cat {})\" {addr} kairship.v1.KairshipService/ListInstances",
            admin.token_path(dir).display()
        ));
    }
    out
}
