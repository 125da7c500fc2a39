//! `meta.k8s.io/v1` Table output (what `kubectl get` asks for), as kube-apiserver's
//! server-side printing renders it: the built-in kinds' printers (`printers.rs`, columns in
//! `columns.json`), a CRD's `additionalPrinterColumns` (an `Age` column when it has none), and
//! the default `Name`, `Created At` table for kinds without a printer. Ages are human
//! durations (`duration.rs`).

pub mod duration;
pub mod jsonpath;
pub mod printers;

use crate::apiserver::resources::ResourceType;
use jiff::Timestamp;
use printers::Printer;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

pub use jsonpath::eval_path;

/// Whether the Accept header asks for a Table (its first choice is `as=Table`).
pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.split(';').any(|p| p.trim() == "as=Table"))
}

/// What each row carries besides its cells (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object (`"object": null`).
    None,
    /// A `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Reads the `includeObject` query parameter; an unknown value is an error message.
    pub fn from_query(value: Option<&str>) -> Result<IncludeObject, String> {
        match value {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            )),
        }
    }
}

/// `columns.json`: the column definitions per printer, with shared ones (`@name`, `@age`,
/// `@createdAt`) written once.
fn column_table() -> &'static Map<String, Value> {
    static TABLE: OnceLock<Map<String, Value>> = OnceLock::new();
    TABLE.get_or_init(|| serde_json::from_str(include_str!("columns.json")).unwrap_or_default())
}

fn shared_column(key: &str) -> Value {
    column_table()
        .get("shared")
        .and_then(|shared| shared.get(key))
        .cloned()
        .unwrap_or_default()
}

fn columns(key: &str) -> Vec<Value> {
    column_table()
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(|c| match c.as_str() {
            Some(shared) => shared_column(shared),
            None => c.clone(),
        })
        .collect()
}

/// A custom resource's printer columns: the CRD's, or the `Age` column it gets without any.
fn custom_columns(rt: &ResourceType) -> Option<Vec<Value>> {
    let custom = rt.custom.as_ref()?;
    let declared = custom
        .printer_columns
        .as_array()
        .filter(|c| !c.is_empty())
        .cloned();
    Some(declared.unwrap_or_else(|| {
        vec![
            json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
            "description": shared_column("@age")["description"]}),
        ]
    }))
}

/// The column definitions of a resource's Table.
pub fn column_definitions(rt: &ResourceType) -> Vec<Value> {
    if let Some(custom) = custom_columns(rt) {
        let mut defs = vec![shared_column("@name")];
        defs.extend(custom.iter().map(|c| {
            let path = c["jsonPath"].as_str().unwrap_or("");
            let description = c["description"]
                .as_str()
                .filter(|d| !d.is_empty())
                .map(str::to_string)
                .unwrap_or_else(|| {
                    format!("Custom resource definition column (in JSONPath format): {path}")
                });
            json!({
                "name": c["name"],
                "type": c["type"],
                "format": c["format"].as_str().unwrap_or(""),
                "description": description,
                "priority": c["priority"].as_i64().unwrap_or(0),
            })
        }));
        return defs;
    }
    match Printer::for_resource(&rt.group, &rt.plural) {
        Some(printer) => columns(printer.columns_key()),
        None => columns("default"),
    }
}

/// `cellForJSONValue` / the JSONPath printer of a CRD column.
fn custom_cell(column: &Value, obj: &Value, now: Timestamp) -> Value {
    let Some(value) = eval_path(obj, column["jsonPath"].as_str().unwrap_or("")) else {
        return Value::Null;
    };
    match (column["type"].as_str().unwrap_or("string"), value) {
        (_, Value::Null) => Value::Null,
        ("string", Value::String(s)) => json!(s),
        ("string", Value::Number(n)) => json!(n.to_string()),
        ("string", Value::Bool(b)) => json!(b.to_string()),
        ("string", other) => json!(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => match s.parse::<Timestamp>() {
            Ok(t) => json!(duration::human_duration(now.duration_since(t))),
            Err(_) => json!("<invalid>"),
        },
        _ => Value::Null,
    }
}

/// One row's cells (and conditions) for an object.
pub fn row_cells(rt: &ResourceType, obj: &Value, now: Timestamp) -> (Vec<Value>, Option<Value>) {
    let name = obj
        .pointer("/metadata/name")
        .cloned()
        .unwrap_or(Value::Null);
    if let Some(custom) = custom_columns(rt) {
        let mut cells = vec![name];
        cells.extend(custom.iter().map(|c| custom_cell(c, obj, now)));
        return (cells, None);
    }
    match Printer::for_resource(&rt.group, &rt.plural) {
        Some(printer) => printer.row(obj, now),
        None => {
            // The default table convertor: the creation time as RFC 3339, not an age.
            let created = obj
                .pointer("/metadata/creationTimestamp")
                .cloned()
                .unwrap_or(Value::Null);
            (vec![name, created], None)
        }
    }
}

fn row_object(rt: &ResourceType, obj: &Value, version: &str, include: IncludeObject) -> Value {
    match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata").cloned().unwrap_or_default(),
        }),
        IncludeObject::Object => {
            let mut full = obj.clone();
            if let Some(map) = full.as_object_mut() {
                map.insert("apiVersion".into(), json!(rt.api_version(version)));
                map.insert("kind".into(), json!(rt.kind));
            }
            full
        }
    }
}

/// A Table row: cells, conditions when the printer sets some, and the object.
pub fn row(
    rt: &ResourceType,
    obj: &Value,
    version: &str,
    include: IncludeObject,
    now: Timestamp,
) -> Value {
    let (cells, conditions) = row_cells(rt, obj, now);
    let mut row = json!({"cells": cells});
    if let Some(conditions) = conditions {
        row["conditions"] = conditions;
    }
    row["object"] = row_object(rt, obj, version, include);
    row
}

/// The Table for these objects; `metadata` is the list's (`resourceVersion`, `continue`, ...).
pub fn table(
    rt: &ResourceType,
    objects: &[&Value],
    version: &str,
    metadata: Value,
    include: IncludeObject,
) -> Value {
    let now = Timestamp::now();
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| row(rt, obj, version, include, now))
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": column_definitions(rt),
        "rows": rows,
    })
}

/// Rewrites a chunk of watch events (`{"type":..,"object":..}` lines) for a watch with
/// `as=Table`: the object of each ADDED, MODIFIED and DELETED event becomes a one-row Table;
/// bookmarks and errors pass unchanged.
pub fn watch_chunk_as_table(
    chunk: &[u8],
    rt: &ResourceType,
    version: &str,
    include: IncludeObject,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(chunk.len() * 2);
    for line in chunk.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let mut event: Value = match serde_json::from_slice(line) {
            Ok(event) => event,
            Err(_) => {
                out.extend_from_slice(line);
                out.push(b'\n');
                continue;
            }
        };
        if matches!(
            event["type"].as_str(),
            Some("ADDED" | "MODIFIED" | "DELETED")
        ) {
            let object = event["object"].take();
            let metadata = json!({"resourceVersion": object
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null)});
            event["object"] = table(rt, &[&object], version, metadata, include);
        }
        out.extend_from_slice(event.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests;
