//! Hand-written OpenAPI schemas for fields whose admission rules derive cannot express.

use schemars::{Schema, SchemaGenerator, json_schema};

/// `HH:MM`, 24-hour.
pub const TIME_OF_DAY_PATTERN: &str = r"^([01]\d|2[0-3]):[0-5]\d$";

/// A DNS label (RFC 1123).
pub const DNS_LABEL_PATTERN: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// Longest accepted `clusterID`: it is embedded in virtual node names.
pub const CLUSTER_ID_MAX_LEN: u32 = 24;

/// Shape of an IANA time zone name; whether the zone exists is checked by the syncer.
pub const TIMEZONE_PATTERN: &str = r"^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*$";

/// Same pattern as apimachinery's Quantity in controller-gen CRDs.
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// English weekday names as accepted in `timeWindows[].days`.
pub const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// A case-insensitive pattern matching one weekday name, written without regex flags so
/// that every validator (RE2, ECMAScript) reads it the same way.
pub fn weekday_pattern() -> String {
    let alternatives: Vec<String> = WEEKDAYS
        .iter()
        .map(|day| {
            day.chars()
                .map(|c| format!("[{}{}]", c.to_ascii_uppercase(), c))
                .collect::<String>()
        })
        .collect();
    format!("^({})$", alternatives.join("|"))
}

pub(crate) fn cluster_id(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "maxLength": CLUSTER_ID_MAX_LEN,
        "pattern": DNS_LABEL_PATTERN,
        "x-kubernetes-validations": [
            { "rule": "self == oldSelf", "message": "clusterID is immutable" }
        ],
    })
}

pub(crate) fn time_of_day(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": TIME_OF_DAY_PATTERN,
    })
}

pub(crate) fn weekdays(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "type": "string", "pattern": weekday_pattern() },
    })
}

pub(crate) fn timezone(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "maxLength": 64,
        "pattern": TIMEZONE_PATTERN,
    })
}

/// An int-or-string quantity; the pattern applies to the string form.
pub(crate) fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": true,
    })
}

pub(crate) fn percent(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "integer",
        "format": "int32",
        "minimum": 0,
        "maximum": 100,
    })
}

pub(crate) fn non_negative_int32(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "integer",
        "format": "int32",
        "minimum": 0,
    })
}
