//! kube's `pod-template-hash` (kubernetes `pkg/controller/controller_utils.go`, `ComputeHash`):
//! FNV-32a of the pod template as `hashutil.DeepHashObject` prints it — go-spew's `%#v` with
//! `SortKeys`, `SpewKeys`, `DisableMethods`, `DisablePointerAddresses` and `DisableCapacities`
//! (`k8s.io/utils/dump.ForHash`) of the `v1.PodTemplateSpec` struct the deployment controller
//! decoded from protobuf — then the collision count's `uint32` written little-endian into an
//! 8-byte buffer, `fmt.Sprint` of the sum, `rand.SafeEncodeString`.
//!
//! The printed form is rebuilt from the template's JSON and a description of the Go types
//! (`go_types.json`, see README.md there): every struct field in declaration order with its Go
//! type name, `<nil>` for absent pointers and, as protobuf decoding leaves them, for empty or
//! absent slices and maps.

use super::rollout::{canonical_json, fnv32a, safe_encode};
use kube_kit::quantity::Quantity;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

/// One Go type as `reflect` describes it.
#[derive(Debug, serde::Deserialize)]
struct GoType {
    kind: String,
    #[serde(default)]
    elem: Option<String>,
    #[serde(default)]
    fields: Vec<GoField>,
    #[serde(default)]
    opaque: bool,
}

/// A struct field: Go name, JSON name, Go type, and whether it is embedded inline.
#[derive(Debug, serde::Deserialize)]
#[serde(from = "FieldRow")]
struct GoField {
    name: String,
    json: String,
    ty: String,
    inline: bool,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum FieldRow {
    Plain(String, String, String),
    Inline(String, String, String, bool),
}

impl From<FieldRow> for GoField {
    fn from(row: FieldRow) -> Self {
        let (name, json, ty, inline) = match row {
            FieldRow::Plain(n, j, t) => (n, j, t, false),
            FieldRow::Inline(n, j, t, i) => (n, j, t, i),
        };
        GoField {
            name,
            json,
            ty,
            inline,
        }
    }
}

/// Why a template cannot be printed as Go prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unprintable(pub String);

type GoTypes = HashMap<String, GoType>;

fn go_types() -> Result<&'static GoTypes, Unprintable> {
    static TYPES: OnceLock<Result<GoTypes, String>> = OnceLock::new();
    TYPES
        .get_or_init(|| {
            serde_json::from_str(include_str!("go_types.json")).map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Unprintable(format!("go_types.json: {e}")))
}

/// kube's `pod-template-hash` of a stored (defaulted) pod template and collision count.
pub fn compute_hash(template: &Value, collision_count: Option<u32>) -> Result<String, Unprintable> {
    let mut bytes = dump_for_hash(template)?.into_bytes();
    if let Some(count) = collision_count {
        // `make([]byte, 8)` with `PutUint32` into its first four bytes: all eight are hashed.
        let mut buffer = [0u8; 8];
        buffer[..4].copy_from_slice(&count.to_le_bytes());
        bytes.extend_from_slice(&buffer);
    }
    Ok(safe_encode(&fnv32a(&bytes).to_string()))
}

/// The `pod-template-hash` the deployment controller names a template's ReplicaSet by: kube's
/// [`compute_hash`]; for the rare template it cannot print as Go does (a set timestamp in the
/// template's metadata, a quantity beyond int64 precision such as `1Pi`), the FNV-32a of the
/// template's canonical JSON instead, as stable but not kube's.
pub fn template_hash(template: &Value, collision_count: Option<u32>) -> String {
    compute_hash(template, collision_count).unwrap_or_else(|_| {
        let mut text = String::new();
        canonical_json(template, &mut text);
        let mut bytes = text.into_bytes();
        if let Some(count) = collision_count {
            bytes.extend_from_slice(&count.to_le_bytes());
        }
        safe_encode(&fnv32a(&bytes).to_string())
    })
}

/// `dump.ForHash` of the template as a `v1.PodTemplateSpec`.
pub fn dump_for_hash(template: &Value) -> Result<String, Unprintable> {
    let mut printer = Printer {
        types: go_types()?,
        out: String::new(),
    };
    printer.value("v1.PodTemplateSpec", Some(template), true)?;
    Ok(printer.out)
}

struct Printer<'t> {
    types: &'t GoTypes,
    out: String,
}

