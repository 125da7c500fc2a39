//! Validation: CRD structural schemas (pruning, defaulting, validation), the CEL subset of
//! `x-kubernetes-validations`, label and field selectors, `metadata.labels`, the specs of the
//! built-in workload kinds (with the cron schedules of CronJobs), and the Go-compatibility helpers
//! they share so that their messages read as kube-apiserver's. Pure functions on JSON values:
//! nothing here knows the store or the server.

pub mod cel;
pub mod cron;
pub(crate) mod gocompat;
pub mod labels;
pub mod schema;
pub mod selectors;
pub mod workloads;
