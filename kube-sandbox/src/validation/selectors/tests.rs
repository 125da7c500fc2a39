use super::*;
use serde_json::{Map, Value, json};

fn labels(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

#[test]
fn label_selector_matching_table() {
    // (selector, labels, expected match)
    let cases: &[(&str, Value, bool)] = &[
        ("", json!({}), true),
        ("", json!({"a": "b"}), true),
        ("a=b", json!({"a": "b"}), true),
        ("a=b", json!({"a": "c"}), false),
        ("a=b", json!({}), false),
        ("a==b", json!({"a": "b"}), true),
        ("a==b", json!({"a": "bb"}), false),
        ("a!=b", json!({"a": "b"}), false),
        ("a!=b", json!({"a": "c"}), true),
        ("a!=b", json!({}), true),
        ("a in (x,y)", json!({"a": "y"}), true),
        ("a in (x,y)", json!({"a": "z"}), false),
        ("a in (x,y)", json!({}), false),
        ("a notin (x)", json!({"a": "x"}), false),
        ("a notin (x)", json!({"a": "z"}), true),
        ("a notin (x)", json!({}), true),
        ("a", json!({"a": ""}), true),
        ("a", json!({"b": "a"}), false),
        ("!a", json!({"b": "a"}), true),
        ("!a", json!({"a": "x"}), false),
        ("a>3", json!({"a": "4"}), true),
        ("a>3", json!({"a": "3"}), false),
        ("a>3", json!({"a": "four"}), false),
        ("a>3", json!({}), false),
        ("a<3", json!({"a": "-7"}), true),
        ("a<3", json!({"a": "3"}), false),
        ("a=b,c!=d", json!({"a": "b", "c": "e"}), true),
        ("a=b,c!=d", json!({"a": "b", "c": "d"}), false),
        ("  a = b ,\tc  ", json!({"a": "b", "c": "1"}), true),
        ("  a = b ,\tc  ", json!({"a": "b"}), false),
        ("x in (in,notin)", json!({"x": "notin"}), true),
        ("in=notin", json!({"in": "notin"}), true),
        ("a in ()", json!({"a": ""}), true),
        ("a in ()", json!({"a": "x"}), false),
        ("a in (,x)", json!({"a": ""}), true),
        ("a=", json!({"a": ""}), true),
        (
            "example.com/app=web",
            json!({"example.com/app": "web"}),
            true,
        ),
        ("a.b_c-d=E.f_G-1", json!({"a.b_c-d": "E.f_G-1"}), true),
    ];
    for (selector, lbls, expected) in cases {
        let sel = LabelSelector::parse(selector).unwrap();
        let lbls = labels(lbls.clone());
        assert_eq!(
            sel.matches(Some(&lbls)),
            *expected,
            "{selector:?} on {lbls:?}"
        );
    }
}

#[test]
fn missing_labels_map_behaves_like_empty_labels() {
    let cases = [
        ("a!=b", true),
        ("a notin (x)", true),
        ("!a", true),
        ("a", false),
        ("", true),
    ];
    for (selector, expected) in cases {
        let sel = LabelSelector::parse(selector).unwrap();
        assert_eq!(sel.matches(None), expected, "{selector}");
    }
}

#[test]
fn label_selector_errors_use_apiserver_wording() {
    let key_regex = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let value_regex = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    let cases: Vec<(&str, String)> = vec![
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".into()),
        ("a in x", "unable to parse requirement: found 'x' expected: '('".into()),
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'".into()),
        ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'".into()),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
        ("a=b,", "found '', expected: identifier after ','".into()),
        ("a=b,,c", "found ',', expected: identifier after ','".into()),
        ("a=b c", "found 'c', expected: ',' or 'end of string'".into()),
        ("!a=b", "found '=', expected: ',' or 'end of string'".into()),
        ("(a)", "found '(', expected: !, identifier, or 'end of string'".into()),
        ("a=(", "unable to parse requirement: found '(', expected: identifier".into()),
        ("!", "unable to parse requirement: found '', expected: identifier".into()),
        ("-a=b", format!("unable to parse requirement: <nil>: Invalid value: \"-a\": {key_regex}")),
        ("a=b/c", format!("unable to parse requirement: values[0][a]: Invalid value: \"b/c\": {value_regex}")),
        ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
        ("a>-1", format!("unable to parse requirement: values[0][a]: Invalid value: \"-1\": {value_regex}")),
        (
            "a>x/y",
            format!("unable to parse requirement: [values[0]: Invalid value: \"x/y\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][a]: Invalid value: \"x/y\": {value_regex}]"),
        ),
        (
            "Example.com/app",
            "unable to parse requirement: <nil>: Invalid value: \"Example.com/app\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into(),
        ),
        ("/app", "unable to parse requirement: <nil>: Invalid value: \"/app\": prefix part must be non-empty".into()),
        (
            "a/b/c",
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into(),
        ),
    ];
    for (selector, expected) in cases {
        let err = LabelSelector::parse(selector).unwrap_err();
        assert_eq!(err.to_string(), expected, "{selector:?}");
    }
    let long_key = "k".repeat(64);
    let err = LabelSelector::parse(&long_key).unwrap_err().to_string();
    assert!(
        err.ends_with("name part must be no more than 63 bytes"),
        "{err}"
    );
    let long_value = format!("a={}", "v".repeat(64));
    let err = LabelSelector::parse(&long_value).unwrap_err().to_string();
    assert!(
        err.contains("values[0][a]: Invalid value:")
            && err.contains("must be no more than 63 bytes"),
        "{err}"
    );
}

#[test]
fn label_selector_display_is_sorted_and_normalised() {
    let sel = LabelSelector::parse("z notin (b,a), a==x , !m, k>2").unwrap();
    assert_eq!(sel.to_string(), "a==x,k>2,!m,z notin (a,b)");
    assert!(LabelSelector::parse("").unwrap().is_empty());
}

#[test]
fn metav1_label_selectors() {
    let app_web = labels(json!({"app": "web", "tier": "front"}));
    let app_db = labels(json!({"app": "db"}));
    let cases: &[(Value, bool, bool)] = &[
        (json!(null), false, false),
        (json!({}), true, true),
        (json!({"matchLabels": {"app": "web"}}), true, false),
        (
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}),
            true,
            false,
        ),
        (
            json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}),
            false,
            true,
        ),
        (
            json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
            true,
            false,
        ),
        (
            json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
            false,
            true,
        ),
        (
            json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]}),
            false,
            false,
        ),
    ];
    for (selector, web, db) in cases {
        let sel = LabelSelector::from_metav1(selector).unwrap();
        assert_eq!(sel.matches(Some(&app_web)), *web, "{selector} on web");
        assert_eq!(sel.matches(Some(&app_db)), *db, "{selector} on db");
    }
    let err = LabelSelector::from_metav1(
        &json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "\"Gt\" is not a valid label selector operator"
    );
    let err = LabelSelector::from_metav1(
        &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
    );
    let err = LabelSelector::from_metav1(&json!({"matchLabels": {"bad key": "x"}})).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("key: Invalid value: \"bad key\": name part"),
        "{err}"
    );
}

