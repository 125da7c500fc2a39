//! `AdoptInstance`: adopting a Karmada from a kubeconfig handed to the API inline. The call
//! stores the kubeconfig in a Secret on the host (labelled with the instance and, once the
//! Instance exists, owned by it, so deleting the Instance removes it) and creates the
//! Adopt-mode Instance pointing at it: both or neither.
//!
//! The kubeconfig is a credential: it is checked (it parses and its current context names a
//! cluster with a server) but never put in an answer, an error message or a log line.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::Kubeconfig;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::access::{Caller, InstanceResource, Verb};
use crate::api::Object;
use crate::api::body::check_name;
use crate::api::error::ApiError;
use crate::api::kairship::KairshipService;
use crate::instance::{
    DEFAULT_KUBECONFIG_KEY, DeletionPolicy, INSTANCE_LABEL, Instance, InstanceMode, InstanceSpec,
    MANAGED_BY_LABEL, MANAGED_BY_VALUE, SecretKeyReference,
};

/// Namespace of the kubeconfig Secrets of adopted instances unless the call names another.
pub const DEFAULT_SECRET_NAMESPACE: &str = "kairship-system";
/// Largest kubeconfig accepted (a Secret holds at most 1 MiB).
pub const MAX_KUBECONFIG_BYTES: usize = 512 * 1024;

/// Body of `POST instances/{instance}/adopt`.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdoptInstanceOptions {
    /// The Karmada API server's kubeconfig (YAML or JSON text). Its current context must
    /// name a cluster with a server. Stored in a Secret; never returned.
    pub kubeconfig: String,
    /// Display name of the instance (`spec.alias`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// `Delete` (default) or `Retain` (`spec.deletionPolicy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<String>,
    /// Namespace of the Secret on the host; default `kairship-system`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_namespace: Option<String>,
    /// Labels of the Instance.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl std::fmt::Debug for AdoptInstanceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdoptInstanceOptions")
            .field("kubeconfig", &"<redacted>")
            .field("alias", &self.alias)
            .field("deletion_policy", &self.deletion_policy)
            .field("secret_namespace", &self.secret_namespace)
            .field("labels", &self.labels)
            .finish()
    }
}

/// `AdoptInstance`: the Instance `instance`, adopted from an inline kubeconfig.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AdoptInstanceRequest {
    /// Instance name.
    pub instance: String,
    /// Everything else.
    pub options: AdoptInstanceOptions,
}

impl std::fmt::Debug for AdoptInstanceRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdoptInstanceRequest")
            .field("instance", &self.instance)
            .field("options", &self.options)
            .finish()
    }
}

/// Checks that `yaml` is a kubeconfig whose current context names a cluster with an
/// `http(s)` server. Messages say what is wrong without quoting the text.
pub fn check_kubeconfig(yaml: &str) -> Result<(), ApiError> {
    let bad = |m: String| ApiError::invalid_field("kubeconfig", m);
    if yaml.trim().is_empty() {
        return Err(bad(
            "is empty: paste the Karmada API server's kubeconfig".into()
        ));
    }
    if yaml.len() > MAX_KUBECONFIG_BYTES {
        return Err(bad(format!(
            "is {} bytes; at most {MAX_KUBECONFIG_BYTES} are accepted",
            yaml.len()
        )));
    }
    // The parser's own message may quote the text (a credential): only say that it failed.
    let config = Kubeconfig::from_yaml(yaml).map_err(|_| {
        bad(
            "does not parse as a kubeconfig (YAML or JSON with clusters, contexts and users)"
                .into(),
        )
    })?;
    let current = config
        .current_context
        .as_deref()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| bad("has no current-context".into()))?;
    let context = config
        .contexts
        .iter()
        .find(|c| c.name == current)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| {
            bad(format!(
                "its current-context {current:?} is not among its contexts"
            ))
        })?;
    let cluster = config
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| {
            bad(format!(
                "context {current:?} names cluster {:?}, which it does not define",
                context.cluster
            ))
        })?;
    let server = cluster
        .server
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad(format!("cluster {:?} has no server", context.cluster)))?;
    let valid_url = server
        .parse::<http::Uri>()
        .ok()
        .is_some_and(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some());
    if !valid_url {
        return Err(bad(format!(
            "the server of cluster {:?} is not an http(s) URL",
            context.cluster
        )));
    }
    Ok(())
}

/// Name of the Secret holding the kubeconfig of the adopted instance `instance`.
pub fn secret_name(instance: &str) -> String {
    format!("{instance}-kubeconfig")
}

