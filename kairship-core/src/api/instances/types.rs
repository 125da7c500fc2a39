//! Messages of the instances feature: Karmada instances (`kairship.io/v1alpha1` Instance on
//! the host cluster) and kubeconfigs for them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::{KubeObject, ListOptions, Object};

/// `ListInstances`: instances the caller may `get`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListInstancesRequest {
    /// Filtering, sorting (`name`, `creationTimestamp`, `state`) and paging.
    #[serde(default)]
    pub options: ListOptions,
}

/// `GetInstance`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetInstanceRequest {
    /// Instance name.
    pub instance: String,
}

/// `CreateInstance`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateInstanceRequest {
    /// The `kairship.io/v1alpha1` Instance.
    #[schema(value_type = KubeObject)]
    pub body: Object,
}

/// `UpdateInstance`: replaces the Instance (pass `metadata.resourceVersion` to guard against
/// concurrent changes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateInstanceRequest {
    /// Instance name.
    pub instance: String,
    /// The new Instance.
    #[schema(value_type = KubeObject)]
    pub body: Object,
}

/// `DeleteInstance`: refused while member clusters are joined, and while the instance
/// cannot be reached to count them, unless forced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteInstanceRequest {
    /// Instance name.
    pub instance: String,
    /// Delete even with member clusters, or when they cannot be counted: sets the
    /// `kairship.io/force-delete` annotation, then deletes.
    #[serde(default)]
    pub force: bool,
}

/// Body of `POST instances/{i}/kubeconfig` (optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeconfigOptions {
    /// Base URL clients reach this API server at (`https://kairship.example.com`); default:
    /// the server's configured external URL, else the URL of this request.
    #[serde(default)]
    pub server: Option<String>,
}

/// `CreateKubeconfig`: a kubeconfig that reaches the instance through the native proxy with
/// the caller's own bearer token.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateKubeconfigRequest {
    /// Instance name.
    pub instance: String,
    /// Base URL of this API server as clients reach it; default: the server's configured
    /// external URL, else `request_server`.
    #[serde(default)]
    pub server: Option<String>,
    /// Base URL the request arrived at, as the transport saw it (`Host` header), used when
    /// neither `server` nor a configured external URL is known.
    #[serde(default)]
    pub request_server: Option<String>,
}

/// A kubeconfig.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeconfigResponse {
    /// Instance name.
    pub instance: String,
    /// The proxy URL the kubeconfig points at.
    pub server: String,
    /// The kubeconfig YAML (it holds the caller's token: keep it safe).
    pub kubeconfig: String,
}

impl std::fmt::Debug for KubeconfigResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The kubeconfig holds a bearer token: never print it.
        f.debug_struct("KubeconfigResponse")
            .field("instance", &self.instance)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// The bearer token a caller authenticated with, handed to the one method that needs it
/// ([`InstancesApi::create_kubeconfig`](crate::api::InstancesApi::create_kubeconfig) writes it into the kubeconfig). Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> BearerToken {
        BearerToken(token.into())
    }

    /// The token.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}