#[test]
fn field_selector_parsing_and_matching() {
    let get = |f: &str| match f {
        "metadata.name" => Some("a,b".to_string()),
        "status.phase" => Some("Running".to_string()),
        "x" => Some("a=b\\c".to_string()),
        _ => None,
    };
    // (selector, expected match)
    let cases = [
        ("", true),
        ("status.phase=Running", true),
        ("status.phase==Running", true),
        ("status.phase!=Running", false),
        ("status.phase=Pending", false),
        ("metadata.name=a\\,b", true),
        ("metadata.name=a\\,b,status.phase=Running", true),
        ("metadata.name=a\\,b,status.phase!=Running", false),
        ("x=a\\=b\\\\c", true),
        ("spec.nodeName=", true),
        ("spec.nodeName!=", false),
        ("spec.nodeName=node-1", false),
        ("spec.nodeName!=node-1", true),
    ];
    for (selector, expected) in cases {
        let sel = FieldSelector::parse(selector).unwrap();
        assert_eq!(sel.matches(get), expected, "{selector:?}");
    }
}

#[test]
fn field_selector_errors_and_accessors() {
    let cases = [
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        (
            "x=a\\q",
            "invalid field selector: invalid escape sequence: \\q",
        ),
        (
            "x=a\\",
            "invalid field selector: invalid escape sequence: \\",
        ),
        (
            "x=a=b",
            "invalid field selector: unescaped character in value: 61",
        ),
        (
            "x!==b",
            "invalid field selector: unescaped character in value: 61",
        ),
    ];
    for (selector, expected) in cases {
        let err = FieldSelector::parse(selector).unwrap_err();
        assert_eq!(err.to_string(), expected, "{selector:?}");
    }
    let sel = FieldSelector::parse("status.phase!=Failed,spec.nodeName=n1").unwrap();
    assert_eq!(
        sel.fields().collect::<Vec<_>>(),
        vec!["spec.nodeName", "status.phase"]
    );
    assert_eq!(sel.requires_exact_match("spec.nodeName"), Some("n1"));
    assert_eq!(sel.requires_exact_match("status.phase"), None);
    assert_eq!(sel.to_string(), "spec.nodeName=n1,status.phase!=Failed");
}

