//! Joining member clusters for real: Push joins from the member's kubeconfig (RBAC and token
//! in the member, credential Secrets and the `Cluster` in the instance), Pull registrations
//! (`pull.rs`: the agent's RBAC, `Cluster` and client certificate in the instance; the agent's
//! manifests returned), typed updates of labels, taints and location, and unjoining
//! (`unjoin.rs`).
//!
//! Every join is a list of steps; each object a step creates is remembered, and a failing step
//! removes them again (newest first), so a failed call leaves nothing behind. Objects that
//! exist already and carry the join's label ([`super::objects::MEMBER_LABEL`]) are brought up to date
//! instead, so running the same join again converges. The member's kubeconfig and every token
//! stay in memory for the call: nothing here logs or returns them.

mod pull;
mod unjoin;

use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject};
use kube::{Api, Client};
use kube_kit::client::{ClientOptions, client_from_config, describe_kube_error};
use serde_json::{Value, json};

use super::objects::{
    BOOTSTRAP_NAMESPACE, CLUSTER_NAMESPACE, MemberNames, Planned, Side, SyncMode,
    check_member_name, check_placement, cluster_object, filled_token, impersonator_secret_name,
    karmada_secrets, made_by_join, member_objects, namespaces, secrets, update_patch,
};
use super::types::{JoinMemberRequest, UpdateMemberRequest};
use crate::access::{Caller, Verb};
use crate::api::Object;
use crate::api::error::{ApiError, Code};
use crate::api::inside::Inside;
use crate::api::kairship::KairshipService;
use crate::router::{ListQuery, ResourceTarget, RouterError};

/// How long a join waits for the member's token controller to fill the token Secrets.
const TOKEN_WAIT: Duration = Duration::from_secs(30);
/// Time one call to a member cluster may take.
const MEMBER_TIMEOUT: Duration = Duration::from_secs(15);
/// Bootstrap token lifetime when the request names none, and the longest allowed.
const DEFAULT_TOKEN_TTL: u32 = 86_400;
const MAX_TOKEN_TTL: u32 = 7 * 86_400;

/// One object a call created, to be removed if a later step fails.
struct Created {
    side: Side,
    resource: ApiResource,
    namespace: Option<String>,
    name: String,
}

/// The clusters a join writes to and what it created so far.
struct Join<'a> {
    service: &'a KairshipService,
    instance: &'a str,
    cluster: &'a str,
    caller: &'a Caller,
    member: Option<Client>,
    created: Vec<Created>,
    step: usize,
}

fn member_error(err: kube::Error) -> ApiError {
    match err {
        kube::Error::Api(status) => {
            ApiError::from_kube_status(&status, "the member cluster answered")
        }
        other => ApiError::unavailable(format!(
            "the member cluster cannot be reached: {}",
            describe_kube_error(&other)
        )),
    }
}

fn is_status(err: &ApiError, code: Code) -> bool {
    err.code == code
}