/// A JSON value that protobuf would leave unset: absent, null, or an empty list or map.
fn is_empty_collection(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(map)) => map.is_empty(),
        Some(_) => false,
    }
}

impl<'t> Printer<'t> {
    fn ty(&self, name: &str) -> Result<&'t GoType, Unprintable> {
        self.types
            .get(name)
            .ok_or_else(|| Unprintable(format!("no Go type {name}")))
    }

    /// go-spew's `format` of a value of Go type `name`; `show_type` is the negation of its
    /// `ignoreNextType` (types are printed except for slice elements, map entries and a
    /// pointer's target).
    fn value(
        &mut self,
        name: &str,
        value: Option<&Value>,
        show_type: bool,
    ) -> Result<(), Unprintable> {
        let ty = self.ty(name)?;
        if ty.kind == "ptr" {
            let elem = ty.elem.as_deref().unwrap_or_default();
            let absent = matches!(value, None | Some(Value::Null));
            if show_type {
                self.out.push('(');
                self.out.push_str(name);
                self.out.push(')');
            } else if absent {
                self.out.push_str("<nil>");
                return Ok(());
            } else {
                self.out.push_str("<*>");
            }
            if absent {
                self.out.push_str("<nil>");
                return Ok(());
            }
            return self.value(elem, value, false);
        }
        if show_type {
            self.out.push('(');
            self.out.push_str(name);
            self.out.push(')');
        }
        if ty.opaque {
            return self.opaque(name, value);
        }
        match ty.kind.as_str() {
            "bool" => {
                let b = value.and_then(Value::as_bool).unwrap_or(false);
                self.out.push_str(if b { "true" } else { "false" });
            }
            "int" | "int8" | "int16" | "int32" | "int64" => {
                let n = match value {
                    None | Some(Value::Null) => 0,
                    Some(v) => v
                        .as_i64()
                        .ok_or_else(|| Unprintable(format!("{name}: {v} is not an integer")))?,
                };
                self.out.push_str(&n.to_string());
            }
            "uint" | "uint8" | "uint16" | "uint32" | "uint64" => {
                let n = match value {
                    None | Some(Value::Null) => 0,
                    Some(v) => v
                        .as_u64()
                        .ok_or_else(|| Unprintable(format!("{name}: {v} is not an integer")))?,
                };
                self.out.push_str(&n.to_string());
            }
            "string" => match value {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => self.out.push_str(s),
                Some(other) => {
                    return Err(Unprintable(format!("{name}: {other} is not a string")));
                }
            },
            "slice" => {
                if is_empty_collection(value) {
                    self.out.push_str("<nil>");
                    return Ok(());
                }
                let items = value
                    .and_then(Value::as_array)
                    .ok_or_else(|| Unprintable(format!("{name}: not a list")))?;
                let elem = ty.elem.as_deref().unwrap_or_default();
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(' ');
                    }
                    self.value(elem, Some(item), false)?;
                }
                self.out.push(']');
            }
            "map" => {
                if is_empty_collection(value) {
                    self.out.push_str("<nil>");
                    return Ok(());
                }
                let map = value
                    .and_then(Value::as_object)
                    .ok_or_else(|| Unprintable(format!("{name}: not a map")))?;
                let elem = ty.elem.as_deref().unwrap_or_default();
                // `SortKeys`: string keys in byte order.
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                self.out.push_str("map[");
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(' ');
                    }
                    self.out.push_str(key);
                    self.out.push(':');
                    if name == "v1.ResourceList" {
                        // `SetDefaults_ResourceList` rounds every entry up to milli-units.
                        self.quantity(map.get(key), true)?;
                    } else {
                        self.value(elem, map.get(key), false)?;
                    }
                }
                self.out.push(']');
            }
            "struct" => {
                let empty = Map::new();
                let object = match value {
                    None | Some(Value::Null) => &empty,
                    Some(Value::Object(map)) => map,
                    Some(other) => {
                        return Err(Unprintable(format!("{name}: {other} is not an object")));
                    }
                };
                self.out.push('{');
                for (i, field) in ty.fields.iter().enumerate() {
                    if i > 0 {
                        self.out.push(' ');
                    }
                    self.out.push_str(&field.name);
                    self.out.push(':');
                    let field_value = if field.inline {
                        value
                    } else if field.json.is_empty() || field.json == "-" {
                        None
                    } else {
                        object.get(&field.json)
                    };
                    self.value(&field.ty, field_value, true)?;
                }
                self.out.push('}');
            }
            other => return Err(Unprintable(format!("{name}: Go kind {other}"))),
        }
        Ok(())
    }

    /// The structs whose JSON form is not their Go fields.
    fn opaque(&mut self, name: &str, value: Option<&Value>) -> Result<(), Unprintable> {
        match name {
            // `metav1.Time`: only the zero time (no timestamp in the template) prints the same
            // on every machine; a set one carries the controller's `time.Local`.
            "v1.Time" => match value {
                None | Some(Value::Null) => {
                    self.out.push_str(
                        "{Time:(time.Time){wall:(uint64)0 ext:(int64)0 loc:(*time.Location)<nil>}}",
                    );
                    Ok(())
                }
                Some(v) => Err(Unprintable(format!("a set timestamp {v} in the template"))),
            },
            // `intstr.IntOrString{Type, IntVal, StrVal}`: Type 0 for numbers, 1 for strings.
            "intstr.IntOrString" => {
                let (kind, int, text) = match value {
                    None | Some(Value::Null) => (0, 0, ""),
                    Some(Value::String(s)) => (1, 0, s.as_str()),
                    Some(v) => {
                        let n = v
                            .as_i64()
                            .ok_or_else(|| Unprintable(format!("IntOrString {v}")))?;
                        (0, n, "")
                    }
                };
                self.out.push_str(&format!(
                    "{{Type:(intstr.Type){kind} IntVal:(int32){int} StrVal:(string){text}}}"
                ));
                Ok(())
            }
            "resource.Quantity" => self.quantity(value, false),
            other => Err(Unprintable(format!("opaque Go type {other}"))),
        }
    }
}

