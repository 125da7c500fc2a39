//! Pull registration (`clusters:register`): the steps of `karmadactl register` that concern the
//! control plane, done by Kairship in one call. In the instance: a bootstrap token allowed only
//! to post CSRs, the agent's RBAC (karmadactl's), the `Cluster`; then the agent's client
//! certificate: a CSR posted with the bootstrap token, approved by Kairship, signed by the
//! instance's signer; the token is deleted once the certificate is issued. The answer is the
//! manifests the member applies, the certificate and key inside (see `agent.rs`).

use std::time::Duration;

use kube::api::{Api, DeleteParams, PostParams};
use kube::core::DynamicObject;
use kube_kit::client::{ClientOptions, client_from_kubeconfig_yaml, describe_kube_error};
use serde_json::{Value, json};

use super::{Created, DEFAULT_TOKEN_TTL, Join, MAX_TOKEN_TTL, check_endpoint, to_value};
use crate::access::{Caller, Verb};
use crate::api::error::{ApiError, Code};
use crate::api::inside::Inside;
use crate::api::kairship::KairshipService;
use crate::api::members::agent::{
    AgentParts, agent_csr, agent_key_and_request, agent_manifests, agent_rbac, approval,
    bootstrap_rbac, bootstrap_token, bootstrap_token_secret, certificate_signing_requests, issued,
    not_after, release_tag, with_token_user,
};
use crate::api::members::objects::{
    BOOTSTRAP_NAMESPACE, Planned, Side, SyncMode, namespaces, yaml_stream,
};
use crate::api::members::types::{RegisterMemberRequest, RegisterMemberResponse};
use crate::instance::Instance;

/// Karmada release of the agent image when the instance does not say.
const DEFAULT_AGENT_VERSION: &str = "v1.19.0";
/// How long the registration waits for the CSR to be signed.
const CERTIFICATE_WAIT: Duration = Duration::from_secs(60);
/// How long a fresh bootstrap token and its RBAC may take to be honoured by the instance.
const TOKEN_WAIT: Duration = Duration::from_secs(15);
/// Time one call to the instance may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// How Kairship reaches the instance, and what it knows of it.
struct InstanceAccess {
    /// The kubeconfig (as JSON) Kairship reaches the instance with.
    kubeconfig: Value,
    /// Its server.
    server: Option<String>,
    /// Its CA (PEM).
    ca: Option<String>,
    /// The instance's Karmada version, as its status says.
    karmada_version: Option<String>,
}

fn instance_error(what: &str, err: kube::Error) -> ApiError {
    match err {
        kube::Error::Api(status) => ApiError::from_kube_status(&status, what),
        other => ApiError::unavailable(format!("{what}: {}", describe_kube_error(&other))),
    }
}

async fn within<T>(
    what: &str,
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiError> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(result) => result.map_err(|e| instance_error(what, e)),
        Err(_) => Err(ApiError::unavailable(format!(
            "{what}: the instance did not answer within {CALL_TIMEOUT:?}"
        ))),
    }
}

async fn client_of(kubeconfig: &Value, source: &str) -> Result<kube::Client, ApiError> {
    let text = serde_json::to_string(kubeconfig).map_err(|e| ApiError::internal(e.to_string()))?;
    let mut options = ClientOptions::new("kairship-register");
    options.read_timeout = Some(CALL_TIMEOUT);
    client_from_kubeconfig_yaml(&text, None, &options, source)
        .await
        .map_err(|e| ApiError::unavailable(format!("cannot reach the instance: {e}")))
}

fn csr_api(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &certificate_signing_requests())
}

fn random_suffix() -> Result<String, ApiError> {
    let mut random = [0u8; 5];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random)
        .map_err(|_| ApiError::internal("no random bytes for the CSR name"))?;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    Ok(random
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect())
}

