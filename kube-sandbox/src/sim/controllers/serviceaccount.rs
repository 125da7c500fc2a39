//! The service-account controller: every namespace that is not terminating has a `default`
//! ServiceAccount, as kube-controller-manager's `serviceaccount-controller` keeps it.

use super::Pass;
use super::objects::{Writer, name_of, str_at};
use serde_json::json;
use std::collections::HashSet;

const MANAGER: &str = "kube-controller-manager";
/// The ServiceAccount every namespace gets.
pub const DEFAULT: &str = "default";

/// The namespaces (of `namespaces`, by name and phase) that lack a `default` ServiceAccount.
pub fn missing<'a>(
    namespaces: &'a [(String, String)],
    with_default: &HashSet<String>,
) -> Vec<&'a str> {
    namespaces
        .iter()
        .filter(|(name, phase)| phase != "Terminating" && !with_default.contains(name))
        .map(|(name, _)| name.as_str())
        .collect()
}

/// Creates the missing `default` ServiceAccounts.
pub fn sync_all(pass: &Pass) {
    let namespaces: Vec<(String, String)> = pass
        .list("", "namespaces")
        .iter()
        .map(|ns| {
            (
                name_of(ns).to_owned(),
                str_at(ns, &["status", "phase"]).to_owned(),
            )
        })
        .collect();
    let with_default: HashSet<String> = pass
        .list("", "serviceaccounts")
        .iter()
        .filter(|sa| name_of(sa) == DEFAULT)
        .map(|sa| str_at(sa, &["metadata", "namespace"]).to_owned())
        .collect();
    let writer = Writer {
        state: pass.state,
        manager: MANAGER,
    };
    for namespace in missing(&namespaces, &with_default) {
        let body = json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT, "namespace": namespace},
        });
        // A namespace that began terminating meanwhile refuses it: the next pass looks again.
        let _ = writer.create("", "serviceaccounts", namespace, body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_live_namespaces_without_one_get_a_default_service_account() {
        let namespaces = vec![
            ("a".to_owned(), "Active".to_owned()),
            ("b".to_owned(), "Active".to_owned()),
            ("c".to_owned(), "Terminating".to_owned()),
            ("d".to_owned(), String::new()),
        ];
        let with_default: HashSet<String> = ["b".to_owned()].into();
        assert_eq!(missing(&namespaces, &with_default), vec!["a", "d"]);
    }
}
