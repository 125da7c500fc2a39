//! The pure arithmetic of rollouts, as kube-controller-manager's deployment utilities compute
//! it: hashing helpers, controller revision hashes, `maxSurge`/`maxUnavailable` resolution and rounding, how far a new
//! ReplicaSet may grow and how many old pods may go.

use serde_json::Value;

/// The alphabet `rand.SafeEncodeString` maps bytes onto (no vowels, no confusable digits).
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Upstream `rand.SafeEncodeString`: every byte mapped onto `SAFE_ALPHABET`.
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| SAFE_ALPHABET[b as usize % SAFE_ALPHABET.len()] as char)
        .collect()
}

/// 32-bit FNV-1a.
pub fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// JSON with object keys sorted, so that equal templates hash alike whatever their key order.
pub fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                canonical_json(&map[*k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// 32-bit FNV-1 (Go's `fnv.New32`, which `HashControllerRevision` uses; not FNV-1a).
pub fn fnv32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| {
        h.wrapping_mul(0x0100_0193) ^ u32::from(*b)
    })
}

/// JSON as Go's `encoding/json` marshals a map: keys sorted, and `<`, `>`, `&`, U+2028 and
/// U+2029 escaped as `\u003c`, `\u003e`, `\u0026`, `\u2028`, `\u2029`.
pub fn go_json(value: &Value) -> String {
    let mut text = String::new();
    canonical_json(value, &mut text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// A pod template as Go encodes it: `metadata` and each container's `resources` are structs
/// the encoder always writes (`{}` when empty).
fn go_encoded_template(template: &Value) -> Value {
    let mut template = template.clone();
    if !template["metadata"].is_object() {
        template["metadata"] = serde_json::json!({});
    }
    for list in ["initContainers", "containers"] {
        if let Some(containers) = template
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        {
            for container in containers.iter_mut().filter(|c| c.is_object()) {
                if !container["resources"].is_object() {
                    container["resources"] = serde_json::json!({});
                }
            }
        }
    }
    template
}

/// The hash of a StatefulSet's or DaemonSet's ControllerRevision for its template, which names
/// the revision (`<name>-<hash>`) and labels the pods (kubernetes
/// `pkg/controller/history/controller_history.go`, `HashControllerRevision`: FNV-32 of the
/// revision's data, the `getPatch` of `pkg/controller/statefulset/stateful_set_utils.go` and
/// `pkg/controller/daemon/update.go` — `{"spec":{"template":{..., "$patch":"replace"}}}` as
/// Go marshals it — then of the collision count in decimal when there is one; safe-encoded).
pub fn controller_revision_hash(template: &Value, collision_count: Option<u32>) -> String {
    let mut template = go_encoded_template(template);
    template["$patch"] = Value::String("replace".into());
    let patch = serde_json::json!({"spec": {"template": template}});
    let mut bytes = go_json(&patch).into_bytes();
    if let Some(count) = collision_count {
        bytes.extend_from_slice(count.to_string().as_bytes());
    }
    safe_encode(&fnv32(&bytes).to_string())
}

/// An `IntOrString` such as `1` or `"25%"` scaled against `total` (upstream
/// `GetScaledValueFromIntOrPercent`): percentages round up or down as asked.
pub fn scaled_value(value: Option<&Value>, default: &str, total: i64, round_up: bool) -> i64 {
    let scale = |text: &str| -> Option<i64> {
        let percent: i64 = text.strip_suffix('%')?.trim().parse().ok()?;
        let product = percent * total;
        Some(if round_up {
            (product + 99).div_euclid(100)
        } else {
            product.div_euclid(100)
        })
    };
    match value {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => scale(s)
            .or_else(|| s.parse().ok())
            .unwrap_or_else(|| scale(default).unwrap_or(0)),
        _ => scale(default).unwrap_or(0),
    }
}

/// `(maxSurge, maxUnavailable)` of a RollingUpdate strategy for `desired` replicas (upstream
/// `ResolveFenceposts`): surge rounds up, unavailability down, and both 0 becomes 0 and 1.
pub fn fenceposts(rolling: Option<&Value>, desired: i64) -> (i64, i64) {
    let surge = scaled_value(
        rolling.and_then(|r| r.get("maxSurge")),
        "25%",
        desired,
        true,
    );
    let unavailable = scaled_value(
        rolling.and_then(|r| r.get("maxUnavailable")),
        "25%",
        desired,
        false,
    );
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge.max(0), unavailable.max(0))
    }
}

/// The replicas a new ReplicaSet of a rolling update may have now (upstream `NewRSNewReplicas`):
/// total pods stay within `desired + maxSurge`, and the new set never exceeds `desired`.
pub fn new_rs_replicas(desired: i64, max_surge: i64, all_replicas: i64, new_replicas: i64) -> i64 {
    let max_total = desired + max_surge;
    if all_replicas >= max_total {
        return new_replicas;
    }
    let scale_up = (max_total - all_replicas).min(desired - new_replicas);
    new_replicas + scale_up.max(0)
}