impl KairshipService {
    /// Pull registration: see [`KairshipApi::register_member`](crate::api::KairshipApi::register_member).
    pub(in crate::api) async fn pull_register(
        &self,
        caller: &Caller,
        req: RegisterMemberRequest,
    ) -> Result<RegisterMemberResponse, ApiError> {
        crate::api::members::objects::check_member_name(&req.name)?;
        let placement = req.placement();
        crate::api::members::objects::check_placement(&placement)?;
        if let Some(endpoint) = &req.karmada_endpoint {
            check_endpoint("karmadaEndpoint", endpoint)?;
        }
        if let Some(endpoint) = &req.api_endpoint {
            check_endpoint("apiEndpoint", endpoint)?;
        }
        let ttl = req.token_ttl_seconds.unwrap_or(DEFAULT_TOKEN_TTL);
        if !(60..=MAX_TOKEN_TTL).contains(&ttl) {
            return Err(ApiError::invalid_field(
                "tokenTtlSeconds",
                format!("must be between 60 and {MAX_TOKEN_TTL}"),
            ));
        }
        if let Some(image) = &req.agent_image
            && (image.is_empty() || image.len() > 512 || image.chars().any(char::is_whitespace))
        {
            return Err(ApiError::invalid_field(
                "agentImage",
                "is not an image reference",
            ));
        }
        let call = Inside::clusters(&req.instance, Verb::Create, "join member clusters")
            .named("cluster", &req.name);
        self.inside(caller, call, |_| async {
            let access = self.instance_access(&req.instance).await?;
            let endpoint = match (&req.karmada_endpoint, &access.server) {
                (Some(e), _) | (None, Some(e)) => e.clone(),
                (None, None) => {
                    return Err(ApiError::invalid_field(
                        "karmadaEndpoint",
                        "the instance's kubeconfig names no server: give the endpoint members reach",
                    ));
                }
            };
            let mut random = [0u8; 22];
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random)
                .map_err(|_| ApiError::internal("no random bytes for the bootstrap token"))?;
            let (id, secret) = bootstrap_token(&random);
            let expiration = jiff::Timestamp::now()
                .checked_add(jiff::SignedDuration::from_secs(i64::from(ttl)))
                .map_err(|e| ApiError::internal(e.to_string()))?
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            let mut join = Join {
                service: self,
                instance: &req.instance,
                cluster: &req.name,
                caller,
                member: None,
                created: Vec::new(),
                step: 0,
            };
            let bootstrap_ns = Planned {
                resource: namespaces(),
                namespace: None,
                name: BOOTSTRAP_NAMESPACE.to_owned(),
                body: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": BOOTSTRAP_NAMESPACE}}),
                shared: true,
            };
            join.ensure(Side::Karmada, &bootstrap_ns).await?;
            let token_secret =
                bootstrap_token_secret(&req.instance, &req.name, &id, &secret, &expiration);
            join.ensure(Side::Karmada, &token_secret).await?;
            for p in bootstrap_rbac(&req.instance, &req.name)
                .into_iter()
                .chain(agent_rbac(&req.instance, &req.name))
            {
                join.ensure(Side::Karmada, &p).await?;
            }
            let cluster = Planned {
                resource: crate::api::kinds::clusters_resource(),
                namespace: None,
                name: req.name.clone(),
                body: crate::api::members::objects::cluster_object(
                    &req.instance,
                    &req.name,
                    SyncMode::Pull,
                    req.api_endpoint.as_deref(),
                    None,
                    &placement,
                ),
                shared: false,
            };
            join.ensure(Side::Karmada, &cluster).await?;

            let token = format!("{id}.{secret}");
            let (key, certificate) = match join.agent_certificate(&access, &token).await {
                Ok(issued) => issued,
                Err((step, err)) => return Err(join.failed(&step, err).await),
            };
            // The token has done its one job; nothing else may use it.
            let token_target = join.target(&crate::api::members::objects::secrets(), Some(BOOTSTRAP_NAMESPACE));
            if let Err(err) = self
                .router
                .delete(&token_target, &token_secret.name, &DeleteParams::default())
                .await
                && !err.is_not_found()
            {
                tracing::warn!(instance = %req.instance, cluster = %req.name, "the bootstrap token could not be deleted; it expires at {expiration}");
            }

            let image = req.agent_image.clone().unwrap_or_else(|| {
                format!(
                    "docker.io/karmada/karmada-agent:{}",
                    release_tag(
                        access
                            .karmada_version
                            .as_deref()
                            .unwrap_or(DEFAULT_AGENT_VERSION)
                    )
                )
            });
            let manifests = agent_manifests(&AgentParts {
                cluster: &req.name,
                karmada_endpoint: &endpoint,
                karmada_ca: access.ca.as_deref(),
                client_certificate: &certificate,
                client_key: &key,
                image: &image,
                member_endpoint: req.api_endpoint.as_deref(),
                placement: &placement,
            });
            let yaml = yaml_stream(&manifests)?;
            tracing::info!(instance = %req.instance, cluster = %req.name, "registered member cluster (Pull)");
            Ok(RegisterMemberResponse {
                cluster: req.name.clone(),
                karmada_endpoint: endpoint,
                token_id: id,
                expiration: not_after(&certificate).unwrap_or_default(),
                manifests,
                yaml,
            })
        })
        .await
    }

    /// How Kairship reaches `instance` (its kubeconfig), and its Karmada version.
    async fn instance_access(&self, instance: &str) -> Result<InstanceAccess, ApiError> {
        let object = self.read_instance(instance).await?;
        let instance: Instance = serde_json::from_value(to_value(&object))
            .map_err(|e| ApiError::internal(format!("instance {instance}: {e}")))?;
        // Written by the connection controller (the instance's own Karmada release).
        let karmada_version = instance
            .status
            .as_ref()
            .and_then(|s| s.karmada_version.clone());
        let kubeconfig = crate::controllers::connection::find_kubeconfig(
            &self.host,
            &instance,
            self.config.host_timeout,
        )
        .await
        .map_err(|e| ApiError::unavailable(format!("the instance's kubeconfig: {e}")))?
        .ok_or_else(|| {
            ApiError::failed_precondition("the instance's kubeconfig cannot be found")
        })?;
        let kubeconfig: Value = serde_saphyr::from_str(&kubeconfig.yaml)
            .map_err(|_| ApiError::failed_precondition("the instance's kubeconfig is not YAML"))?;
        let current = kubeconfig.get("current-context").and_then(Value::as_str);
        let cluster_name = kubeconfig
            .get("contexts")
            .and_then(Value::as_array)
            .and_then(|c| {
                c.iter()
                    .find(|c| c.get("name").and_then(Value::as_str) == current)
            })
            .and_then(|c| c.pointer("/context/cluster"))
            .and_then(Value::as_str);
        let cluster = kubeconfig
            .get("clusters")
            .and_then(Value::as_array)
            .and_then(|c| {
                c.iter().find(|c| {
                    cluster_name.is_none() || c.get("name").and_then(Value::as_str) == cluster_name
                })
            })
            .and_then(|c| c.get("cluster"));
        let server = cluster
            .and_then(|c| c.get("server"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let ca = cluster
            .and_then(|c| c.get("certificate-authority-data"))
            .and_then(Value::as_str)
            .and_then(|b| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(b).ok()
            })
            .and_then(|b| String::from_utf8(b).ok());
        Ok(InstanceAccess {
            kubeconfig,
            server,
            ca,
            karmada_version,
        })
    }
}

