//! The audit feature: reading the trail of writes made through Kairship
//! ([`crate::audit`] records them), filtered by instance, user, verb, door and time, paged
//! newest first as the other lists page.
//!
//! Who reads what: callers who may list every instance (Kairship's admins) read the whole
//! trail; anyone else reads the records of the instances they may `get`, and never records
//! without an instance.

mod service;
pub mod types;

use async_trait::async_trait;

use crate::access::Caller;
use crate::api::ApiError;

pub use service::Readable;
pub use types::{AuditRecordList, ListAuditRequest};

/// The audit part of [`KairshipApi`](crate::api::KairshipApi), which
/// [`KairshipService`](crate::api::KairshipService) implements.
#[async_trait]
pub trait AuditApi: Send + Sync {
    /// Records of writes the caller may read, newest first, filtered and paged.
    async fn list_audit(
        &self,
        caller: &Caller,
        req: ListAuditRequest,
    ) -> Result<AuditRecordList, ApiError>;
}
