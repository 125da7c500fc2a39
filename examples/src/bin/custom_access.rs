//! A custom `Authenticator` and `Authorizer` in front of Kairship's API.
//!
//! Kairship's API asks an `Authenticator` who a bearer token is and an `Authorizer` what that
//! caller may do to `kairship.io/instances` (or `instances/proxy`) of one instance, or of all
//! of them (listing, creating). The shipped ones use TokenReview and SubjectAccessReview on
//! the host cluster, or a static token file; a platform with its own key store and its own
//! notion of teams plugs in here instead:
//! - `ApiKeys` knows API keys only by their SHA-256 digest (the process never holds a key, so
//!   it cannot leak one in a log) and maps each to a user and a team (the caller's group);
//! - `TeamPrefixes` lets group `platform-admins` do everything, lets team `<t>` read and write
//!   the instances named `<t>-*` and read those named `shared-*`, and nothing else. Listing
//!   with no right to list everything shows each caller only the instances it may read.
//!
//! `cargo run -p examples --bin custom_access` starts a sandbox host with three Instances,
//! serves the REST API with these two on loopback HTTP, calls it with each key and prints the
//! answers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::Namespace;
use kairship_core::access::{
    AccessError, Authenticator, Authorizer, Caller, InstanceResource, Verb,
};
use kairship_core::api::{HostInstanceClients, KairshipService, ServiceConfig};
use kairship_core::instance::{
    DeletionPolicy, Instance, InstanceMode, InstanceSpec, SecretKeyReference,
};
use kairship_core::router::{
    DirectBackend, EmbeddedCacheBackend, InstanceClients, InstanceWriter, SplitRouter,
};
use kairship_core::server::{AppParts, app, serve};
use kube::Api;
use kube::api::PostParams;
use kube_kit::client::ClientOptions;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const ADMINS: &str = "platform-admins";
const P: &str = "/apis/kairship.io/v1alpha1";

