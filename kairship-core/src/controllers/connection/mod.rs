//! Reaching an instance's Karmada apiserver: the kubeconfig comes from `kubeconfigSecretRef`
//! (Adopt) or from the Secret the karmada-operator publishes in its `Karmada` status
//! (Provision).

pub mod kubeconfig;

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};
use kube_kit::client::{ClientOptions, client_from_kubeconfig_yaml, describe_kube_error};

use crate::instance::{Instance, InstanceMode};
use crate::models::operator::Karmada;
use crate::naming::operator_karmada_name;
use kubeconfig::{ADOPT_KUBECONFIG_KEYS, KubeconfigKey, OPERATOR_KUBECONFIG_KEYS, kubeconfig_in};

/// Why an instance's credentials could not be obtained. Messages never carry credential
/// material.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// A host object could not be read.
    #[error("instance {instance}: cannot read {object}: {reason}")]
    Read {
        /// The instance.
        instance: String,
        /// `secret ns/name` or `karmada ns/name`.
        object: String,
        /// The API error, described.
        reason: String,
    },
    /// The kubeconfig is not valid UTF-8 or not a usable kubeconfig.
    #[error("instance {instance}: kubeconfig in {object} is unusable: {reason}")]
    Invalid {
        /// The instance.
        instance: String,
        /// Where it came from.
        object: String,
        /// What was wrong.
        reason: String,
    },
    /// The instance spec lacks what its mode needs.
    #[error("instance {0}: spec lacks the settings its mode requires")]
    Spec(String),
}

/// Where an instance's kubeconfig was found, and the text.
#[derive(Clone, PartialEq, Eq)]
pub struct Kubeconfig {
    /// `namespace/name@resourceVersion` of the Secret: changes whenever the content may have.
    pub key: String,
    /// The kubeconfig YAML.
    pub yaml: String,
}

impl std::fmt::Debug for Kubeconfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The YAML holds credentials: never print it.
        f.debug_struct("Kubeconfig")
            .field("key", &self.key)
            .finish()
    }
}

/// A client of an instance's control plane and the kubeconfig it was built from.
#[derive(Clone)]
pub struct Connection {
    /// The kubeconfig's identity.
    pub key: String,
    /// The client.
    pub client: Client,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("key", &self.key)
            .finish()
    }
}

/// Finds the kubeconfig of `instance`: `Ok(None)` while none is published yet (Provision before
/// the operator finished, or a Secret or key not created yet); [`lookup_kubeconfig`] says what
/// is missing.
pub async fn find_kubeconfig(
    host: &Client,
    instance: &Instance,
    timeout: Duration,
) -> Result<Option<Kubeconfig>, ConnectionError> {
    Ok(match lookup_kubeconfig(host, instance, timeout).await? {
        Lookup::Found(kubeconfig) => Some(kubeconfig),
        Lookup::Missing(_) => None,
    })
}

/// What was found where an instance's kubeconfig should be.
#[derive(Debug)]
pub enum Lookup {
    /// The kubeconfig.
    Found(Kubeconfig),
    /// Nothing yet; the message names what is missing (`Secret ns/name has no key "k"`), for
    /// status conditions. It never carries credential material.
    Missing(String),
}

