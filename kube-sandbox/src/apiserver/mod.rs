//! The API server: the cluster state and store, the resource types it serves, request handling
//! (CRUD, list and watch, subresources, admission, garbage collection), identity (tokens,
//! bootstrap tokens, RBAC, the cluster CA and client certificates), errors as `kind: Status`, injected faults
//! and request counts. It depends on `validation/`, `patch/` and `protobuf/` (schemas of built-in kinds), never on the simulator or
//! the HTTP layer.

pub mod admission;
pub mod api;
pub mod audit;
pub mod auth;
pub mod bootstrap_token;
pub mod certificates;
pub mod conversion;
pub mod discovery;
pub mod error;
pub mod faults;
pub mod field_validation;
pub mod impersonation;
pub mod meta;
pub mod namespace_deletion;
pub mod openapi;
pub mod pki;
pub mod proxy_hooks;
pub mod requests;
pub mod resources;
pub mod scale;
pub mod service_account_key;
pub mod state;
pub mod store;
pub mod strategy_hooks;
pub mod subresources;
pub mod table;
pub mod user_info;
pub mod watch;
pub mod workload_defaults;
pub mod write_options;
