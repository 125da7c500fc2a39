//! Errors of the router and its backends.

use kube::core::Status;

use super::target::ResourceTarget;

/// Why a routed request failed.
#[derive(Debug, thiserror::Error)]
pub enum RouterError {
    /// The request's parameters are malformed (bad selector, page, page size, ...).
    #[error("invalid {parameter}: {reason}")]
    InvalidQuery {
        /// The offending parameter (`labelSelector`, `page`, ...).
        parameter: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// No client is known for the instance.
    #[error("unknown instance {instance}")]
    UnknownInstance {
        /// The instance name.
        instance: String,
    },
    /// The instance apiserver answered with a `kind: Status` error; passed through as is.
    #[error("{target}: the instance apiserver answered {}: {}", status.code, status.message)]
    Api {
        /// What was asked for.
        target: String,
        /// The apiserver's status.
        status: Box<Status>,
    },
    /// The instance apiserver could not be reached or its answer could not be read.
    #[error("{target}: request to the instance apiserver failed: {source}")]
    Instance {
        /// What was asked for.
        target: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The cache cannot answer (not synced, down, or its watch ended); the router reads
    /// directly instead.
    #[error("{target}: cache unavailable: {reason}")]
    CacheUnavailable {
        /// What was asked for.
        target: String,
        /// Why.
        reason: String,
    },
    /// An object from the instance could not be decoded.
    #[error("{target}: cannot decode the instance's answer: {source}")]
    Decode {
        /// What was asked for.
        target: String,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// The operation is not one the called method handles (a write sent to a read path).
    #[error("{operation} is not a {expected} operation")]
    WrongOperation {
        /// The operation.
        operation: String,
        /// What was expected (`read` or `write`).
        expected: &'static str,
    },
}

impl RouterError {
    /// The HTTP status code the error maps to (Kubernetes conventions).
    pub fn http_status(&self) -> u16 {
        match self {
            RouterError::InvalidQuery { .. } | RouterError::WrongOperation { .. } => 400,
            RouterError::UnknownInstance { .. } => 404,
            RouterError::Api { status, .. } if status.code != 0 => status.code,
            RouterError::Api { .. } | RouterError::Decode { .. } => 500,
            RouterError::Instance { .. } | RouterError::CacheUnavailable { .. } => 503,
        }
    }

    /// Whether the error says the cache could not answer (as opposed to an answer such as
    /// "not found" or "bad selector"), so that the same read may be retried directly.
    pub fn is_cache_failure(&self) -> bool {
        matches!(
            self,
            RouterError::CacheUnavailable { .. }
                | RouterError::Instance { .. }
                | RouterError::UnknownInstance { .. }
                | RouterError::Decode { .. }
        )
    }

    /// The `404 NotFound` status kube-apiserver answers for a missing object, so that cached
    /// and direct reads fail alike.
    pub fn not_found(target: &ResourceTarget, name: &str) -> Self {
        let resource = &target.resource;
        let qualified = if resource.group.is_empty() {
            resource.plural.clone()
        } else {
            format!("{}.{}", resource.plural, resource.group)
        };
        let status = Status::failure(&format!("{qualified} \"{name}\" not found"), "NotFound")
            .with_code(404);
        RouterError::Api {
            target: target.describe(),
            status: Box::new(status),
        }
    }

    /// Whether the error is the apiserver's (or the cache's) `404 NotFound`.
    pub fn is_not_found(&self) -> bool {
        matches!(self, RouterError::Api { status, .. } if status.code == 404)
    }

    /// Maps a kube client error about `target`, keeping apiserver statuses intact.
    pub fn from_kube(target: impl Into<String>, err: kube::Error) -> Self {
        let target = target.into();
        match err {
            kube::Error::Api(status) => RouterError::Api { target, status },
            source => RouterError::Instance { target, source },
        }
    }
}
