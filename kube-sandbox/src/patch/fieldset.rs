//! Field sets: the FieldsV1 encoding of managed fields.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::strategy::MapKey;

/// A set of field paths as a tree. Path elements are kept in their FieldsV1 string
/// form: `f:<name>`, `k:<json object>`, `v:<json value>`, `i:<index>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FieldSet {
    pub(super) member: bool,
    pub(super) children: BTreeMap<String, FieldSet>,
}

pub(super) type FieldPath = Vec<String>;

impl FieldSet {
    pub(super) fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    pub(super) fn insert(&mut self, path: &[String]) {
        let mut node = self;
        for pe in path {
            node = node.children.entry(pe.clone()).or_default();
        }
        node.member = true;
    }

    pub(super) fn node(&self, path: &[String]) -> Option<&FieldSet> {
        let mut node = self;
        for pe in path {
            node = node.children.get(pe)?;
        }
        Some(node)
    }

    pub(super) fn contains(&self, path: &[String]) -> bool {
        self.node(path).is_some_and(|n| n.member)
    }

    /// Whether the path or anything below it is a member (empty nodes are never kept).
    pub(super) fn covers(&self, path: &[String]) -> bool {
        self.node(path).is_some_and(|n| !n.is_empty())
    }

    pub(super) fn remove_member(&mut self, path: &[String]) {
        match path.split_first() {
            None => self.member = false,
            Some((first, rest)) => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove_member(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    pub(super) fn remove_subtree(&mut self, path: &[String]) {
        match path.split_first() {
            None => *self = Self::default(),
            Some((first, [])) => {
                self.children.remove(first);
            }
            Some((first, rest)) => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove_subtree(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    /// Adds `tree` as the subtree at `path` (nothing when it is empty).
    pub(super) fn graft(&mut self, path: &[String], tree: FieldSet) {
        if tree.is_empty() {
            return;
        }
        let mut node = self;
        for pe in path {
            node = node.children.entry(pe.clone()).or_default();
        }
        match node.is_empty() {
            true => *node = tree,
            false => node.union_with(&tree),
        }
    }

    pub(super) fn union_with(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (pe, child) in &other.children {
            self.children
                .entry(pe.clone())
                .or_default()
                .union_with(child);
        }
    }

    /// Every member path, parents before children.
    pub(super) fn members(&self) -> Vec<FieldPath> {
        fn walk(node: &FieldSet, prefix: &mut FieldPath, out: &mut Vec<FieldPath>) {
            if node.member {
                out.push(prefix.clone());
            }
            for (pe, child) in &node.children {
                prefix.push(pe.clone());
                walk(child, prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), &mut out);
        out
    }

    pub(super) fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".to_string(), Value::Object(Map::new()));
        }
        for (pe, child) in &self.children {
            m.insert(pe.clone(), child.to_json());
        }
        Value::Object(m)
    }

    pub(super) fn from_json(v: &Value) -> Option<FieldSet> {
        let Value::Object(m) = v else {
            return None;
        };
        let mut set = FieldSet::default();
        for (k, child) in m {
            if k == "." {
                set.member = true;
                continue;
            }
            let mut child = FieldSet::from_json(child)?;
            if child.children.is_empty() {
                child.member = true;
            }
            set.children.insert(k.clone(), child);
        }
        Some(set)
    }
}

pub(super) fn pe_field(name: &str) -> String {
    format!("f:{name}")
}

pub(super) fn pe_value(v: &Value) -> String {
    format!("v:{v}")
}

pub(super) fn pe_key(mut fields: Vec<(&str, Value)>) -> String {
    fields.sort_by(|a, b| a.0.cmp(b.0));
    let mut m = Map::new();
    for (name, v) in fields {
        m.insert(name.to_string(), v);
    }
    format!("k:{}", Value::Object(m))
}

/// The key path element of a list-map item, filling defaulted key fields.
pub(super) fn item_key(item: &Value, keys: &[MapKey]) -> Result<String, String> {
    let Value::Object(m) = item else {
        return Err(format!(
            "associative list with keys has an element that is not a map: {item}"
        ));
    };
    let mut fields = Vec::with_capacity(keys.len());
    for k in keys {
        match (m.get(k.field), k.default) {
            (Some(v), _) if !v.is_null() => fields.push((k.field, v.clone())),
            (_, Some(default)) => fields.push((k.field, Value::String(default.to_string()))),
            _ => {
                return Err(format!(
                    "associative list with keys has an element that omits key field \"{}\" (and doesn't have default value)",
                    k.field
                ));
            }
        }
    }
    Ok(pe_key(fields))
}

/// A field path as kube-apiserver prints it in conflicts (`.spec.ports[port=80,protocol="TCP"]`).
pub(super) fn path_string(path: &[String]) -> String {
    let mut out = String::new();
    for pe in path {
        if let Some(f) = pe.strip_prefix("f:") {
            out.push('.');
            out.push_str(f);
        } else if let Some(k) = pe.strip_prefix("k:") {
            let parts: Vec<String> = match serde_json::from_str::<Map<String, Value>>(k) {
                Ok(m) => m.iter().map(|(n, v)| format!("{n}={v}")).collect(),
                Err(_) => vec![k.to_string()],
            };
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = pe.strip_prefix("v:") {
            out.push_str(&format!("[={v}]"));
        } else if let Some(i) = pe.strip_prefix("i:") {
            out.push_str(&format!("[{i}]"));
        } else {
            out.push_str(pe);
        }
    }
    out
}

/// The field names along a path, which select list strategies.
pub(super) fn names_of(path: &[String]) -> Vec<String> {
    path.iter()
        .filter_map(|pe| pe.strip_prefix("f:"))
        .map(str::to_string)
        .collect()
}

/// Fields the apiserver never records in managed fields.
pub(super) const STRIPPED_FIELDS: &[&[&str]] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "creationTimestamp"],
    &["metadata", "selfLink"],
    &["metadata", "uid"],
    &["metadata", "clusterName"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "resourceVersion"],
];

/// Metadata an apply configuration may carry but that apply ignores.
pub(super) const IGNORED_CONFIG_METADATA: &[&str] = &[
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
];

pub(super) fn strip_meta(set: &mut FieldSet) {
    for path in STRIPPED_FIELDS {
        let path: FieldPath = path.iter().map(|n| pe_field(n)).collect();
        set.remove_member(&path);
    }
}