impl Printer<'_> {
    /// A quantity's struct (without its type), as the controller decodes the canonical string
    /// kube-apiserver stored; `milli` rounds up to milli-units first, as resource lists are.
    fn quantity(&mut self, value: Option<&Value>, milli: bool) -> Result<(), Unprintable> {
        let text = match value {
            // A zero Quantity travels as "0" in protobuf.
            None | Some(Value::Null) => "0".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(v) => return Err(Unprintable(format!("quantity {v}"))),
        };
        let mut parsed =
            Quantity::parse(&text).map_err(|e| Unprintable(format!("quantity {text:?}: {e}")))?;
        if milli {
            const NANOS_PER_MILLI: i128 = 1_000_000;
            let nanos = parsed.nano_value();
            let millis = nanos / NANOS_PER_MILLI
                + match nanos % NANOS_PER_MILLI {
                    0 => 0,
                    r => r.signum(),
                };
            parsed = Quantity::from_nanos(millis * NANOS_PER_MILLI, parsed.format());
        }
        let decoded = DecodedQuantity::parse_canonical(&parsed.to_canonical_string())?;
        self.out.push_str(&decoded.printed());
        Ok(())
    }
}

/// A `resource.Quantity` as apimachinery's `ParseQuantity` builds it from the canonical string
/// the protobuf encoding carries (`pkg/api/resource/quantity.go`): the int64 form.
#[derive(Debug, PartialEq, Eq)]
struct DecodedQuantity {
    value: i64,
    scale: i32,
    /// The string kept when it is already canonical, as `ParseQuantity` does.
    cached: String,
    format: &'static str,
}