/// The Secret and the Instance an adoption creates, after checking the request (nothing is
/// created when this fails).
pub fn adopt_objects(req: &AdoptInstanceRequest) -> Result<(Secret, Instance), ApiError> {
    check_name("instance", &req.instance)?;
    let o = &req.options;
    let namespace = o
        .secret_namespace
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(DEFAULT_SECRET_NAMESPACE);
    check_name("secretNamespace", namespace)?;
    let deletion_policy = match o.deletion_policy.as_deref().map(str::trim) {
        None | Some("") | Some("Delete") => DeletionPolicy::Delete,
        Some("Retain") => DeletionPolicy::Retain,
        Some(other) => {
            return Err(ApiError::invalid_field(
                "deletionPolicy",
                format!("{other:?} is not Delete or Retain"),
            ));
        }
    };
    check_kubeconfig(&o.kubeconfig)?;
    let name = secret_name(&req.instance);
    let spec = InstanceSpec {
        mode: InstanceMode::Adopt,
        kubeconfig_secret_ref: Some(SecretKeyReference {
            namespace: namespace.to_owned(),
            name: name.clone(),
            key: Some(DEFAULT_KUBECONFIG_KEY.to_owned()),
        }),
        provision: None,
        alias: o
            .alias
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned),
        deletion_policy,
    };
    spec.validate(None)
        .map_err(|e| ApiError::invalid(format!("spec: {e}")))?;
    let mut instance = Instance::new(&req.instance, spec);
    if !o.labels.is_empty() {
        instance.metadata.labels = Some(o.labels.clone());
    }
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([
                (INSTANCE_LABEL.to_owned(), req.instance.clone()),
                (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(BTreeMap::from([(
            DEFAULT_KUBECONFIG_KEY.to_owned(),
            ByteString(o.kubeconfig.clone().into_bytes()),
        )])),
        ..Secret::default()
    };
    Ok((secret, instance))
}

/// The owner reference making `instance` the owner of its kubeconfig Secret.
fn owner_reference(instance: &Instance) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: format!("{}/{}", crate::instance::GROUP, crate::instance::VERSION),
        kind: "Instance".to_owned(),
        name: instance.metadata.name.clone()?,
        uid: instance.metadata.uid.clone()?,
        ..OwnerReference::default()
    })
}

impl KairshipService {
    /// [`KairshipApi::adopt_instance`](super::KairshipApi::adopt_instance).
    pub(super) async fn adopt_instance_inline(
        &self,
        caller: &Caller,
        req: AdoptInstanceRequest,
    ) -> Result<Object, ApiError> {
        self.authorize(
            caller,
            Verb::Create,
            InstanceResource::Instances,
            None,
            "create instances",
        )
        .await?;
        let (secret, instance) = adopt_objects(&req)?;
        let name = req.instance.as_str();
        let namespace = secret.metadata.namespace.clone().unwrap_or_default();
        let secret_name = secret.metadata.name.clone().unwrap_or_default();
        let secrets: Api<Secret> = Api::namespaced(self.host.clone(), &namespace);
        let instances: Api<Instance> = Api::all(self.host.clone());
        // An existing Secret of that name is never overwritten: the create fails instead.
        self.host_call(
            &format!("store the kubeconfig of instance {name} in Secret {namespace}/{secret_name}"),
            secrets.create(&PostParams::default(), &secret),
        )
        .await?;
        let created = match self
            .host_call(
                &format!("create instance {name}"),
                instances.create(&PostParams::default(), &instance),
            )
            .await
        {
            Ok(created) => created,
            Err(err) => {
                self.remove_secret(&secrets, &secret_name).await;
                return Err(err);
            }
        };
        let Some(owner) = owner_reference(&created) else {
            return Err(ApiError::internal(format!(
                "instance {name} was created without a uid"
            )));
        };
        let patch = serde_json::json!({"metadata": {"ownerReferences": [owner]}});
        if let Err(err) = self
            .host_call(
                &format!("make instance {name} the owner of Secret {namespace}/{secret_name}"),
                secrets.patch(&secret_name, &PatchParams::default(), &Patch::Merge(&patch)),
            )
            .await
        {
            // Both or neither: an Instance whose Secret would outlive it is taken back.
            if let Err(e) = self
                .host_call(
                    &format!("delete instance {name}"),
                    instances.delete(name, &DeleteParams::default()),
                )
                .await
            {
                tracing::warn!(instance = name, error = %e.message, "cannot take back the instance after a failed adoption");
            }
            self.remove_secret(&secrets, &secret_name).await;
            return Err(err);
        }
        serde_json::to_value(&created)
            .map_err(|e| ApiError::internal(format!("cannot encode an instance: {e}")))
    }

