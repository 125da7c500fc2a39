//! `kubeocean leasing explain`: run the leasing engine on objects read from files and say
//! what the virtual node would look like, without touching any cluster.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::crd::{ClusterBinding, ResourceLeasingPolicy};
use crate::leasing::{
    DefaultLeasingEngine, LeasingDecision, LeasingInput, LeasingPolicyEngine,
    default_requests_from_limits, validate_policy,
};

/// Files and time to explain.
#[derive(Clone, Debug, Default)]
pub struct ExplainRequest {
    /// YAML or JSON file with the physical Node.
    pub node: PathBuf,
    /// Files with the node's pods: a List/PodList, multi-document YAML or single Pods.
    /// Pods bound to another node (`spec.nodeName`) are ignored.
    pub pods: Vec<PathBuf>,
    /// Files with ResourceLeasingPolicies (each may hold several).
    pub policies: Vec<PathBuf>,
    /// File with the ClusterBinding.
    pub binding: PathBuf,
    /// RFC 3339 instant to evaluate at; now when `None`.
    pub at: Option<String>,
}

/// Why explaining failed: always a problem with the given files or flags.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// I/O error.
        source: std::io::Error,
    },
    /// A file is not YAML or JSON.
    #[error("{path} is not valid YAML or JSON: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// Parser message.
        message: String,
    },
    /// An object in a file is not of the expected kind or shape.
    #[error("{path}: object {number}: {message}")]
    Object {
        /// The file.
        path: String,
        /// 1-based position of the object in the file (List items count one by one).
        number: usize,
        /// What is wrong.
        message: String,
    },
    /// A file holds the wrong number of objects.
    #[error("{path} must hold exactly one {kind}, found {found}")]
    Count {
        /// The file.
        path: String,
        /// Expected kind.
        kind: &'static str,
        /// Objects found.
        found: usize,
    },
    /// `--at` is not an RFC 3339 instant.
    #[error("--at {value:?} is not an RFC 3339 time (for example 2025-01-31T22:30:00Z): {message}")]
    At {
        /// The value given.
        value: String,
        /// Parser message.
        message: String,
    },
    /// The output could not be serialised.
    #[error("cannot render the result as JSON: {0}")]
    Render(#[from] serde_json::Error),
}

/// The explanation printed as JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// Name of the virtual node.
    pub virtual_node_name: String,
    /// Applied policy, or null.
    pub policy: Option<String>,
    /// Inside one of the policy's time windows.
    pub in_window: bool,
    /// Resource name to canonical quantity.
    pub allocatable: BTreeMap<String, String>,
    /// Taints of the virtual node.
    pub taints: Vec<TaintView>,
    /// False when no policy applies (the virtual node would be removed).
    pub lent: bool,
    /// Why the node is not lent and which policies were skipped as invalid; for humans
    /// (stderr), not part of the JSON.
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// A taint as printed: `value` is null when the taint has none.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaintView {
    /// Taint key.
    pub key: String,
    /// Taint value.
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

impl From<&LeasingDecision> for Explanation {
    fn from(decision: &LeasingDecision) -> Self {
        Explanation {
            virtual_node_name: decision.virtual_node_name.clone(),
            policy: decision.policy.clone(),
            in_window: decision.in_window,
            allocatable: decision
                .allocatable
                .iter()
                .map(|(name, q)| (name.clone(), q.to_canonical_string()))
                .collect(),
            taints: decision
                .taints
                .iter()
                .map(|t| TaintView {
                    key: t.key.clone(),
                    value: t.value.clone(),
                    effect: t.effect.clone(),
                })
                .collect(),
            lent: decision.lent,
            notes: decision
                .not_lent_reason
                .iter()
                .map(|reason| format!("not lent: {reason}"))
                .collect(),
        }
    }
}