impl DecodedQuantity {
    fn parse_canonical(text: &str) -> Result<DecodedQuantity, Unprintable> {
        let unsupported = || {
            Unprintable(format!(
                "quantity {text:?} decodes to apimachinery's inf.Dec form, not printed here"
            ))
        };
        if text == "0" {
            return Ok(DecodedQuantity {
                value: 0,
                scale: 0,
                cached: text.into(),
                format: "DecimalSI",
            });
        }
        let (positive, rest) = match text.strip_prefix('-') {
            Some(rest) => (false, rest),
            None => (true, text.strip_prefix('+').unwrap_or(text)),
        };
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let num = rest[..digits_end].trim_start_matches('0');
        let num = if num.is_empty() { "0" } else { num };
        let suffix = &rest[digits_end..];
        // `quantitySuffixer.interpret`: (base, exponent, format).
        let (base, exponent, format): (u32, i32, &'static str) = match suffix {
            "" => (10, 0, "DecimalSI"),
            "n" => (10, -9, "DecimalSI"),
            "u" => (10, -6, "DecimalSI"),
            "m" => (10, -3, "DecimalSI"),
            "k" => (10, 3, "DecimalSI"),
            "M" => (10, 6, "DecimalSI"),
            "G" => (10, 9, "DecimalSI"),
            "T" => (10, 12, "DecimalSI"),
            "P" => (10, 15, "DecimalSI"),
            "E" => (10, 18, "DecimalSI"),
            "Ki" => (2, 10, "BinarySI"),
            "Mi" => (2, 20, "BinarySI"),
            "Gi" => (2, 30, "BinarySI"),
            "Ti" => (2, 40, "BinarySI"),
            "Pi" => (2, 50, "BinarySI"),
            "Ei" => (2, 60, "BinarySI"),
            s => {
                let exp = s
                    .strip_prefix(['e', 'E'])
                    .and_then(|e| e.parse::<i32>().ok())
                    .ok_or_else(|| Unprintable(format!("quantity suffix {s:?}")))?;
                (10, exp, "DecimalExponent")
            }
        };
        let digits = num.len() as i32;
        let (scale, mantissa, precision) = if base == 10 {
            (exponent, 1i64, 18 - digits)
        } else {
            // 1Mi has ~6 decimal digits: `15 - len(num) - int32(float32(exponent)*3/10) - 1`.
            (0, 1i64 << exponent, 15 - digits - (exponent * 3 / 10) - 1)
        };
        if precision < 0 || scale < -9 {
            return Err(unsupported());
        }
        let value: i64 = num.parse().map_err(|_| unsupported())?;
        let mut result = value.checked_mul(mantissa).ok_or_else(unsupported)?;
        if !positive {
            result = -result;
        }
        let keeps_string = if base == 2 {
            exponent % 10 == 0 && value & 0x07 != 0
        } else {
            scale % 3 == 0 && !num.ends_with("000") && !num.starts_with('0')
        };
        Ok(DecodedQuantity {
            value: result,
            scale,
            cached: if keeps_string {
                text.into()
            } else {
                String::new()
            },
            format,
        })
    }

    fn printed(&self) -> String {
        format!(
            "{{i:(resource.int64Amount){{value:(int64){} scale:(resource.Scale){}}} \
             d:(resource.infDecAmount){{Dec:(*inf.Dec)<nil>}} s:(string){} Format:(resource.Format){}}}",
            self.value, self.scale, self.cached, self.format
        )
    }
}

#[cfg(test)]
mod tests;
