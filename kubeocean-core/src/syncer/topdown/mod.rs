//! The syncer's top-down half: virtual pods of the computing cluster, and the ConfigMaps,
//! Secrets, claims and tokens they need, become physical objects in the binding's mount
//! namespace of the worker cluster; physical pod status flows back up.
//!
//! - [`mapping`]: the pure mappers (virtual object -> physical copy, physical status ->
//!   virtual status, ownership of an existing copy). No I/O; unit-tested on their own.
//! - The reconcilers that apply them, one per file: [`virtual_pod`],
//!   [`physical_pod`](mod@physical_pod), [`virtual_copy`], [`virtual_volume`],
//!   [`token_refresh`], [`cleanup`], [`event_reflection`]. They read the session's
//!   [`state`] (in-memory
//!   [`store`]s fed by the watches of both clusters, and the work queues) and fail with a
//!   [`TopDownError`] ([`error`]).
//! - [`session`]: the only module that knows every reconciler: it starts the watches and
//!   runs each reconciler in the syncer's worker loop.
//!
//! Everything the reconcilers need to resume is stored in the two clusters (names are
//! deterministic, mappings are recorded in annotations on both sides).

pub mod cleanup;
pub mod error;
pub mod event_reflection;
pub mod mapping;
pub mod physical_pod;
pub mod pod_status;
pub mod service_events;
pub mod service_reflection;
pub mod session;
pub mod state;
pub mod store;
pub mod token_refresh;
pub mod unscheduled;
pub mod virtual_copy;
pub mod virtual_pod;
pub mod virtual_volume;

pub use mapping::{
    BackReference, BindingSettings, CopyUpdate, Dependencies, MapError, MappingContext, Need,
    Ownership, PHYSICAL_NAME, PHYSICAL_NAMESPACE, ResourceMapper, SYSTEM_NAMESPACES, SkipReason,
    TOKEN_REFRESH_AT, TokenProjection, TokenRequestSpec, TopDownMapper, VIRTUAL_NAME,
    VIRTUAL_NAMESPACE, VIRTUAL_NODE_NAME, VIRTUAL_UID, back_reference, config_map_physical_name,
    config_map_update, dependencies, is_copy_of, is_managed, lost_pod_status, ownership,
    physical_config_map, physical_ephemeral_containers, physical_labels, physical_node_of,
    physical_pod, physical_pod_name, physical_pod_reference, physical_pod_update, physical_pv,
    physical_pvc, physical_secret, pv_physical_name, pv_secret_refs, pvc_physical_name,
    same_copied_annotations, secret_physical_name, secret_update, should_map, token_refresh_at,
    token_refresh_due, token_secret, token_secret_name, virtual_pod_status,
};

pub use crate::syncer::metrics::TopDownMetrics;
pub use cleanup::remaining_physical_objects;
pub use error::{Side, TopDownError};
pub use state::TopDown;