/// Reads the files, evaluates with [`DefaultLeasingEngine`] and returns the explanation.
pub fn explain(request: &ExplainRequest) -> Result<Explanation, ExplainError> {
    let now = match &request.at {
        Some(value) => value.parse::<Timestamp>().map_err(|err| ExplainError::At {
            value: value.clone(),
            message: err.to_string(),
        })?,
        None => Timestamp::now(),
    };
    let node: Node = load_one(&request.node, "Node")?;
    let binding: ClusterBinding = load_one(&request.binding, "ClusterBinding")?;
    let mut pods: Vec<Pod> = Vec::new();
    for path in &request.pods {
        pods.extend(load_all::<Pod>(path, "Pod")?);
    }
    // Files skip the API server, so repeat its defaulting.
    pods.iter_mut().for_each(default_requests_from_limits);
    let mut policies: Vec<ResourceLeasingPolicy> = Vec::new();
    for path in &request.policies {
        policies.extend(load_all::<ResourceLeasingPolicy>(
            path,
            "ResourceLeasingPolicy",
        )?);
    }

    let node_name = node.metadata.name.as_deref().unwrap_or_default();
    let on_node = |pod: &&Pod| {
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_none_or(|n| n.is_empty() || n == node_name)
    };
    let input = LeasingInput {
        node: &node,
        pods: pods.iter().filter(on_node).collect(),
        policies: policies.iter().collect(),
        binding: &binding,
        usage: None,
        now,
    };
    let mut explanation = Explanation::from(&DefaultLeasingEngine.evaluate(&input));
    let binding_name = binding.metadata.name.as_deref().unwrap_or_default();
    for policy in policies.iter().filter(|p| p.spec.cluster == binding_name) {
        if let Err(problems) = validate_policy(policy) {
            let name = policy.metadata.name.as_deref().unwrap_or("<unnamed>");
            explanation.notes.push(format!(
                "policy {name} is invalid and not applied: {}",
                problems.join("; ")
            ));
        }
    }
    Ok(explanation)
}

/// [`explain`] rendered as one pretty-printed JSON object, with its notes.
pub fn explain_json(request: &ExplainRequest) -> Result<(String, Vec<String>), ExplainError> {
    let explanation = explain(request)?;
    Ok((
        serde_json::to_string_pretty(&explanation)?,
        explanation.notes,
    ))
}

/// Reads every object of `kind` from a file: single objects, multi-document YAML and
/// Lists (`kind: List` or `<Kind>List` with `items`) are all accepted.
pub fn load_all<T: DeserializeOwned>(
    path: &Path,
    kind: &'static str,
) -> Result<Vec<T>, ExplainError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ExplainError::Read {
        path: shown.clone(),
        source,
    })?;
    let documents: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&text).map_err(|err| ExplainError::Syntax {
            path: shown.clone(),
            message: err.to_string(),
        })?;
    let mut items = Vec::new();
    for document in documents {
        if document.is_null() {
            continue;
        }
        let is_list = document
            .get("kind")
            .and_then(|k| k.as_str())
            .is_some_and(|k| k.ends_with("List"));
        match (is_list, document) {
            (true, serde_json::Value::Object(mut list)) => match list.remove("items") {
                Some(serde_json::Value::Array(listed)) => items.extend(listed),
                Some(serde_json::Value::Null) | None => {}
                Some(_) => {
                    return Err(ExplainError::Object {
                        path: shown,
                        number: items.len() + 1,
                        message: "items of a List must be an array".to_owned(),
                    });
                }
            },
            (_, document) => items.push(document),
        }
    }
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            let object_error = |message: String| ExplainError::Object {
                path: shown.clone(),
                number: index + 1,
                message,
            };
            match item.get("kind").and_then(|k| k.as_str()) {
                Some(found) if found != kind => {
                    return Err(object_error(format!("expected a {kind}, found a {found}")));
                }
                _ => {}
            }
            serde_json::from_value(item)
                .map_err(|err| object_error(format!("not a valid {kind}: {err}")))
        })
        .collect()
}

/// Reads exactly one object of `kind` from a file.
pub fn load_one<T: DeserializeOwned>(path: &Path, kind: &'static str) -> Result<T, ExplainError> {
    let mut all = load_all::<T>(path, kind)?;
    match all.len() {
        1 => Ok(all.remove(0)),
        found => Err(ExplainError::Count {
            path: path.display().to_string(),
            kind,
            found,
        }),
    }
}
