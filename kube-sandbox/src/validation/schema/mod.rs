//! CRD schema engine: what kube-apiserver does with a CustomResourceDefinition version's
//! `openAPIV3Schema` when the CRD is created and when custom resources are written.
//!
//! The recommended order for a create or update is the apiserver's:
//! [`prune_unknown`] (decoding) → [`default_object`] → [`validate_object`].
//!
//! ## Implemented
//!
//! * [`validate_crd_schema`] — structural-schema and CRD-API checks, with the apiserver's field
//!   paths and wording (paths are relative to `openAPIV3Schema`; prefix them with
//!   [`FieldError::with_prefix`]):
//!   every node has a `type` (unless `x-kubernetes-int-or-string` or
//!   `x-kubernetes-preserve-unknown-fields`); `type` is one of array, boolean, integer, number,
//!   object, string (`null` is forbidden); the root is an object without `additionalProperties`;
//!   arrays have `items` (a schema, not a list); `properties` and `additionalProperties` are
//!   exclusive; `$ref`, `id`, `patternProperties`, `definitions`, `dependencies`,
//!   `additionalItems` and `uniqueItems: true` are forbidden; `pattern` compiles;
//!   `x-kubernetes-preserve-unknown-fields` is true or absent and not combined with
//!   int-or-string; `x-kubernetes-embedded-resource` is an object; root `kind`/`apiVersion`
//!   are strings and root `metadata` restricts nothing but `name`/`generateName`;
//!   `allOf`/`anyOf`/`oneOf`/`not` carry no `type`, `default`, `description`, `title`,
//!   `nullable`, `additionalProperties` or `x-kubernetes-*` (except the two int-or-string
//!   patterns), never mention `metadata`, and only name properties/items that the structural
//!   schema declares; `x-kubernetes-list-type` is atomic/set/map on arrays, `map` has
//!   `x-kubernetes-list-map-keys` naming required-or-defaulted scalar item properties, and
//!   `set` items are scalars or atomic; `x-kubernetes-map-type` is atomic/granular;
//!   `x-kubernetes-validations` entries have a rule, a valid `reason` and a well-formed
//!   `fieldPath`; every `default` contains no field pruning would drop and validates against
//!   its schema (after the defaults nested inside it are applied).
//! * [`default_object`] — structural defaulting: non-nullable `null`s without a default are
//!   dropped, missing properties and non-nullable `null`s get the schema `default`
//!   (recursively, so defaults inside defaults apply; a root property such as `spec` with a
//!   `default` is created), for `properties`, `additionalProperties` and `items`.
//! * [`prune_unknown`] — structural pruning: unknown fields are dropped unless
//!   `x-kubernetes-preserve-unknown-fields: true` (known fields below such a node are still
//!   pruned); `additionalProperties` keeps every key (`additionalProperties: true` keeps the
//!   key but, as in the apiserver, empties nested objects); `apiVersion`, `kind` and `metadata` are
//!   kept at the root and in `x-kubernetes-embedded-resource` objects. Returns the dropped paths
//!   (`spec.foo`, `spec.items[0].bar`), which the apiserver reports as `unknown field` warnings.
//! * [`validate_object`] — kube-openapi validation as the apiserver converts it to field
//!   errors: `type` (with `nullable`, int-or-string, integral numbers for `integer`), `enum`,
//!   `required`, `properties`, `additionalProperties` (bool or schema), `items`,
//!   `maxLength`/`minLength` (Unicode code points), `pattern` (RE2, as Go's regexp),
//!   `format` (`date-time`, `date`, `byte`, `uuid`/`uuid3`/`uuid4`/`uuid5`, `ipv4`, `ipv6`,
//!   `cidr`, `mac`, `hostname`, `email`, `uri`, `duration`, `hexcolor`, `rgbcolor`,
//!   `bsonobjectid`, `ssn`, `password`), `minimum`/`maximum` with `exclusiveMinimum`/
//!   `exclusiveMaximum`, `multipleOf`, `minItems`/`maxItems`, `uniqueItems` (which CRDs cannot
//!   declare, but a stored schema might),
//!   `minProperties`/`maxProperties`, `allOf`/`anyOf`/`oneOf`/`not`; then the
//!   `x-kubernetes-list-type` set/map uniqueness checks; then, unless an earlier error is a
//!   blocking one (Required, NotSupported, TooLong, TooMany, TypeInvalid — the apiserver then
//!   adds its "some validation rules were not checked" error), the `x-kubernetes-validations`
//!   CEL rules through [`crate::validation::cel`]. Transition rules (mentioning `oldSelf`) run only on
//!   update where the old value exists (correlated through properties, map keys and list-type
//!   map keys). On update, validation ratchets as in Kubernetes 1.30+: errors (and
//!   non-transition rules) inside a value equal to its correlated old value are ignored. Root
//!   `metadata` is only checked for the `name`/`generateName` constraints the schema may carry.
//! * [`FieldError`] — apimachinery field errors with the apiserver's wording
//!   ([`FieldError::to_string_k8s`]) and Status cause reasons ([`FieldError::reason`]).
//! * [`unsupported_rules`] — the rules [`validate_object`] skips.
//!
//! ## Approximated or missing
//!
//! * `format: int32`/`int64`/`float`/`double` are not range-checked: the apiserver strips these
//!   formats from CRD schemas too. `isbn*` and `creditcard` formats are accepted unchecked;
//!   `email`, `uri`, `duration` and `hostname` are close approximations of Go's parsers.
//! * CEL: only the subset listed in [`crate::validation::cel`]; rules that do not parse, use anything else
//!   (timestamps, durations, quantities, optionals, `type()`...), set `optionalOldSelf`, or hit a
//!   type mismatch at run time are skipped, never failed; so are rules nested deeper than the
//!   parser allows or needing more than a million evaluation steps (the apiserver has a cost
//!   budget instead). `messageExpression` is ignored (the `message` is used).
//! * When `anyOf`/`oneOf` fail, the errors of the branch with the fewest errors are reported
//!   (kube-openapi picks the branch with the most passing checks).
//! * Validation stops at a node whose type is wrong (kube-openapi may add an `enum` error too).
//! * `additionalProperties: false` is enforced ("is a forbidden property"), as kube-openapi does.
//! * Embedded resources (`x-kubernetes-embedded-resource`) are not checked for
//!   `apiVersion`/`kind`/`metadata` validity.
//! * `x-kubernetes-validations` `fieldPath` is not checked against the schema when the CRD is
//!   created; rule compilation errors never reject a CRD.

use serde_json::{Map, Value};

use super::cel::{self, CelValue, EvalError};
use super::gocompat::{cached_regex, go_format_float, go_quote};

mod accessors;
mod crd;
mod defaulting;
mod field_error;
mod formats;
mod list_types;
mod pruning;
mod rules;
#[cfg(test)]
mod tests;
mod validate;

use accessors::*;
pub use crd::*;
pub use defaulting::*;
pub use field_error::{FieldError, FieldErrorKind, NIL_FIELD};
use formats::*;
use list_types::*;
pub use pruning::*;
pub use rules::*;
pub use validate::*;