impl Join<'_> {
    /// The agent's key and client certificate (PEM): the CSR posted with the bootstrap token
    /// (as `karmadactl register` does), approved by Kairship, signed by the instance's signer.
    /// A failure names its step; the caller undoes what the registration created.
    async fn agent_certificate(
        &mut self,
        access: &InstanceAccess,
        token: &str,
    ) -> Result<(String, String), (String, ApiError)> {
        self.step += 1;
        let step = format!("step {} (the agent's certificate request)", self.step);
        let fail = |err: ApiError| (step.clone(), err);
        let (key, request) = agent_key_and_request(self.cluster).map_err(fail)?;
        let name = format!("{}-{}", self.cluster, random_suffix().map_err(fail)?);
        let csr: DynamicObject =
            serde_json::from_value(agent_csr(self.instance, self.cluster, &name, &request))
                .map_err(|e| fail(ApiError::internal(e.to_string())))?;
        let as_token = client_of(
            &with_token_user(&access.kubeconfig, token),
            "the bootstrap token",
        )
        .await
        .map_err(fail)?;
        // A fresh token and its RBAC may take a moment to be honoured (informer caches).
        let deadline = tokio::time::Instant::now() + TOKEN_WAIT;
        loop {
            match within(
                "posting the CSR with the bootstrap token",
                csr_api(&as_token).create(&PostParams::default(), &csr),
            )
            .await
            {
                Ok(_) => break,
                Err(err)
                    if matches!(err.code, Code::Unauthenticated | Code::PermissionDenied)
                        && tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(err) => return Err(fail(err)),
            }
        }
        self.created.push(Created {
            side: Side::Karmada,
            resource: certificate_signing_requests(),
            namespace: None,
            name: name.clone(),
        });

        self.step += 1;
        let step = format!("step {} (approve CSR {name})", self.step);
        let fail = |err: ApiError| (step.clone(), err);
        let as_kairship = client_of(&access.kubeconfig, "the instance's kubeconfig")
            .await
            .map_err(fail)?;
        let api = csr_api(&as_kairship);
        let current = within("reading the CSR", api.get(&name))
            .await
            .map_err(fail)?;
        let approved = approval(&to_value(&current), &self.caller.user);
        within(
            "approving the CSR",
            api.replace_subresource("approval", &name, &PostParams::default(), &approved),
        )
        .await
        .map_err(fail)?;

        self.step += 1;
        let step = format!(
            "step {} (wait for the certificate of CSR {name})",
            self.step
        );
        let fail = |err: ApiError| (step.clone(), err);
        let deadline = tokio::time::Instant::now() + CERTIFICATE_WAIT;
        loop {
            let csr = within("reading the CSR", api.get(&name))
                .await
                .map_err(fail)?;
            match issued(&to_value(&csr)) {
                Ok(Some(certificate)) => return Ok((key, certificate)),
                Ok(None) => {}
                Err(reason) => return Err(fail(ApiError::failed_precondition(reason))),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(fail(ApiError::unavailable(format!(
                    "no certificate was issued within {CERTIFICATE_WAIT:?} (does the instance \
                     run kube-controller-manager's csrsigning controller?)"
                ))));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