#[test]
fn supported_fields_per_resource() {
    let cases = [
        ("pods", "spec.nodeName", true),
        ("pods", "spec.host", true),
        ("pods", "status.podIP", true),
        ("pods", "spec.containers", false),
        ("events", "involvedObject.uid", true),
        ("events", "reportingComponent", true),
        ("events", "message", false),
        ("secrets", "type", true),
        ("configmaps", "type", false),
        ("nodes", "spec.unschedulable", true),
        ("nodes", "metadata.name", true),
        ("nodes", "metadata.namespace", false),
        ("namespaces", "status.phase", true),
        ("namespaces", "metadata.namespace", false),
        ("persistentvolumeclaims", "metadata.namespace", true),
        ("persistentvolumeclaims", "status.phase", false),
        ("replicasets", "metadata.name", true),
        ("replicasets", "status.replicas", false),
        ("widgets", "metadata.name", true),
        ("widgets", "spec.size", false),
    ];
    for (resource, field, expected) in cases {
        assert_eq!(
            supported_field(resource, field),
            expected,
            "{resource} {field}"
        );
    }
    let sel = FieldSelector::parse("spec.foo=1").unwrap();
    assert_eq!(
        validate_fields("pods", &sel).unwrap_err().to_string(),
        "field label not supported: spec.foo"
    );
    assert_eq!(
        validate_fields("configmaps", &sel).unwrap_err().to_string(),
        "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    assert!(validate_fields("pods", &FieldSelector::parse("spec.nodeName=a").unwrap()).is_ok());
}

#[test]
fn field_values_per_resource() {
    let pod = json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"restartPolicy": "Always", "serviceAccountName": "sa"},
        "status": {"phase": "Running", "podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.1"}]}
    });
    let event = json!({
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "uid": "u1"},
        "reason": "Started", "type": "Normal", "reportingComponent": "kubelet", "source": {}
    });
    let node = json!({"metadata": {"name": "n"}, "spec": {}});
    let cases: Vec<(&str, &Value, &str, Option<&str>)> = vec![
        ("pods", &pod, "metadata.name", Some("p")),
        ("pods", &pod, "metadata.namespace", Some("ns")),
        ("pods", &pod, "spec.nodeName", None),
        ("pods", &pod, "spec.host", None),
        ("pods", &pod, "spec.hostNetwork", Some("false")),
        ("pods", &pod, "spec.restartPolicy", Some("Always")),
        ("pods", &pod, "spec.serviceAccountName", Some("sa")),
        ("pods", &pod, "status.phase", Some("Running")),
        ("pods", &pod, "status.podIP", Some("10.0.0.1")),
        ("pods", &pod, "spec.containers", None),
        ("events", &event, "involvedObject.kind", Some("Pod")),
        ("events", &event, "involvedObject.uid", Some("u1")),
        ("events", &event, "reason", Some("Started")),
        ("events", &event, "type", Some("Normal")),
        ("events", &event, "source", Some("kubelet")),
        ("events", &event, "reportingComponent", Some("kubelet")),
        ("nodes", &node, "spec.unschedulable", Some("false")),
        ("nodes", &node, "metadata.namespace", None),
    ];
    for (resource, obj, field, expected) in cases {
        assert_eq!(
            field_value(resource, obj, field).as_deref(),
            expected,
            "{resource} {field}"
        );
    }
    let secret = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls"});
    assert_eq!(
        field_value("secrets", &secret, "type").as_deref(),
        Some("kubernetes.io/tls")
    );
    let ns = json!({"metadata": {"name": "default"}, "status": {"phase": "Active"}});
    assert_eq!(
        field_value("namespaces", &ns, "status.phase").as_deref(),
        Some("Active")
    );
    let job = json!({"metadata": {"name": "j"}, "status": {"succeeded": 2}});
    assert_eq!(
        field_value("jobs", &job, "status.successful").as_deref(),
        Some("2")
    );
    let cordoned = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
    assert_eq!(
        field_value("nodes", &cordoned, "spec.unschedulable").as_deref(),
        Some("true")
    );
}

#[test]
fn unscheduled_pods_match_empty_node_name() {
    let pods = [
        json!({"metadata": {"name": "a"}, "spec": {}}),
        json!({"metadata": {"name": "b"}, "spec": {"nodeName": "n1"}}),
    ];
    let sel = FieldSelector::parse("spec.nodeName=").unwrap();
    let selected: Vec<&str> = pods
        .iter()
        .filter(|p| sel.matches(|f| field_value("pods", p, f)))
        .filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    assert_eq!(selected, vec!["a"]);
}