fn member_api(client: &Client, resource: &ApiResource, ns: Option<&str>) -> Api<DynamicObject> {
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

async fn timed<T>(call: impl Future<Output = Result<T, kube::Error>>) -> Result<T, ApiError> {
    match tokio::time::timeout(MEMBER_TIMEOUT, call).await {
        Ok(result) => result.map_err(member_error),
        Err(_) => Err(ApiError::unavailable(format!(
            "the member cluster did not answer within {MEMBER_TIMEOUT:?}"
        ))),
    }
}

fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

impl Join<'_> {
    fn target(&self, resource: &ApiResource, ns: Option<&str>) -> ResourceTarget {
        match ns {
            Some(ns) => ResourceTarget::namespaced(self.instance, resource.clone(), ns),
            None => ResourceTarget::all(self.instance, resource.clone()),
        }
        .acting_as(self.caller.clone())
    }

    fn member(&self) -> Result<&Client, ApiError> {
        self.member
            .as_ref()
            .ok_or_else(|| ApiError::internal("no member client"))
    }

    async fn create(&self, side: Side, p: &Planned) -> Result<Value, ApiError> {
        match side {
            Side::Member => {
                let api = member_api(self.member()?, &p.resource, p.namespace.as_deref());
                let object: DynamicObject = serde_json::from_value(p.body.clone())
                    .map_err(|e| ApiError::internal(format!("{}: {e}", p.describe())))?;
                Ok(to_value(
                    &timed(api.create(&PostParams::default(), &object)).await?,
                ))
            }
            Side::Karmada => {
                let target = self.target(&p.resource, p.namespace.as_deref());
                let outcome = self
                    .service
                    .router
                    .create(&target, &p.body, &PostParams::default())
                    .await?;
                Ok(outcome.object)
            }
        }
    }

    async fn get(&self, side: Side, p: &Planned) -> Result<Value, ApiError> {
        match side {
            Side::Member => {
                let api = member_api(self.member()?, &p.resource, p.namespace.as_deref());
                Ok(to_value(&timed(api.get(&p.name)).await?))
            }
            Side::Karmada => {
                let target = self.target(&p.resource, p.namespace.as_deref());
                let object = self.service.router.get(&target, &p.name).await?;
                Ok(to_value(&object))
            }
        }
    }

    async fn replace(&self, side: Side, p: &Planned, body: &Value) -> Result<Value, ApiError> {
        match side {
            Side::Member => {
                let api = member_api(self.member()?, &p.resource, p.namespace.as_deref());
                let object: DynamicObject = serde_json::from_value(body.clone())
                    .map_err(|e| ApiError::internal(format!("{}: {e}", p.describe())))?;
                Ok(to_value(
                    &timed(api.replace(&p.name, &PostParams::default(), &object)).await?,
                ))
            }
            Side::Karmada => {
                let target = self.target(&p.resource, p.namespace.as_deref());
                let outcome = self
                    .service
                    .router
                    .replace(&target, &p.name, body, &PostParams::default())
                    .await?;
                Ok(outcome.object)
            }
        }
    }

    /// Creates `p`, or brings an object a join of this cluster made up to date; an object of
    /// that name made by anyone else is a conflict (unless `p` may be shared). Remembers what
    /// it created.
    async fn ensure(&mut self, side: Side, p: &Planned) -> Result<Value, ApiError> {
        self.step += 1;
        let what = format!("step {} (create {} {side})", self.step, p.describe());
        let result = async {
            match self.create(side, p).await {
                Ok(object) => Ok((object, true)),
                Err(err) if is_status(&err, Code::AlreadyExists) => {
                    let existing = self.get(side, p).await?;
                    if p.shared {
                        return Ok((existing, false));
                    }
                    if !made_by_join(&existing, self.cluster) {
                        return Err(ApiError::new(
                            Code::AlreadyExists,
                            format!(
                                "{} exists {side} and was not made by a join of {}: remove it \
                                 or choose another cluster name",
                                p.describe(),
                                self.cluster
                            ),
                        ));
                    }
                    let mut body = p.body.clone();
                    body["metadata"]["resourceVersion"] =
                        existing["metadata"]["resourceVersion"].clone();
                    if let Some(data) = existing
                        .get("data")
                        .filter(|_| p.body.get("data").is_none())
                    {
                        // A token Secret keeps what its token controller wrote.
                        body["data"] = data.clone();
                    }
                    if let Some(annotations) = existing.pointer("/metadata/annotations") {
                        let mut merged = annotations.clone();
                        if let (Some(m), Some(planned)) = (
                            merged.as_object_mut(),
                            p.body
                                .pointer("/metadata/annotations")
                                .and_then(Value::as_object),
                        ) {
                            m.extend(planned.clone());
                        }
                        body["metadata"]["annotations"] = merged;
                    }
                    Ok((self.replace(side, p, &body).await?, false))
                }
                Err(err) => Err(err),
            }
        }
        .await;
        match result {
            Ok((object, created)) => {
                if created {
                    self.created.push(Created {
                        side,
                        resource: p.resource.clone(),
                        namespace: p.namespace.clone(),
                        name: p.name.clone(),
                    });
                }
                Ok(object)
            }
            Err(err) => Err(self.failed(&what, err).await),
        }
    }

    /// Removes what this call created, newest first, and says which step failed and what
    /// could not be removed.
    async fn failed(&mut self, step: &str, err: ApiError) -> ApiError {
        let mut left = Vec::new();
        while let Some(c) = self.created.pop() {
            let gone = match c.side {
                Side::Member => match self.member() {
                    Ok(client) => {
                        let api = member_api(client, &c.resource, c.namespace.as_deref());
                        match timed(api.delete(&c.name, &DeleteParams::background())).await {
                            Ok(_) => true,
                            Err(e) => is_status(&e, Code::NotFound),
                        }
                    }
                    Err(_) => false,
                },
                Side::Karmada => {
                    let target = self.target(&c.resource, c.namespace.as_deref());
                    match self
                        .service
                        .router
                        .delete(&target, &c.name, &DeleteParams::background())
                        .await
                    {
                        Ok(_) => true,
                        Err(e) => e.is_not_found(),
                    }
                }
            };
            if !gone {
                let ns = c.namespace.map(|n| format!("{n}/")).unwrap_or_default();
                left.push(format!("{} {ns}{} {}", c.resource.kind, c.name, c.side));
            }
        }
        let undo = if left.is_empty() {
            "everything this call created was removed".to_owned()
        } else {
            format!("these objects could not be removed: {}", left.join(", "))
        };
        ApiError::new(
            err.code,
            format!(
                "joining member cluster {} failed at {step}: {}; {undo}",
                self.cluster, err.message
            ),
        )
    }

    /// Waits until the member's token controller filled the token Secret `name`.
    async fn token_of(&mut self, name: &str) -> Result<(String, Option<String>), ApiError> {
        self.step += 1;
        let step = format!(
            "step {} (wait for the token of Secret {CLUSTER_NAMESPACE}/{name} in the member)",
            self.step
        );
        let api = match self.member() {
            Ok(client) => member_api(client, &secrets(), Some(CLUSTER_NAMESPACE)),
            Err(err) => return Err(self.failed(&step, err).await),
        };
        let deadline = tokio::time::Instant::now() + TOKEN_WAIT;
        loop {
            match timed(api.get(name)).await {
                Ok(secret) => {
                    if let Some(found) = filled_token(&to_value(&secret)) {
                        return Ok(found);
                    }
                }
                Err(err) => return Err(self.failed(&step, err).await),
            }
            if tokio::time::Instant::now() >= deadline {
                let err = ApiError::unavailable(format!(
                    "the member's token controller did not fill it within {TOKEN_WAIT:?} \
                     (does the member run kube-controller-manager?)"
                ));
                return Err(self.failed(&step, err).await);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// A client of the member from its kubeconfig text, and the API server URL it reaches.
async fn member_client(yaml: &str, context: Option<&str>) -> Result<(Client, String), ApiError> {
    let bad = |reason: String| {
        ApiError::invalid_field(
            "kubeconfig",
            format!("cannot use the member kubeconfig: {reason}"),
        )
    };
    let kubeconfig = kube::config::Kubeconfig::from_yaml(yaml)
        .map_err(|e| bad(kube_kit::client::describe_kubeconfig_error(&e)))?;
    super::objects::check_inline_kubeconfig(&kubeconfig)?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| bad(kube_kit::client::describe_kubeconfig_error(&e)))?;
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_owned();
    let mut client_options = ClientOptions::new("kairship-join");
    client_options.read_timeout = Some(MEMBER_TIMEOUT);
    let client = client_from_config(config, &client_options, "the member kubeconfig")
        .map_err(|e| bad(e.to_string()))?;
    Ok((client, server))
}

/// A client of a Push member from the credentials stored in the instance.
async fn stored_member_client(
    endpoint: &str,
    token: &str,
    ca: Option<&str>,
) -> Result<Client, ApiError> {
    use base64::Engine;
    let mut cluster = json!({"server": endpoint});
    if let Some(ca) = ca {
        cluster["certificate-authority-data"] =
            json!(base64::engine::general_purpose::STANDARD.encode(ca));
    }
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "member", "cluster": cluster}],
        "users": [{"name": "karmada", "user": {"token": token}}],
        "contexts": [{"name": "member", "context": {"cluster": "member", "user": "karmada"}}],
        "current-context": "member",
    });
    let text = serde_json::to_string(&kubeconfig).map_err(|e| ApiError::internal(e.to_string()))?;
    member_client(&text, None).await.map(|(client, _)| client)
}

