use super::*;
use serde_json::json;

/// Templates whose hash kube v1.36.2's `controller.ComputeHash` computed
/// (`testdata/pod-template-hash/README.md` says how).
fn kube_cases() -> Vec<Value> {
    let text = include_str!("../../../../testdata/pod-template-hash/cases.json");
    match serde_json::from_str(text) {
        Ok(Value::Array(cases)) => cases,
        other => panic!("testdata/pod-template-hash/cases.json is not a list: {other:?}"),
    }
}

fn collision_count(case: &Value) -> Option<u32> {
    case["collisionCount"].as_u64().map(|c| c as u32)
}

#[test]
fn prints_templates_as_go_spew_does_for_kube() {
    let cases = kube_cases();
    assert!(cases.len() >= 7);
    for case in &cases {
        let name = case["case"].as_str().unwrap_or_default();
        let printed = dump_for_hash(&case["defaulted"]).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let want = case["dump"].as_str().unwrap_or_default();
        if printed != want {
            let at = printed
                .bytes()
                .zip(want.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(printed.len().min(want.len()));
            let from = at.saturating_sub(120);
            panic!(
                "{name}: printed form differs at byte {at}\n ours: …{}\n kube: …{}",
                &printed[from..(at + 80).min(printed.len())],
                &want[from..(at + 80).min(want.len())]
            );
        }
    }
}

#[test]
fn hashes_equal_kube_compute_hash() {
    for case in kube_cases() {
        let name = case["case"].as_str().unwrap_or_default();
        let hash = compute_hash(&case["defaulted"], collision_count(&case));
        assert_eq!(hash.as_deref().ok(), case["hash"].as_str(), "{name}");
    }
}

#[test]
fn the_recorded_names() {
    // The ReplicaSet a real kube-apiserver v1.36 made for `kubectl create deployment web
    // --image=nginx` (recorded as web-7887448d46), and the pods of `shop` on the real member of
    // the Karmada v1.19 recording (shop-57f5b57465-*).
    let cases = kube_cases();
    let hash_of = |prefix: &str| {
        let case = cases
            .iter()
            .find(|c| c["case"].as_str().unwrap_or_default().starts_with(prefix))
            .unwrap_or_else(|| panic!("no case {prefix}"));
        compute_hash(&case["defaulted"], collision_count(case)).ok()
    };
    assert_eq!(hash_of("web:").as_deref(), Some("7887448d46"));
    assert_eq!(
        hash_of("shop on the real member").as_deref(),
        Some("57f5b57465")
    );
}

#[test]
fn quantities_decode_as_apimachinery_parses_canonical_strings() {
    // (canonical string, value, scale, cached string, format) as `ParseQuantity` builds them
    // (`k8s.io/apimachinery/pkg/api/resource/quantity.go`): the string is kept only when
    // already canonical in the sense its fast path checks.
    let cases = [
        ("0", 0, 0, "0", "DecimalSI"),
        ("100m", 100, -3, "100m", "DecimalSI"),
        ("1", 1, 0, "1", "DecimalSI"),
        ("2G", 2, 9, "2G", "DecimalSI"),
        ("1Gi", 1 << 30, 0, "1Gi", "BinarySI"),
        ("128Mi", 128 << 20, 0, "", "BinarySI"),
        ("1000", 1000, 0, "", "DecimalSI"),
        ("-5", -5, 0, "-5", "DecimalSI"),
        ("1e3", 1, 3, "1e3", "DecimalExponent"),
    ];
    for (text, value, scale, cached, format) in cases {
        let got = DecodedQuantity::parse_canonical(text);
        assert_eq!(
            got,
            Ok(DecodedQuantity {
                value,
                scale,
                cached: cached.into(),
                format,
            }),
            "{text}"
        );
    }
    // Binary values beyond int64 precision take apimachinery's inf.Dec form.
    assert!(DecodedQuantity::parse_canonical("1Pi").is_err());
}

#[test]
fn absent_and_empty_collections_print_as_protobuf_leaves_them() {
    // Protobuf does not carry empty lists and maps: `[]` and `{}` decode to nil in the
    // controller, so they hash as if absent; an empty struct behind a pointer stays set.
    let bare = json!({"spec": {"containers": [{"name": "c", "image": "i"}]}});
    let empty = json!({"metadata": {"labels": {}}, "spec": {"containers": [
        {"name": "c", "image": "i", "args": [], "env": []}], "volumes": []}});
    assert_eq!(dump_for_hash(&bare), dump_for_hash(&empty));
    let with_context = json!({"spec": {"containers": [{"name": "c", "image": "i"}],
        "securityContext": {}}});
    assert_ne!(dump_for_hash(&bare), dump_for_hash(&with_context));
}

#[test]
fn unprintable_templates_are_reported() {
    let timed = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}});
    assert!(dump_for_hash(&timed).is_err());
    let wrong = json!({"spec": {"containers": "nginx"}});
    assert!(dump_for_hash(&wrong).is_err());
}

#[test]
fn templates_the_sandbox_defaults_hash_as_kube_stores_them() {
    // The raw templates through the sandbox's own create-time defaults, then hashed: the same
    // names kube gives them.
    for case in kube_cases() {
        let name = case["case"].as_str().unwrap_or_default();
        let mut deployment = json!({"metadata": {"name": "d", "uid": "u"},
            "spec": {"template": case["raw"].clone()}});
        crate::apiserver::workload_defaults::apply("apps", "deployments", &mut deployment, true);
        let template = &deployment["spec"]["template"];
        let printed = dump_for_hash(template).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(printed, case["dump"].as_str().unwrap_or_default(), "{name}");
        assert_eq!(
            compute_hash(template, collision_count(&case))
                .ok()
                .as_deref(),
            case["hash"].as_str(),
            "{name}"
        );
    }
}