/// How many old pods a rolling update may remove now (upstream `reconcileOldReplicaSets`):
/// what exceeds `desired - maxUnavailable` once the new set's unavailable pods are counted.
pub fn old_scale_down_budget(
    desired: i64,
    max_unavailable: i64,
    all_replicas: i64,
    new_spec_replicas: i64,
    new_available: i64,
) -> i64 {
    let min_available = desired - max_unavailable;
    let new_unavailable = (new_spec_replicas - new_available).max(0);
    all_replicas - min_available - new_unavailable
}

/// How many available old pods may go (upstream `scaleDownOldReplicaSetsForRollingUpdate`):
/// the available pods above `desired - maxUnavailable`.
pub fn available_scale_down(desired: i64, max_unavailable: i64, available: i64) -> i64 {
    (available - (desired - max_unavailable)).max(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn controller_revision_hashes_follow_upstream() {
        // The template as kube-apiserver stores it (defaults in, no `resources`): upstream
        // hashes `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},
        // "spec":{"containers":[{"image":"nginx:1.27",...,"resources":{},...}],...}}}}` with
        // FNV-32; the expected values are that string's FNV-32 (plus "0" / "1" for the
        // collision count) in decimal, safe-encoded, computed independently of this code.
        let template = json!({"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"}],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "securityContext": {},
                "schedulerName": "default-scheduler"}});
        let cases = [
            (None, "5cd97f856c"),
            (Some(0), "58766555d5"),
            (Some(1), "58766555d4"),
        ];
        for (collisions, want) in cases {
            assert_eq!(
                controller_revision_hash(&template, collisions),
                want,
                "{collisions:?}"
            );
        }
        assert_eq!(fnv32(b""), 0x811c_9dc5);
        assert_eq!(fnv32(b"a"), 0x050c_5d7e);
        assert_eq!(
            go_json(&json!({"b": "<&>", "a": 1})),
            r#"{"a":1,"b":"\u003c\u0026\u003e"}"#
        );
    }

    #[test]
    fn fnv_matches_reference_vectors() {
        assert_eq!(fnv32a(b""), 0x811c9dc5);
        assert_eq!(fnv32a(b"a"), 0xe40c292c);
        assert_eq!(fnv32a(b"foobar"), 0xbf9cf968);
    }

    #[test]
    fn percentages_round_as_upstream() {
        let cases = [
            (json!("25%"), 10, true, 3),
            (json!("25%"), 10, false, 2),
            (json!("25%"), 1, true, 1),
            (json!("25%"), 1, false, 0),
            (json!(2), 10, true, 2),
            (json!("0%"), 10, true, 0),
            (json!("100%"), 3, false, 3),
            (json!("3"), 10, false, 3),
        ];
        for (value, total, up, expected) in cases {
            assert_eq!(
                scaled_value(Some(&value), "25%", total, up),
                expected,
                "{value} of {total}"
            );
        }
        assert_eq!(scaled_value(None, "25%", 4, true), 1);
    }

    #[test]
    fn fenceposts_never_both_zero() {
        let cases = [
            (json!({"maxSurge": 1, "maxUnavailable": 0}), 3, (1, 0)),
            (json!({"maxSurge": 0, "maxUnavailable": 0}), 3, (0, 1)),
            (json!({}), 4, (1, 1)),
            (json!({}), 1, (1, 0)),
            (
                json!({"maxSurge": "50%", "maxUnavailable": "50%"}),
                3,
                (2, 1),
            ),
        ];
        for (rolling, desired, expected) in cases {
            assert_eq!(fenceposts(Some(&rolling), desired), expected, "{rolling}");
        }
    }

    #[test]
    fn rolling_steps() {
        // desired, surge, all, new -> new replicas
        let cases = [
            (3, 1, 3, 0, 1),
            (3, 1, 4, 1, 1),
            (3, 1, 3, 1, 2),
            (3, 0, 3, 0, 0),
            (3, 2, 3, 2, 3),
            (5, 1, 1, 1, 5),
        ];
        for (desired, surge, all, new, expected) in cases {
            assert_eq!(new_rs_replicas(desired, surge, all, new), expected);
        }
        // maxUnavailable 0: no old pod goes before a new one is available.
        assert_eq!(old_scale_down_budget(3, 0, 4, 1, 0), 0);
        assert_eq!(old_scale_down_budget(3, 0, 4, 1, 1), 1);
        assert_eq!(old_scale_down_budget(4, 1, 4, 0, 0), 1);
        assert_eq!(available_scale_down(3, 0, 4), 1);
        assert_eq!(available_scale_down(3, 0, 3), 0);
        assert_eq!(available_scale_down(4, 1, 4), 1);
    }
}
