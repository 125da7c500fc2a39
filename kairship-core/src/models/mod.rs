//! Typed models of the Karmada and Clusterpedia objects Kairship reads or writes.
//!
//! They are written by hand from the CRDs (and, for `Cluster`, from Karmada's Go types, as
//! that API is served by karmada-aggregated-apiserver): the fields Kairship uses are typed
//! with their exact wire names, and every other field is kept in an `extra` map so that
//! reading and writing back an object never drops what this version does not know.

pub mod cluster;
pub mod operator;
pub mod pedia;
pub mod policy;
pub mod work;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Fields of an object that Kairship does not model, kept for round-tripping.
pub type Extra = BTreeMap<String, serde_json::Value>;

/// A reference to a Secret by namespace and name (Karmada's `LocalSecretReference` and the
/// operator's `LocalSecretReference`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedSecretRef {
    /// Namespace of the Secret.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the Secret.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Defines a root object type (`metadata`, `spec`, optional `status`) with a manual
/// `kube::Resource` impl, a `Serialize` impl that writes `apiVersion` and `kind`, and the
/// `HasSpec`/`HasStatus` accessors.
///
/// Unlike `#[derive(CustomResource)]`, a missing `spec` deserialises to its default, which
/// keeps objects written by other tools readable.
macro_rules! root_object {
    (
        $(#[$doc:meta])*
        $name:ident {
            group: $group:literal,
            version: $version:literal,
            kind: $kind:literal,
            plural: $plural:literal,
            scope: $scope:ty,
            spec: $spec:ty,
            status: $status:ty $(,)?
        }
    ) => {
        $(#[$doc])*
        #[derive(::serde::Deserialize, Clone, Debug, Default, PartialEq)]
        pub struct $name {
            /// Standard object metadata.
            #[serde(default)]
            pub metadata: ::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
            /// Desired state.
            #[serde(default)]
            pub spec: $spec,
            /// Observed state.
            #[serde(default)]
            pub status: Option<$status>,
        }

        impl $name {
            /// Creates an object with the given name and spec.
            pub fn new(name: &str, spec: $spec) -> Self {
                Self {
                    metadata: ::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                        name: Some(name.to_owned()),
                        ..Default::default()
                    },
                    spec,
                    status: None,
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeStruct;
                let fields = if self.status.is_some() { 5 } else { 4 };
                let mut obj = ser.serialize_struct(stringify!($name), fields)?;
                obj.serialize_field("apiVersion", concat!($group, "/", $version))?;
                obj.serialize_field("kind", $kind)?;
                obj.serialize_field("metadata", &self.metadata)?;
                obj.serialize_field("spec", &self.spec)?;
                if let Some(status) = &self.status {
                    obj.serialize_field("status", status)?;
                }
                obj.end()
            }
        }

        impl ::kube::Resource for $name {
            type DynamicType = ();
            type Scope = $scope;

            fn kind(_: &()) -> ::std::borrow::Cow<'_, str> {
                $kind.into()
            }
            fn group(_: &()) -> ::std::borrow::Cow<'_, str> {
                $group.into()
            }
            fn version(_: &()) -> ::std::borrow::Cow<'_, str> {
                $version.into()
            }
            fn api_version(_: &()) -> ::std::borrow::Cow<'_, str> {
                concat!($group, "/", $version).into()
            }
            fn plural(_: &()) -> ::std::borrow::Cow<'_, str> {
                $plural.into()
            }
            fn meta(&self) -> &::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.metadata
            }
        }

        impl ::kube::core::object::HasSpec for $name {
            type Spec = $spec;
            fn spec(&self) -> &$spec {
                &self.spec
            }
            fn spec_mut(&mut self) -> &mut $spec {
                &mut self.spec
            }
        }

        impl ::kube::core::object::HasStatus for $name {
            type Status = $status;
            fn status(&self) -> Option<&$status> {
                self.status.as_ref()
            }
            fn status_mut(&mut self) -> &mut Option<$status> {
                &mut self.status
            }
        }
    };
}

pub(crate) use root_object;

/// Status of objects whose CRD declares none (Karmada's policies): any content is kept as is.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct OpaqueStatus {
    /// Whatever the server returned.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A status condition as Karmada and Clusterpedia write them (`metav1.Condition`), read
/// leniently: only `type` and `status` are required, so a hand-written or partially filled
/// condition never makes the whole object unreadable.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectCondition {
    /// Condition type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// Generation the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ObjectCondition {
    /// Whether the condition's status is exactly `"True"`.
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// Finds the condition of the given type.
pub fn find_condition<'a>(
    conditions: &'a [ObjectCondition],
    type_: &str,
) -> Option<&'a ObjectCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}
