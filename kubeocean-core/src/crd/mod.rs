//! Custom resources of Kubeocean (`cloud.tencent.com/v1beta1`) and their generated CRDs.

mod cluster_binding;
mod leasing_policy;
pub mod schema;

use std::path::Path;

pub use cluster_binding::{
    ClusterBinding, ClusterBindingPhase, ClusterBindingSpec, ClusterBindingStatus,
    DEFAULT_POD_PREEMPTION_POLICY, DEFAULT_POD_PRIORITY_CLASS_NAME, DEFAULT_POD_PRIORITY_VALUE,
    KUBECONFIG_SECRET_KEY, condition as cluster_binding_condition,
};
pub use leasing_policy::{
    ResourceLeasingPolicy, ResourceLeasingPolicyPhase, ResourceLeasingPolicySpec,
    ResourceLeasingPolicyStatus, ResourceLimit, TimeWindow, condition as leasing_policy_condition,
};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// API group of every Kubeocean resource.
pub const GROUP: &str = "cloud.tencent.com";
/// API version of every Kubeocean resource.
pub const VERSION: &str = "v1beta1";

/// The CRDs of Kubeocean: ClusterBinding (computing cluster) and ResourceLeasingPolicy
/// (worker clusters).
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![ClusterBinding::crd(), ResourceLeasingPolicy::crd()]
}

/// Why the CRDs could not be rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// YAML serialisation failed.
    #[error("cannot render CRD {name} as YAML: {source}")]
    Render {
        /// CRD name.
        name: String,
        /// Serialiser error.
        source: serde_saphyr::SerializeError,
    },
    /// Writing a file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// File path.
        path: String,
        /// I/O error.
        source: std::io::Error,
    },
}

/// Each CRD as `(file name, YAML document)`, file names as controller-gen names them
/// (`cloud.tencent.com_clusterbindings.yaml`).
pub fn crd_files() -> Result<Vec<(String, String)>, CrdError> {
    crds()
        .iter()
        .map(|crd| {
            let name = crd.metadata.name.clone().unwrap_or_default();
            let yaml = serde_saphyr::to_string(crd).map_err(|source| CrdError::Render {
                name: name.clone(),
                source,
            })?;
            let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
            Ok((file, format!("---\n{yaml}")))
        })
        .collect()
}

/// All CRDs as one multi-document YAML stream.
pub fn crds_yaml() -> Result<String, CrdError> {
    Ok(crd_files()?.into_iter().map(|(_, yaml)| yaml).collect())
}

/// Writes [`crd_files`] into `dir` (created if missing); returns the paths written.
pub fn write_crd_files(dir: &Path) -> Result<Vec<String>, CrdError> {
    let write_error = |path: &Path, source| CrdError::Write {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|source| write_error(dir, source))?;
    let mut written = Vec::new();
    for (file, yaml) in crd_files()? {
        let path = dir.join(&file);
        std::fs::write(&path, yaml).map_err(|source| write_error(&path, source))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}
