//! metadata.managedFields: reading and writing the entries.

use serde_json::{Map, Value};

use super::fieldset::FieldSet;

pub(super) const APPLY: &str = "Apply";
pub(super) const UPDATE: &str = "Update";

#[derive(Debug, Clone)]
pub(super) struct ManagedEntry {
    pub(super) manager: String,
    pub(super) operation: String,
    pub(super) api_version: String,
    pub(super) time: Option<String>,
    pub(super) subresource: String,
    pub(super) set: FieldSet,
}

impl ManagedEntry {
    pub(super) fn is_apply_by(&self, manager: &str, subresource: &str) -> bool {
        self.operation == APPLY && self.manager == manager && self.subresource == subresource
    }

    /// The manager as the apiserver prints it in conflicts.
    pub(super) fn describe(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == UPDATE {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }

    /// Whether `v` is an entry [`Self::parse`] accepts, checked in place.
    pub(super) fn is_valid(v: &Value) -> bool {
        let operation = EntryHeader::of(v).operation;
        (operation == APPLY || operation == UPDATE) && v.get("fieldsV1").is_some_and(fields_valid)
    }

    pub(super) fn parse(v: &Value) -> Option<ManagedEntry> {
        let text = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let operation = text("operation");
        if operation != APPLY && operation != UPDATE {
            return None;
        }
        Some(ManagedEntry {
            manager: text("manager"),
            operation,
            api_version: text("apiVersion"),
            time: v.get("time").and_then(Value::as_str).map(str::to_string),
            subresource: text("subresource"),
            set: FieldSet::from_json(v.get("fieldsV1")?)?,
        })
    }

    pub(super) fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.clone()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), self.set.to_json());
        if !self.subresource.is_empty() {
            m.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        Value::Object(m)
    }
}

pub(super) fn parse_managed_fields(v: Option<&Value>) -> Vec<ManagedEntry> {
    match v {
        Some(Value::Array(entries)) => entries.iter().filter_map(ManagedEntry::parse).collect(),
        _ => Vec::new(),
    }
}

pub(super) fn take_managed_fields(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"))
}

/// Writes the entries in the apiserver's order (operation, time, manager, version).
pub(super) fn write_managed_fields(obj: &mut Value, entries: Vec<ManagedEntry>) {
    write_entries(obj, entries.into_iter().map(Entry::Parsed).collect());
}

/// One `metadata.managedFields` entry of an update: parsed when the write changes it,
/// kept as written otherwise. Most writes change one manager's fields, and parsing and
/// rendering every other entry again cost more than the rest of the bookkeeping.
pub(super) enum Entry {
    /// A valid entry ([`ManagedEntry::parse`] accepts it), unchanged.
    Kept(Value),
    /// An entry to render.
    Parsed(ManagedEntry),
}

impl Entry {
    /// (operation, time, manager, apiVersion, subresource): the apiserver's order.
    pub(super) fn order(&self) -> (&str, Option<&str>, &str, &str, &str) {
        match self {
            Entry::Kept(v) => {
                let h = EntryHeader::of(v);
                (h.operation, h.time, h.manager, h.api_version, h.subresource)
            }
            Entry::Parsed(e) => (
                &e.operation,
                e.time.as_deref(),
                &e.manager,
                &e.api_version,
                &e.subresource,
            ),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        match self {
            Entry::Kept(v) => v
                .get("fieldsV1")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty),
            Entry::Parsed(e) => e.set.is_empty(),
        }
    }

    pub(super) fn into_json(self) -> Value {
        match self {
            Entry::Kept(v) => v,
            Entry::Parsed(e) => e.to_json(),
        }
    }
}

pub(super) fn write_entries(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.is_empty());
    entries.sort_by(|a, b| a.order().cmp(&b.order()));
    let Some(obj) = obj.as_object_mut() else {
        return;
    };
    if entries.is_empty() {
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            meta.remove("managedFields");
        }
        return;
    }
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        meta.insert(
            "managedFields".into(),
            Value::Array(entries.into_iter().map(Entry::into_json).collect()),
        );
    }
}

/// Who wrote a managedFields entry, how and when, read in place.
pub(super) struct EntryHeader<'a> {
    pub(super) manager: &'a str,
    pub(super) operation: &'a str,
    pub(super) api_version: &'a str,
    pub(super) subresource: &'a str,
    pub(super) time: Option<&'a str>,
}

impl<'a> EntryHeader<'a> {
    pub(super) fn of(v: &'a Value) -> EntryHeader<'a> {
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
        EntryHeader {
            manager: text("manager"),
            operation: text("operation"),
            api_version: text("apiVersion"),
            subresource: text("subresource"),
            time: v.get("time").and_then(Value::as_str),
        }
    }

    pub(super) fn is_update_by(&self, manager: &str, api_version: &str, subresource: &str) -> bool {
        self.operation == UPDATE
            && self.manager == manager
            && self.api_version == api_version
            && self.subresource == subresource
    }
}

/// Whether `v` is a FieldsV1 set [`FieldSet::from_json`] reads.
pub(super) fn fields_valid(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.iter().all(|(k, child)| k == "." || fields_valid(child)))
}

/// The FieldsV1 node at `path`, if the set reaches it.
pub(super) fn fields_node<'a>(fields: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(fields, |node, pe| node.get(pe.as_str()))
}

/// Whether a FieldsV1 node is a member itself (a leaf, or marked with `.`).
pub(super) fn fields_member(node: &Value) -> bool {
    node.as_object()
        .is_some_and(|m| m.is_empty() || m.contains_key("."))
}
