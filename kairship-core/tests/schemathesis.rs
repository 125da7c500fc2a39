//! A schema-driven fuzz run of the REST API: schemathesis reads the served `/openapi.json` and
//! sends generated requests (valid and invalid) to every documented operation, the native proxy
//! included, with an admin bearer token. The run must report no server error (5xx), no status
//! code the operation does not document, and no response body that breaks its documented
//! schema.
//!
//! The API server runs in-process on loopback in front of a sandbox host cluster (with an
//! Instance) and a sandbox Karmada instance, as in `generated_client.rs`. `schemathesis` is
//! looked up on PATH, then in `~/.cache/kubeocean-rs/venv` (what `.ci/run` installs). Without
//! it the test prints a notice and passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where
//! it fails. The run is bounded: a few examples per operation, a fixed seed, no shrinking.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use kube_sandbox::testing::tools::{on_path, skip_or_fail, venv_bin};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::{KarmadaInstance, ensure_namespace, register_adopted};
use kairship_core::api::{HostInstanceClients, KairshipService, ServiceConfig};
use kairship_core::auth::{StaticAuthorizer, StaticTokenAuthenticator};
use kairship_core::proxy::{ProxyState, proxy_routes};
use kairship_core::router::{
    DirectBackend, DiscoveryCache, EmbeddedCacheBackend, InstanceClients, InstanceWriter,
    ReadWriteRouter, SplitRouter,
};
use kairship_core::server::{AppParts, app, serve};
use kube_kit::client::ClientOptions;
use tokio_util::sync::CancellationToken;

const INSTANCE: &str = "inst-1";
const NS: &str = "team-a";
const INSTALL: &str = "python3 -m venv ~/.cache/kubeocean-rs/venv && \
     ~/.cache/kubeocean-rs/venv/bin/pip install 'schemathesis==4.32.5'";
/// Examples per operation and phase: enough to reach every parameter, short enough for CI.
const MAX_EXAMPLES: &str = "5";

/// The tool, or `None` after a skip notice; panics when tools are required.
fn schemathesis_or_skip(test: &str) -> Option<PathBuf> {
    let found = on_path("schemathesis").or_else(|| venv_bin("schemathesis"));
    if found.is_none() {
        skip_or_fail(test, "schemathesis not found", INSTALL);
    }
    found
}

struct Server {
    _host: kube_sandbox::Cluster,
    _instance: KarmadaInstance,
    base: String,
    stop: CancellationToken,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Host with the Instance, the instance with a namespace, and the API server (REST and the
/// native proxy) with a static admin token.
async fn start_server() -> Server {
    kube_kit::client::install_crypto_provider();
    let host = common::host().await;
    let instance = KarmadaInstance::start(INSTANCE).await;
    ensure_namespace(&instance.client(), NS).await;
    register_adopted(&host.client(), INSTANCE, &instance).await;

    let clients: Arc<dyn InstanceClients> = Arc::new(HostInstanceClients::new(
        host.client(),
        ClientOptions::new("kairship-schemathesis-test"),
        Duration::from_secs(5),
        Duration::from_secs(30),
    ));
    let router: Arc<dyn ReadWriteRouter> = Arc::new(SplitRouter::new(
        Arc::new(EmbeddedCacheBackend::new(clients.clone())),
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients.clone())),
    ));
    let authorizer = Arc::new(StaticAuthorizer::parse("user:admin  *     *\n").unwrap());
    let tokens = Arc::new(StaticTokenAuthenticator::parse("admin-token,admin,u1").unwrap());
    let service = KairshipService::new(
        host.client(),
        router.clone(),
        authorizer.clone(),
        ServiceConfig::default(),
    )
    .with_discovery(clients.clone(), Arc::new(DiscoveryCache::default()));
    let proxy = proxy_routes(ProxyState::new(router, clients, tokens.clone(), authorizer));
    let app = app(AppParts {
        api: Arc::new(service),
        authenticator: tokens,
        proxy: Some(proxy),
        grpc: None,
        console: None,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(serve(listener, app, None, stop.clone()));
    Server {
        _host: host,
        _instance: instance,
        base: format!("http://{addr}"),
        stop,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_server_error_and_no_broken_response() {
    let Some(schemathesis) = schemathesis_or_skip("schemathesis_finds_no_server_error") else {
        return;
    };
    let server = start_server().await;
    let report = std::env::temp_dir().join(format!("kairship-schemathesis-{}", std::process::id()));
    let mut command = Command::new(schemathesis);
    command
        .arg("run")
        .arg(format!("{}/openapi.json", server.base))
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,response_schema_conformance",
            "--max-examples",
            MAX_EXAMPLES,
            "--seed",
            "19",
            "--no-shrink",
            "--generation-database",
            "none",
            "--workers",
            "1",
            "--request-timeout",
            "10",
            "--no-color",
            "--header",
            "Authorization: Bearer admin-token",
            "--report-dir",
        ])
        .arg(&report)
        // schemathesis keeps its own state in the working directory.
        .current_dir(std::env::temp_dir());
    let started = std::time::Instant::now();
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    println!(
        "BENCH schemathesis_run_seconds={:.1}",
        started.elapsed().as_secs_f64()
    );
    assert!(
        output.status.success(),
        "schemathesis reported failures ({}):\n{stdout}\n{stderr}",
        output.status
    );
}
