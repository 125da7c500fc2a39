//! What can go wrong while mapping, on which object, in which cluster.

use std::future::Future;
use std::time::Duration;

use super::mapping::{MapError, Ownership};
use super::store::object_key;
pub use crate::syncer::error::Side;
use crate::syncer::worker::Failure;

/// Why a top-down reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum TopDownError {
    /// The API server refused or failed a request.
    #[error("cannot {action} {kind} {name} in the {side} cluster: {source}")]
    Api {
        /// What was attempted (`create`, `delete`...).
        action: &'static str,
        /// Object kind.
        kind: &'static str,
        /// `namespace/name` of the object.
        name: String,
        /// Which cluster.
        side: Side,
        /// The API error.
        source: kube::Error,
    },
    /// The API server did not answer in time.
    #[error("{action} {kind} {name} in the {side} cluster got no answer within {after:?}")]
    Timeout {
        /// What was attempted.
        action: &'static str,
        /// Object kind.
        kind: &'static str,
        /// `namespace/name` of the object.
        name: String,
        /// Which cluster.
        side: Side,
        /// The request timeout.
        after: Duration,
    },
    /// A worker object with the target name exists and belongs to someone else.
    #[error(
        "{kind} {physical} in the worker cluster already exists and belongs to {owner}, not to {wanted}; it is left untouched"
    )]
    Conflict {
        /// Object kind.
        kind: &'static str,
        /// `namespace/name` of the physical object.
        physical: String,
        /// Who it belongs to, in words.
        owner: String,
        /// The virtual object that wanted the name.
        wanted: String,
    },
    /// The virtual object cannot be mapped.
    #[error("cannot map {kind} {name}: {source}")]
    Map {
        /// Object kind.
        kind: &'static str,
        /// `namespace/name` of the virtual object.
        name: String,
        /// Why.
        source: MapError,
    },
    /// A TokenRequest answer carried no expiry.
    #[error(
        "the TokenRequest for service account {service_account} of pod {pod} returned no usable expiry"
    )]
    TokenExpiry {
        /// `namespace/name` of the service account.
        service_account: String,
        /// `namespace/name` of the virtual pod.
        pod: String,
    },
}

impl Failure for TopDownError {
    fn reason(&self) -> &'static str {
        TopDownError::reason(self)
    }
}

impl TopDownError {
    /// A short reason for metrics and Events.
    pub fn reason(&self) -> &'static str {
        match self {
            TopDownError::Api {
                side: Side::Worker, ..
            } => "WorkerRequestFailed",
            TopDownError::Api {
                side: Side::Computing,
                ..
            } => "ComputingRequestFailed",
            TopDownError::Timeout { .. } => "RequestTimeout",
            TopDownError::Conflict { .. } => "NameConflict",
            TopDownError::Map { .. } => "MappingInvalid",
            TopDownError::TokenExpiry { .. } => "TokenRequestFailed",
        }
    }

    /// The HTTP status of an API error.
    pub fn code(&self) -> Option<u16> {
        match self {
            TopDownError::Api {
                source: kube::Error::Api(status),
                ..
            } => Some(status.code),
            _ => None,
        }
    }
}

/// Sends one request with a deadline: a hung server must not hold a reconcile forever.
pub(crate) async fn request<T>(
    timeout: Duration,
    side: Side,
    action: &'static str,
    kind: &'static str,
    name: &str,
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, TopDownError> {
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(source)) => Err(TopDownError::Api {
            action,
            kind,
            name: name.to_owned(),
            side,
            source,
        }),
        Err(_) => Err(TopDownError::Timeout {
            action,
            kind,
            name: name.to_owned(),
            side,
            after: timeout,
        }),
    }
}

/// Like [`request`], with a 404 answer as `None`.
pub(crate) async fn request_opt<T>(
    timeout: Duration,
    side: Side,
    action: &'static str,
    kind: &'static str,
    name: &str,
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<Option<T>, TopDownError> {
    match request(timeout, side, action, kind, name, call).await {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.code() == Some(404) => Ok(None),
        Err(err) => Err(err),
    }
}

/// What creating a physical object found.
pub(crate) enum Created<T> {
    /// This call created it.
    New(T),
    /// An object of that name was there already (409): the object read back, and the 409 for
    /// callers that give up on it this time.
    Existing(T, TopDownError),
}

/// Creates a physical object with `create`; on a 409 reads the object of that name with `get`
/// instead, so the caller can decide by its ownership. The 409 is the error when the object is
/// gone again by then (the next attempt creates it).
pub(crate) async fn create_or_read<T, C, G>(
    timeout: Duration,
    kind: &'static str,
    physical_key: &str,
    create: C,
    get: impl FnOnce() -> G,
) -> Result<Created<T>, TopDownError>
where
    C: Future<Output = Result<T, kube::Error>>,
    G: Future<Output = Result<T, kube::Error>>,
{
    match request(timeout, Side::Worker, "create", kind, physical_key, create).await {
        Ok(created) => Ok(Created::New(created)),
        Err(conflict) if conflict.code() == Some(409) => {
            match request_opt(timeout, Side::Worker, "get", kind, physical_key, get()).await? {
                Some(found) => Ok(Created::Existing(found, conflict)),
                None => Err(conflict),
            }
        }
        Err(err) => Err(err),
    }
}

/// Who a physical object belongs to, in words.
pub(crate) fn describe_owner(ownership: &Ownership) -> String {
    match ownership {
        Ownership::Ours => "this object".to_owned(),
        Ownership::Unowned => {
            "nobody Kubeocean knows (no kubeocean.io/managed-by label)".to_owned()
        }
        Ownership::Foreign(owner) => format!(
            "{} (uid {})",
            object_key(
                owner.namespace.as_deref().unwrap_or_default(),
                owner.name.as_deref().unwrap_or("<unnamed>")
            ),
            owner.uid.as_deref().unwrap_or("unknown")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure("boom", "Reason").with_code(code),
        ))
    }

    #[tokio::test]
    async fn requests_report_codes_and_timeouts() {
        let t = Duration::from_millis(20);
        let err = request::<()>(t, Side::Worker, "create", "Pod", "w/p", async {
            Err(api_error(409))
        })
        .await
        .unwrap_err();
        assert_eq!(err.code(), Some(409));
        assert_eq!(err.reason(), "WorkerRequestFailed");
        assert!(
            err.to_string()
                .contains("cannot create Pod w/p in the worker cluster")
        );

        let missing = request_opt::<()>(t, Side::Computing, "get", "Pod", "ns/p", async {
            Err(api_error(404))
        })
        .await
        .unwrap();
        assert!(missing.is_none());

        let err = request::<()>(
            t,
            Side::Computing,
            "patch",
            "Pod",
            "ns/p",
            std::future::pending(),
        )
        .await
        .unwrap_err();
        assert_eq!(err.reason(), "RequestTimeout");
        assert_eq!(err.code(), None);
    }
}