fn check_endpoint(field: &str, url: &str) -> Result<(), ApiError> {
    let ok = (url.starts_with("https://") || url.starts_with("http://"))
        && url.len() <= 2048
        && url.parse::<http::Uri>().is_ok();
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_field(
            field,
            format!("{url:?} is not an http(s) URL"),
        ))
    }
}

fn decode_data(secret: &Value, key: &str) -> Option<String> {
    use base64::Engine;
    secret
        .pointer(&format!("/data/{key}"))
        .and_then(Value::as_str)
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
}

impl KairshipService {
    /// Push join: see [`KairshipApi::join_member`](super::KairshipApi::join_member).
    pub(super) async fn push_join(
        &self,
        caller: &Caller,
        req: JoinMemberRequest,
    ) -> Result<Object, ApiError> {
        check_member_name(&req.name)?;
        let placement = req.placement();
        check_placement(&placement)?;
        if let Some(endpoint) = &req.api_endpoint {
            check_endpoint("apiEndpoint", endpoint)?;
        }
        let call = Inside::clusters(&req.instance, Verb::Create, "join member clusters")
            .named("cluster", &req.name);
        self.inside(caller, call, |_| async {
            let (client, server) = member_client(&req.kubeconfig, req.context.as_deref()).await?;
            let endpoint = req.api_endpoint.clone().unwrap_or(server);
            let mut join = Join {
                service: self,
                instance: &req.instance,
                cluster: &req.name,
                caller,
                member: Some(client),
                created: Vec::new(),
                step: 0,
            };
            // Who the member's impersonator may impersonate: whoever may use the instance's
            // cluster proxy for this member (the proxy refuses everyone else before the member
            // is asked), never system:masters.
            let subjects = self.proxy_subjects(&req.instance, &req.name, caller).await?;
            // The member side: the anchor binding first, then its dependents.
            let mut planned = member_objects(&req.instance, &req.name, &subjects).into_iter();
            let anchor_plan = planned.next().ok_or_else(|| ApiError::internal("no objects"))?;
            let anchor = join.ensure(Side::Member, &anchor_plan).await?;
            let owner = json!([{
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "name": anchor_plan.name, "uid": anchor["metadata"]["uid"],
            }]);
            for mut p in planned {
                // A shared object (the namespace) is owned only if this join creates it.
                p.body["metadata"]["ownerReferences"] = owner.clone();
                join.ensure(Side::Member, &p).await?;
            }
            let names = MemberNames::of(&req.name);
            let (token, ca) = join.token_of(&names.token_secret).await?;
            let (impersonator_token, _) = join.token_of(&names.impersonator_token_secret).await?;
            let member_id = match join.member() {
                Ok(client) => timed(member_api(client, &namespaces(), None).get("kube-system"))
                    .await
                    .ok()
                    .and_then(|ns| ns.metadata.uid),
                Err(_) => None,
            };
            // The instance side: credentials, then the Cluster.
            let karmada_ns = Planned {
                resource: namespaces(),
                namespace: None,
                name: CLUSTER_NAMESPACE.to_owned(),
                body: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CLUSTER_NAMESPACE}}),
                shared: true,
            };
            join.ensure(Side::Karmada, &karmada_ns).await?;
            for p in karmada_secrets(&req.instance, &req.name, &token, ca.as_deref(), &impersonator_token) {
                join.ensure(Side::Karmada, &p).await?;
            }
            let cluster = Planned {
                resource: crate::api::kinds::clusters_resource(),
                namespace: None,
                name: req.name.clone(),
                body: cluster_object(
                    &req.instance,
                    &req.name,
                    SyncMode::Push,
                    Some(&endpoint),
                    member_id.as_deref(),
                    &placement,
                ),
                shared: false,
            };
            let object = join.ensure(Side::Karmada, &cluster).await?;
            tracing::info!(instance = %req.instance, cluster = %req.name, "joined member cluster (Push)");
            Ok(object)
        })
        .await
    }

    /// Typed update: see [`KairshipApi::update_member`](super::KairshipApi::update_member).
    pub(super) async fn member_update(
        &self,
        caller: &Caller,
        req: UpdateMemberRequest,
    ) -> Result<Object, ApiError> {
        let patch = update_patch(&req)?;
        let cluster = req.cluster.as_str();
        let call = Inside::clusters(&req.instance, Verb::Patch, "update member clusters")
            .named("cluster", cluster);
        self.inside(caller, call, |c| async move {
            let outcome = self
                .router
                .patch(
                    &c.target,
                    cluster,
                    &Patch::Merge(patch),
                    &PatchParams::default(),
                )
                .await?;
            Ok(outcome.object)
        })
        .await
    }

    /// The subjects the impersonator of member `cluster` may impersonate: those Karmada's RBAC
    /// lets use the cluster proxy of `cluster`, as Karmada's unified-auth controller finds
    /// them ([`super::objects::impersonated_subjects`]), read from the instance for `caller`.
    async fn proxy_subjects(
        &self,
        instance: &str,
        cluster: &str,
        caller: &Caller,
    ) -> Result<Vec<super::objects::Subject>, ApiError> {
        let mut lists = Vec::new();
        for resource in [
            super::objects::cluster_roles(),
            super::objects::cluster_role_bindings(),
        ] {
            let target = ResourceTarget::all(instance, resource).acting_as(caller.clone());
            let page = self
                .router
                .list(&target, &ListQuery::default())
                .await
                .map_err(|err| {
                    let err = ApiError::from(err);
                    ApiError::new(
                        err.code,
                        format!(
                            "reading who may use the cluster proxy of {cluster} in the instance \
                             (the member's impersonator may impersonate only them): {}",
                            err.message
                        ),
                    )
                })?;
            lists.push(page.items.iter().map(|o| to_value(o)).collect::<Vec<_>>());
        }
        Ok(super::objects::impersonated_subjects(
            cluster, &lists[0], &lists[1],
        ))
    }

    /// Deletes the instance-side objects of a join: credential Secrets (Push), bootstrap
    /// tokens and the agent's RBAC (Pull), those carrying the join's label only.
    async fn remove_karmada_side(&self, join: &Join<'_>) -> Result<(), ApiError> {
        let name = join.cluster;
        let mut doomed: Vec<(ResourceTarget, String)> = vec![
            (
                join.target(&secrets(), Some(CLUSTER_NAMESPACE)),
                name.to_owned(),
            ),
            (
                join.target(&secrets(), Some(CLUSTER_NAMESPACE)),
                impersonator_secret_name(name),
            ),
        ];
        doomed.extend(
            super::agent::registration_objects(name)
                .into_iter()
                .map(|(resource, ns, object)| (join.target(&resource, ns.as_deref()), object)),
        );
        let query = ListQuery {
            label_selector: Some(format!("{}={name}", super::objects::MEMBER_LABEL)),
            ..ListQuery::default()
        };
        // Bootstrap tokens and the agents' CSRs of Pull registrations, found by label.
        for labelled in [
            join.target(&secrets(), Some(BOOTSTRAP_NAMESPACE)),
            join.target(&super::agent::certificate_signing_requests(), None),
        ] {
            match self.router.list(&labelled, &query).await {
                Ok(page) => doomed.extend(
                    page.items
                        .iter()
                        .filter_map(|s| s.metadata.name.clone())
                        .map(|n| (labelled.clone(), n)),
                ),
                Err(err) if err.is_not_found() => {}
                Err(err) => return Err(err.into()),
            }
        }
        for (target, object) in doomed {
            let existing = match self.router.get(&target, &object).await {
                Ok(o) => to_value(&o),
                Err(err) if err.is_not_found() => continue,
                Err(err) => return Err(err.into()),
            };
            if !made_by_join(&existing, name) {
                continue;
            }
            match self
                .router
                .delete(&target, &object, &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(RouterError::Api { status, .. }) if status.code == 404 => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(())
    }
}