/// The SHA-256 digest of `key`, in hex.
fn digest(key: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, key.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// API keys by digest: who each one is, and their team.
struct ApiKeys {
    by_digest: HashMap<String, (String, String)>,
}

impl ApiKeys {
    /// From `(key digest, user, team)` entries, as a key store would hand them out.
    fn new(entries: &[(String, &str, &str)]) -> ApiKeys {
        ApiKeys {
            by_digest: entries
                .iter()
                .map(|(d, user, team)| (d.clone(), ((*user).to_owned(), (*team).to_owned())))
                .collect(),
        }
    }
}

#[async_trait]
impl Authenticator for ApiKeys {
    async fn authenticate(&self, bearer_token: &str) -> Result<Caller, AccessError> {
        match self.by_digest.get(&digest(bearer_token)) {
            Some((user, team)) => Ok(Caller::new(user.clone(), vec![team.clone()])),
            // Never the key itself in the message: it ends up in logs and answers.
            None => Err(AccessError::Unauthenticated("unknown API key".into())),
        }
    }
}

/// Teams own the instances named after them.
struct TeamPrefixes;

/// Whether `caller` may apply `verb` to `instance` (`None`: all instances).
fn team_may(caller: &Caller, verb: Verb, instance: Option<&str>) -> bool {
    if caller.groups.iter().any(|g| g == ADMINS) {
        return true;
    }
    let Some(instance) = instance else {
        return false;
    };
    let owns = caller.groups.iter().any(|team| {
        instance
            .strip_prefix(team.as_str())
            .is_some_and(|r| r.starts_with('-'))
    });
    owns || (!verb.is_write() && instance.starts_with("shared-"))
}

#[async_trait]
impl Authorizer for TeamPrefixes {
    async fn allowed(
        &self,
        caller: &Caller,
        verb: Verb,
        _resource: InstanceResource,
        instance: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(team_may(caller, verb, instance))
    }
}

fn instance(name: &str) -> Instance {
    Instance::new(
        name,
        InstanceSpec {
            mode: InstanceMode::Adopt,
            kubeconfig_secret_ref: Some(SecretKeyReference {
                namespace: "kairship-system".into(),
                name: format!("{name}-kubeconfig"),
                key: None,
            }),
            provision: None,
            alias: None,
            deletion_policy: DeletionPolicy::Retain,
        },
    )
}

/// Calls `method path` with `key` (if any); the status and the JSON body.
async fn call(
    http: &reqwest::Client,
    base: &str,
    method: reqwest::Method,
    path: &str,
    key: Option<&str>,
) -> anyhow::Result<(StatusCode, Value)> {
    let mut request = http.request(method, format!("{base}{path}"));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await?;
    let status = response.status();
    let body = response.json().await.unwrap_or(Value::Null);
    Ok((status, body))
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    kube_kit::client::install_crypto_provider();
    let host = kube_sandbox::Cluster::new("host");
    let client = host.client();
    let crds = Api::all(client.clone());
    for crd in kairship_core::crds() {
        crds.create(&PostParams::default(), &crd).await?;
    }
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "kairship-system"}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    let instances: Api<Instance> = Api::all(client.clone());
    for name in ["payments-prod", "search-prod", "shared-tools"] {
        instances
            .create(&PostParams::default(), &instance(name))
            .await?;
    }

    // The service and its router, as `kairship apiserver` wires them, with our access rules.
    let clients: Arc<dyn InstanceClients> = Arc::new(HostInstanceClients::new(
        client.clone(),
        ClientOptions::new("custom-access-example"),
        Duration::from_secs(10),
        Duration::from_secs(30),
    ));
    let router = Arc::new(SplitRouter::new(
        Arc::new(EmbeddedCacheBackend::new(clients.clone())),
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients)),
    ));
    let authorizer = Arc::new(TeamPrefixes);
    let api = Arc::new(KairshipService::new(
        client,
        router,
        authorizer,
        ServiceConfig::default(),
    ));
    // In real life the digests come from the key store; the keys are handed to the users.
    let keys = Arc::new(ApiKeys::new(&[
        (digest("key-alice"), "alice", "payments"),
        (digest("key-root"), "root", ADMINS),
    ]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let stop = CancellationToken::new();
    let app = app(AppParts {
        api,
        authenticator: keys,
        proxy: None,
        grpc: None,
        console: None,
    });
    let server = tokio::spawn(serve(listener, app, None, stop.clone()));

    let http = reqwest::Client::new();
    let list = format!("{P}/instances");
    let get = reqwest::Method::GET;

    let (status, _) = call(&http, &base, get.clone(), &list, None).await?;
    ensure!(status == StatusCode::UNAUTHORIZED, "no key: {status}");
    let (status, body) = call(&http, &base, get.clone(), &list, Some("key-mallory")).await?;
    ensure!(status == StatusCode::UNAUTHORIZED, "unknown key: {status}");
    println!(
        "proved: no key and an unknown key get 401 ({})",
        body["message"]
    );

    let (status, body) = call(&http, &base, get.clone(), &list, Some("key-alice")).await?;
    ensure!(status == StatusCode::OK, "alice lists: {status} {body}");
    ensure!(
        names(&body) == ["payments-prod", "shared-tools"],
        "alice sees {:?}",
        names(&body)
    );
    let (status, body) = call(&http, &base, get.clone(), &list, Some("key-root")).await?;
    ensure!(status == StatusCode::OK, "root lists: {status} {body}");
    ensure!(names(&body).len() == 3, "root sees {:?}", names(&body));
    println!(
        "proved: alice (team payments) lists payments-prod and shared-tools; root lists all three"
    );

    let other = format!("{P}/instances/search-prod");
    let (status, body) = call(&http, &base, get.clone(), &other, Some("key-alice")).await?;
    ensure!(
        status == StatusCode::FORBIDDEN,
        "alice reads search-prod: {status}"
    );
    println!(
        "proved: alice reading search-prod gets 403 ({})",
        body["message"]
    );
    let shared = format!("{P}/instances/shared-tools");
    let (status, _) = call(
        &http,
        &base,
        reqwest::Method::DELETE,
        &shared,
        Some("key-alice"),
    )
    .await?;
    ensure!(
        status == StatusCode::FORBIDDEN,
        "alice deletes shared-tools: {status}"
    );
    ensure!(
        instances.get_opt("shared-tools").await?.is_some(),
        "shared-tools was deleted"
    );
    println!("proved: alice may read shared-tools but deleting it gets 403 and it stays");

    stop.cancel();
    server.await.context("the API server task")??;
    host.shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teams_own_their_prefix_and_read_shared_instances() {
        let alice = Caller::new("alice", vec!["payments".into()]);
        let root = Caller::new("root", vec![ADMINS.into()]);
        let cases = [
            (&alice, Verb::Delete, Some("payments-prod"), true),
            (&alice, Verb::Get, Some("payments"), false),
            (&alice, Verb::Get, Some("paymentsx-prod"), false),
            (&alice, Verb::Get, Some("shared-tools"), true),
            (&alice, Verb::Update, Some("shared-tools"), false),
            (&alice, Verb::Get, Some("search-prod"), false),
            (&alice, Verb::List, None, false),
            (&root, Verb::List, None, true),
            (&root, Verb::Delete, Some("search-prod"), true),
        ];
        for (caller, verb, instance, want) in cases {
            assert_eq!(
                team_may(caller, verb, instance),
                want,
                "{} {verb:?} {instance:?}",
                caller.user
            );
        }
    }

    #[test]
    fn keys_are_known_by_digest_only() {
        let keys = ApiKeys::new(&[(digest("k1"), "u", "t")]);
        assert!(!keys.by_digest.contains_key("k1"));
        assert_eq!(digest("abc").len(), 64);
    }
}