/// Looks for the kubeconfig of `instance`: Adopt mode reads `kubeconfigSecretRef` (exactly
/// its key when given, else the first of [`ADOPT_KUBECONFIG_KEYS`]); Provision mode the
/// Secret the operator names in its `Karmada` status.
pub async fn lookup_kubeconfig(
    host: &Client,
    instance: &Instance,
    timeout: Duration,
) -> Result<Lookup, ConnectionError> {
    let name = instance.metadata.name.clone().unwrap_or_default();
    let (namespace, secret_name, key) = match instance.spec.mode {
        InstanceMode::Adopt => {
            let r = instance
                .spec
                .kubeconfig_secret_ref
                .as_ref()
                .ok_or_else(|| ConnectionError::Spec(name.clone()))?;
            let key = match r.key.as_deref() {
                Some(key) => KubeconfigKey::Exactly(key),
                None => KubeconfigKey::FirstOf(&ADOPT_KUBECONFIG_KEYS),
            };
            (r.namespace.clone(), r.name.clone(), key)
        }
        InstanceMode::Provision => {
            let p = instance
                .spec
                .provision
                .as_ref()
                .ok_or_else(|| ConnectionError::Spec(name.clone()))?;
            let karmada_name = operator_karmada_name(&name);
            let api: Api<Karmada> = Api::namespaced(host.clone(), &p.host_namespace);
            let object = format!("karmada {}/{karmada_name}", p.host_namespace);
            let karmada = read(&name, &object, timeout, api.get_opt(&karmada_name)).await?;
            let Some(secret_ref) = karmada
                .and_then(|k| k.status)
                .and_then(|s| s.secret_ref)
                .filter(|r| !r.name.is_empty())
            else {
                return Ok(Lookup::Missing(format!(
                    "the karmada-operator has not published the admin kubeconfig of Karmada \
                     {}/{karmada_name} yet",
                    p.host_namespace
                )));
            };
            let namespace = if secret_ref.namespace.is_empty() {
                p.host_namespace.clone()
            } else {
                secret_ref.namespace
            };
            (
                namespace,
                secret_ref.name,
                KubeconfigKey::FirstOf(&OPERATOR_KUBECONFIG_KEYS),
            )
        }
    };
    let object = format!("secret {namespace}/{secret_name}");
    let secrets: Api<Secret> = Api::namespaced(host.clone(), &namespace);
    let Some(secret) = read(&name, &object, timeout, secrets.get_opt(&secret_name)).await? else {
        return Ok(Lookup::Missing(format!(
            "Secret {namespace}/{secret_name} not found ({key})"
        )));
    };
    let empty = Default::default();
    let data = secret.data.as_ref().unwrap_or(&empty);
    let bytes = match kubeconfig_in(data, key) {
        Ok(bytes) => bytes,
        Err(missing) => {
            return Ok(Lookup::Missing(format!(
                "Secret {namespace}/{secret_name} {missing}"
            )));
        }
    };
    let yaml = String::from_utf8(bytes.to_vec()).map_err(|_| ConnectionError::Invalid {
        instance: name.clone(),
        object: object.clone(),
        reason: "not UTF-8 text".into(),
    })?;
    let version = secret.metadata.resource_version.unwrap_or_default();
    Ok(Lookup::Found(Kubeconfig {
        key: format!("{namespace}/{secret_name}@{version}"),
        yaml,
    }))
}

async fn read<T>(
    instance: &str,
    object: &str,
    timeout: Duration,
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, ConnectionError> {
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(ConnectionError::Read {
            instance: instance.to_owned(),
            object: object.to_owned(),
            reason: describe_kube_error(&e),
        }),
        Err(_) => Err(ConnectionError::Read {
            instance: instance.to_owned(),
            object: object.to_owned(),
            reason: format!("no answer within {timeout:?}"),
        }),
    }
}

/// Builds a client from `kubeconfig`, with its own request budget.
pub async fn connect(
    instance: &str,
    kubeconfig: &Kubeconfig,
    timeout: Duration,
) -> Result<Connection, ConnectionError> {
    let mut options = ClientOptions::new(super::MANAGER_NAME);
    options.connect_timeout = timeout;
    let client = client_from_kubeconfig_yaml(&kubeconfig.yaml, None, &options, &kubeconfig.key)
        .await
        .map_err(|e| ConnectionError::Invalid {
            instance: instance.to_owned(),
            object: kubeconfig.key.clone(),
            reason: e.to_string(),
        })?;
    Ok(Connection {
        key: kubeconfig.key.clone(),
        client,
    })
}
