//! Kairship as a library: the management plane of many isolated Karmada instances.
//!
//! This crate holds the `kairship.io/v1alpha1` `Instance` custom resource, typed models of
//! the Karmada and Clusterpedia objects Kairship reads and writes, the API server's layers
//! ([`api`] over [`router`], served by [`rest`], [`grpc`] and [`console`], with [`proxy`] and
//! [`auth`]; [`server`] puts them on one port), and the controllers run by
//! `kairship controller-manager` ([`controllers`]). Each controller keeps its pure logic
//! (summaries, the instance state machine, per-instance RBAC, the signed role-binding webhook,
//! lifecycle decisions) in a module beside its runner; the crate-root paths [`rbac`],
//! [`state`], [`summary`], [`lifecycle`], [`virtual_cluster`] and [`webhook`] re-export them.
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod access;
pub mod api;
pub mod audit;
pub mod auth;
pub mod console;
pub mod controllers;
pub mod drift;
pub mod grpc;
pub mod instance;
#[cfg(feature = "karmada-sim")]
pub mod karmada_sim;
pub mod limit;
pub mod models;
pub mod naming;
pub mod proxy;
pub mod rest;
pub mod router;
pub mod scheduling;
pub mod server;
pub mod transport;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub use instance::{Instance, InstanceSpec, InstanceState, InstanceStatus};

// Each controller's pure logic lives beside its runner in `controllers/`; these keep the
// paths it had at the crate root.
pub use controllers::instance_registry::rbac;
pub use controllers::resource_statistics::summary;
pub use controllers::role_binding_webhook::request as webhook;
pub use controllers::status_sync::state;
pub use controllers::virtual_cluster_sync::pedia_cluster as virtual_cluster;

/// The lifecycle decisions at their former crate-root path: now
/// [`controllers::lifecycle::decision`] and, for where the kubeconfig is found,
/// [`controllers::connection::kubeconfig`].
pub mod lifecycle {
    pub use crate::controllers::connection::kubeconfig::*;
    pub use crate::controllers::lifecycle::decision::*;
}

/// Path, relative to the workspace root, of the generated CRD manifest.
pub const CRDS_MANIFEST_PATH: &str = "deploy/crds/kairship/kairship-crds.yaml";
/// The command that regenerates [`CRDS_MANIFEST_PATH`].
pub const CRDS_REGENERATE_COMMAND: &str =
    "cargo run -p kairship-bin -- crds > deploy/crds/kairship/kairship-crds.yaml";

/// The CustomResourceDefinitions Kairship owns.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        with_metadata_name(Instance::crd()),
        crate::audit::AuditRecord::crd(),
    ]
}

/// Declares `metadata.name` in each version's root schema (the only metadata a CRD may
/// describe), so that the name rule's `fieldPath: .metadata.name` names a field of the schema
/// and kube-apiserver reports `metadata.name: ...` rather than `<nil>: ...`.
fn with_metadata_name(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    for version in &mut crd.spec.versions {
        let Some(root) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        let name = JSONSchemaProps {
            type_: Some("string".into()),
            ..JSONSchemaProps::default()
        };
        let metadata = JSONSchemaProps {
            type_: Some("object".into()),
            properties: Some([("name".to_owned(), name)].into()),
            ..JSONSchemaProps::default()
        };
        root.properties
            .get_or_insert_with(Default::default)
            .insert("metadata".to_owned(), metadata);
    }
    crd
}

/// Failure to render the CRDs as YAML.
#[derive(Debug, thiserror::Error)]
#[error("cannot render CustomResourceDefinition {name} as YAML: {source}")]
pub struct CrdRenderError {
    /// Name of the CRD.
    pub name: String,
    /// The serializer's error.
    #[source]
    pub source: serde_saphyr::SerializeError,
}

/// [`crds`] as a multi-document YAML stream, exactly as `kairship crds` prints it and as
/// [`CRDS_MANIFEST_PATH`] holds it.
pub fn crds_yaml() -> Result<String, CrdRenderError> {
    let mut out = String::new();
    for crd in crds() {
        let yaml = serde_saphyr::to_string(&crd).map_err(|source| CrdRenderError {
            name: crd.metadata.name.clone().unwrap_or_default(),
            source,
        })?;
        out.push_str("---\n");
        out.push_str(&yaml);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}