    async fn remove_secret(&self, secrets: &Api<Secret>, name: &str) {
        if let Err(e) = self
            .host_call(
                &format!("delete Secret {name}"),
                secrets.delete(name, &DeleteParams::default()),
            )
            .await
        {
            tracing::warn!(secret = name, error = %e.message, "cannot remove the kubeconfig Secret of a failed adoption");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Code;

    const GOOD: &str = "apiVersion: v1\nkind: Config\ncurrent-context: k\nclusters:\n- name: c\n  cluster:\n    server: https://karmada.example:5443\ncontexts:\n- name: k\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: secret-token-value\n";

    #[test]
    fn kubeconfig_checks() {
        let cases: [(&str, String, Option<&str>); 8] = [
            ("good", GOOD.into(), None),
            ("empty", "  \n".into(), Some("is empty")),
            (
                "not yaml",
                "secret-token-value: [".into(),
                Some("does not parse"),
            ),
            (
                "no current context",
                GOOD.replace("current-context: k\n", ""),
                Some("no current-context"),
            ),
            (
                "unknown context",
                GOOD.replace("current-context: k", "current-context: other"),
                Some("not among its contexts"),
            ),
            (
                "unknown cluster",
                GOOD.replace("    cluster: c", "    cluster: d"),
                Some("does not define"),
            ),
            (
                "no server",
                GOOD.replace(
                    "    server: https://karmada.example:5443\n",
                    "    insecure-skip-tls-verify: true\n",
                ),
                Some("has no server"),
            ),
            (
                "not a URL",
                GOOD.replace("https://karmada.example:5443", "karmada"),
                Some("not an http(s) URL"),
            ),
        ];
        for (what, yaml, expected) in cases {
            match (check_kubeconfig(&yaml), expected) {
                (Ok(()), None) => {}
                (Err(err), Some(text)) => {
                    assert_eq!(err.code, Code::InvalidArgument, "{what}");
                    assert!(err.message.contains(text), "{what}: {}", err.message);
                    assert!(
                        !err.message.contains("secret-token-value"),
                        "{what}: {}",
                        err.message
                    );
                }
                (got, _) => panic!("{what}: {got:?}"),
            }
        }
    }

    #[test]
    fn adoption_builds_a_labelled_secret_and_the_instance() {
        let req = AdoptInstanceRequest {
            instance: "prod".into(),
            options: AdoptInstanceOptions {
                kubeconfig: GOOD.into(),
                alias: Some(" Production ".into()),
                deletion_policy: Some("Retain".into()),
                secret_namespace: None,
                labels: BTreeMap::from([("team".into(), "a".into())]),
            },
        };
        let (secret, instance) = adopt_objects(&req).unwrap();
        assert_eq!(secret.metadata.name.as_deref(), Some("prod-kubeconfig"));
        assert_eq!(
            secret.metadata.namespace.as_deref(),
            Some("kairship-system")
        );
        assert_eq!(
            secret.metadata.labels.as_ref().unwrap()[INSTANCE_LABEL],
            "prod"
        );
        assert_eq!(
            secret.data.as_ref().unwrap()["kubeconfig"].0,
            GOOD.as_bytes()
        );
        let spec = &instance.spec;
        assert_eq!(spec.mode, InstanceMode::Adopt);
        assert_eq!(spec.alias.as_deref(), Some("Production"));
        assert_eq!(spec.deletion_policy, DeletionPolicy::Retain);
        let reference = spec.kubeconfig_secret_ref.as_ref().unwrap();
        assert_eq!(
            (
                reference.namespace.as_str(),
                reference.name.as_str(),
                reference.key.as_deref()
            ),
            ("kairship-system", "prod-kubeconfig", Some("kubeconfig"))
        );
        assert_eq!(instance.metadata.labels.as_ref().unwrap()["team"], "a");
        assert!(!format!("{req:?}").contains("secret-token-value"));
    }

    #[test]
    fn bad_requests_are_refused_by_field() {
        let with = |f: &dyn Fn(&mut AdoptInstanceRequest)| {
            let mut req = AdoptInstanceRequest {
                instance: "prod".into(),
                options: AdoptInstanceOptions {
                    kubeconfig: GOOD.into(),
                    ..AdoptInstanceOptions::default()
                },
            };
            f(&mut req);
            adopt_objects(&req).unwrap_err().message
        };
        assert!(with(&|r| r.instance = "Prod!".into()).contains("instance"));
        assert!(
            with(&|r| r.options.deletion_policy = Some("Keep".into())).contains("deletionPolicy")
        );
        assert!(
            with(&|r| r.options.secret_namespace = Some("a/b".into())).contains("secretNamespace")
        );
        assert!(with(&|r| r.options.kubeconfig = "x".into()).contains("kubeconfig"));
    }
}
