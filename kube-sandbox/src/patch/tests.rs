use super::*;
use serde_json::json;

const T0: &str = "2025-01-01T00:00:00Z";
const T1: &str = "2025-01-01T00:01:00Z";

#[test]
fn merge_patch_rfc7386_examples() {
    // RFC 7386 appendix A: (original, patch, result)
    let cases = [
        (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (json!({"a": "b"}), json!({"a": null}), json!({})),
        (
            json!({"a": "b", "b": "c"}),
            json!({"a": null}),
            json!({"b": "c"}),
        ),
        (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
        (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
        (
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
        (json!({"a": "b"}), json!(["c"]), json!(["c"])),
        (json!({"a": "foo"}), json!(null), json!(null)),
        (json!({"a": "foo"}), json!("bar"), json!("bar")),
        (
            json!({"e": null}),
            json!({"a": 1}),
            json!({"e": null, "a": 1}),
        ),
        (
            json!([1, 2]),
            json!({"a": "b", "c": null}),
            json!({"a": "b"}),
        ),
        (
            json!({}),
            json!({"a": {"bb": {"ccc": null}}}),
            json!({"a": {"bb": {}}}),
        ),
    ];
    for (original, patch, expected) in cases {
        let mut target = original.clone();
        merge_patch(&mut target, &patch);
        assert_eq!(target, expected, "{original} + {patch}");
    }
}

#[test]
fn json_patch_operations_and_failures() {
    let doc = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 1, "list": [1, 2]}});
    let ok_cases = [
        (
            json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]),
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 3, "list": [1, 2]}}),
        ),
        (
            json!([{"op": "add", "path": "/spec/list/-", "value": 3}, {"op": "remove", "path": "/metadata/labels/x"}]),
            json!({"metadata": {"name": "a", "labels": {}}, "spec": {"replicas": 1, "list": [1, 2, 3]}}),
        ),
        (
            json!([{"op": "test", "path": "/metadata/name", "value": "a"}, {"op": "copy", "from": "/metadata/name", "path": "/spec/name"}]),
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 1, "list": [1, 2], "name": "a"}}),
        ),
    ];
    for (patch, expected) in ok_cases {
        assert_eq!(json_patch(&doc, &patch).unwrap(), expected, "{patch}");
    }
    let err = json_patch(
        &doc,
        &json!([{"op": "test", "path": "/spec/replicas", "value": 2}]),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::TestFailed {
            path: "/spec/replicas".into()
        }
    );
    assert_eq!(err.status_code(), 422);
    let err = json_patch(&doc, &json!([{"op": "remove", "path": "/spec/missing"}])).unwrap_err();
    assert!(matches!(err, PatchError::Unprocessable(_)), "{err:?}");
    let err = json_patch(&doc, &json!({"op": "add"})).unwrap_err();
    assert!(matches!(err, PatchError::BadRequest(_)), "{err:?}");
    assert_eq!(err.status_code(), 400);
}

fn pod(containers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}})
}

fn containers_of(v: &Value) -> Value {
    v.pointer("/spec/containers")
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn strategic_merge_on_pod_containers() {
    let original = pod(json!([
        {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
        {"name": "b", "image": "b:1"}
    ]));
    // (patch containers, expected containers)
    let cases = [
        // Merge by name: only the image of "a" changes, "b" stays.
        (
            json!([{"name": "a", "image": "a:2"}]),
            json!([
                {"name": "a", "image": "a:2", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                {"name": "b", "image": "b:1"}
            ]),
        ),
        // A new item goes before the server-only items, as upstream orders it.
        (
            json!([{"name": "c", "image": "c:1"}]),
            json!([
                {"name": "c", "image": "c:1"},
                {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                {"name": "b", "image": "b:1"}
            ]),
        ),
        // env merges by name; `$patch: delete` removes one entry; null deletes a field.
        (
            json!([{"name": "a", "image": null, "env": [{"name": "X", "$patch": "delete"}, {"name": "Z", "value": "3"}]}]),
            json!([
                {"name": "a", "env": [{"name": "Z", "value": "3"}, {"name": "Y", "value": "2"}]},
                {"name": "b", "image": "b:1"}
            ]),
        ),
        // `$patch: delete` on a container.
        (
            json!([{"name": "b", "$patch": "delete"}]),
            json!([{"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]),
        ),
        // `$patch: replace` element: the rest of the patch list is the whole list.
        (
            json!([{"$patch": "replace"}, {"name": "d", "image": "d:1"}]),
            json!([{"name": "d", "image": "d:1"}]),
        ),
    ];
    for (patch_containers, expected) in cases {
        let patch = json!({"spec": {"containers": patch_containers}});
        let out = strategic_merge_patch(&original, &patch, "Pod").unwrap();
        assert_eq!(containers_of(&out), expected, "{patch}");
    }
}

#[test]
fn strategic_merge_set_element_order() {
    let original = pod(json!([{"name": "a"}, {"name": "b"}]));
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "c"}, {"name": "a"}],
        "containers": [{"name": "c", "image": "c:1"}]
    }});
    let out = strategic_merge_patch(&original, &patch, "Pod").unwrap();
    assert_eq!(
        containers_of(&out),
        json!([{"name": "b"}, {"name": "c", "image": "c:1"}, {"name": "a"}])
    );
    let bad = json!({"spec": {
        "$setElementOrder/containers": [{"name": "a"}],
        "containers": [{"name": "c"}]
    }});
    let err = strategic_merge_patch(&original, &bad, "Pod").unwrap_err();
    assert!(
        err.to_string().starts_with("The order in patch list"),
        "{err}"
    );
}

#[test]
fn strategic_merge_map_directives() {
    let original = json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "1", "b": "2"}},
        "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    // (patch, expected)
    let cases = [
        (
            json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
            json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {"c": "3"}},
                "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
        ),
        (
            json!({"metadata": {"labels": {"$patch": "delete"}}}),
            json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {}},
                "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
        ),
        (
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
            json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "1", "b": "2"}},
                "spec": {"strategy": {"type": "Recreate"}}}),
        ),
        (
            json!({"metadata": {"labels": {"a": null, "new": {"x": null, "y": "z"}}}}),
            json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {"b": "2", "new": {"y": "z"}}},
                "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
        ),
    ];
    for (patch, expected) in cases {
        assert_eq!(
            strategic_merge_patch(&original, &patch, "Deployment").unwrap(),
            expected,
            "{patch}"
        );
    }
    let err = strategic_merge_patch(
        &original,
        &json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}}),
        "Deployment",
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::BadRequest("invalid patch format of retainKeys".into())
    );
    let err = strategic_merge_patch(
        &original,
        &json!({"metadata": {"labels": {"$patch": "merge"}}}),
        "Deployment",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("unknown patch type: merge in map"),
        "{err}"
    );
    assert_eq!(err.status_code(), 500);
    let err = strategic_merge_patch(
        &pod(json!([{"name": "a"}])),
        &json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}),
        "Pod",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "merging lists cannot yet be specified in the patch"
    );
}

#[test]
fn strategic_merge_primitive_lists() {
    let original =
        json!({"kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["a", "b"]}});
    let cases = [
        (
            json!({"metadata": {"finalizers": ["b", "c"]}}),
            json!(["a", "b", "c"]),
        ),
        (
            json!({"metadata": {"finalizers": ["c"]}}),
            json!(["c", "a", "b"]),
        ),
        (
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
            json!(["b"]),
        ),
        (
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "$setElementOrder/finalizers": ["b", "c"], "finalizers": ["c"]}}),
            json!(["b", "c"]),
        ),
        (json!({"metadata": {"finalizers": null}}), Value::Null),
    ];
    for (patch, expected) in cases {
        let out = strategic_merge_patch(&original, &patch, "ConfigMap").unwrap();
        assert_eq!(
            out.pointer("/metadata/finalizers")
                .cloned()
                .unwrap_or(Value::Null),
            expected,
            "{patch}"
        );
    }
    let err = strategic_merge_patch(
        &original,
        &json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
        "ConfigMap",
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::BadRequest("invalid patch format of primitive list".into())
    );
}

#[test]
fn strategic_merge_list_strategies_per_kind() {
    // (kind, original, patch, pointer, expected)
    let cases = [
        // Tolerations have no merge key: replaced whole.
        (
            "Pod",
            json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}}),
            json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists", "value": null}]}}),
            "/spec/tolerations",
            json!([{"key": "b", "operator": "Exists"}]),
        ),
        // Node taints are atomic for strategic merge upstream as well.
        (
            "Node",
            json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}),
            json!({"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}}),
            "/spec/taints",
            json!([{"key": "b", "effect": "NoExecute"}]),
        ),
        // Conditions merge by type.
        (
            "Pod",
            json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}}),
            json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            "/status/conditions",
            json!([{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]),
        ),
        (
            "Node",
            json!({"status": {"conditions": [{"type": "Ready", "status": "True"}], "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}),
            json!({"status": {"addresses": [{"type": "Hostname", "address": "n1"}]}}),
            "/status/addresses",
            json!([{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.0.0.1"}]),
        ),
        // Container statuses are atomic.
        (
            "Pod",
            json!({"status": {"containerStatuses": [{"name": "a", "ready": true}, {"name": "b", "ready": true}]}}),
            json!({"status": {"containerStatuses": [{"name": "a", "ready": false}]}}),
            "/status/containerStatuses",
            json!([{"name": "a", "ready": false}]),
        ),
        // Pod templates of workloads.
        (
            "Deployment",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b"}], "volumes": [{"name": "v", "emptyDir": {}}]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}}),
            "/spec/template/spec/containers",
            json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}]),
        ),
        (
            "CronJob",
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}}}}}}),
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}}}}}}),
            "/spec/jobTemplate/spec/template/spec/containers",
            json!([{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]),
        ),
        (
            "Service",
            json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}),
            json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
            "/spec/ports",
            json!([{"port": 80, "targetPort": 9090}, {"port": 443}]),
        ),
        (
            "ConfigMap",
            json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}}),
            json!({"metadata": {"ownerReferences": [{"uid": "2", "$patch": "delete"}]}}),
            "/metadata/ownerReferences",
            json!([{"uid": "1", "name": "a"}]),
        ),
        // A list the original lacks is cleaned of directives on the way in.
        (
            "Pod",
            json!({"spec": {}}),
            json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "c", "optional": null}}, {"name": "w", "$patch": "delete"}]}}),
            "/spec/volumes",
            json!([{"name": "v", "configMap": {"name": "c"}}]),
        ),
    ];
    for (kind, original, patch, pointer, expected) in cases {
        let out = strategic_merge_patch(&original, &patch, kind).unwrap();
        assert_eq!(
            out.pointer(pointer).cloned().unwrap_or(Value::Null),
            expected,
            "{kind} {patch}"
        );
    }
}

#[test]
fn strategic_merge_errors_and_support() {
    assert!(supports_strategic_merge("Pod"));
    assert!(supports_strategic_merge("Deployment"));
    assert!(!supports_strategic_merge("Widget"));
    let err = strategic_merge_patch(&json!({}), &json!({}), "Widget").unwrap_err();
    assert_eq!(err.status_code(), 415);
    let err = strategic_merge_patch(&json!({}), &json!([1]), "Pod").unwrap_err();
    assert_eq!(err.status_code(), 400);
    let err = strategic_merge_patch(
        &pod(json!([{"name": "a"}])),
        &json!({"spec": {"containers": [{"image": "x"}]}}),
        "Pod",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("does not contain declared merge key: name"),
        "{err}"
    );
    let err = strategic_merge_patch(
        &pod(json!([{"name": "a"}])),
        &json!({"spec": {"containers": [["x"]]}}),
        "Pod",
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::Unprocessable("lists of lists are not supported".into())
    );
    let err = strategic_merge_patch(
        &pod(json!([{"name": "a"}])),
        &json!({"spec": {"containers": ["x"]}}),
        "Pod",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("list element types are not identical"),
        "{err}"
    );
}

fn deployment(replicas: Option<u32>, containers: Value) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {"containers": containers}}}
    });
    if let Some(r) = replicas {
        d["spec"]["replicas"] = json!(r);
    }
    d
}

fn entry<'v>(obj: &'v Value, manager: &str, operation: &str) -> Option<&'v Value> {
    obj.pointer("/metadata/managedFields")?
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

/// The managers of an object's managedFields entries, in their order.
fn managers(obj: &Value) -> Vec<&str> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e["manager"].as_str())
        .collect()
}

fn owns(obj: &Value, manager: &str, operation: &str, pointer: &str) -> bool {
    entry(obj, manager, operation)
        .and_then(|e| e["fieldsV1"].pointer(pointer))
        .is_some()
}

#[test]
fn apply_create_records_fields_v1() {
    let mut config = deployment(
        Some(2),
        json!([{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]),
    );
    config["metadata"]["resourceVersion"] = json!("7");
    config["metadata"]["uid"] = json!("not-mine");
    config["metadata"]["finalizers"] = json!(["example.com/f"]);
    let out = server_side_apply(None, &config, "Deployment", "tool", false, T0).unwrap();
    assert_eq!(out["spec"]["replicas"], json!(2));
    assert!(out.pointer("/metadata/resourceVersion").is_none());
    assert!(out.pointer("/metadata/uid").is_none());
    let managed = out["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(managed.len(), 1);
    assert_eq!(
        managed[0],
        json!({
            "manager": "tool",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:finalizers": {"v:\"example.com/f\"": {}}, "f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                        ".": {},
                        "f:image": {},
                        "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                    }}}}
                }
            }
        })
    );
}

#[test]
fn apply_by_same_manager_removes_dropped_fields() {
    let first = deployment(
        Some(2),
        json!([{"name": "app", "image": "nginx"}, {"name": "sidecar", "image": "envoy"}]),
    );
    let live = server_side_apply(None, &first, "tool", "tool", false, T0);
    assert!(
        matches!(live, Err(ApplyError::InvalidConfig(_))),
        "kind must match"
    );
    let live = server_side_apply(None, &first, "Deployment", "tool", false, T0).unwrap();
    let second = deployment(None, json!([{"name": "app", "image": "nginx"}]));
    let out = server_side_apply(Some(&live), &second, "Deployment", "tool", false, T1).unwrap();
    assert!(out.pointer("/spec/replicas").is_none(), "{out}");
    assert_eq!(
        out.pointer("/spec/template/spec/containers").unwrap(),
        &json!([{"name": "app", "image": "nginx"}])
    );
    assert!(!owns(&out, "tool", "Apply", "/f:spec/f:replicas"));
    assert_eq!(entry(&out, "tool", "Apply").unwrap()["time"], json!(T1));
    // Re-applying the same configuration changes nothing, not even the time.
    let again = server_side_apply(
        Some(&out),
        &second,
        "Deployment",
        "tool",
        false,
        "2030-01-01T00:00:00Z",
    )
    .unwrap();
    assert_eq!(again, out);
}

#[test]
fn apply_prunes_set_items_and_emptied_lists() {
    let with = |finalizers: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": finalizers}, "data": {"k": "v"}});
    let live =
        server_side_apply(None, &with(json!(["a", "b"])), "ConfigMap", "m", false, T0).unwrap();
    let out = server_side_apply(
        Some(&live),
        &with(json!(["b"])),
        "ConfigMap",
        "m",
        false,
        T1,
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
    let out = server_side_apply(Some(&out), &config, "ConfigMap", "m", false, T1).unwrap();
    assert!(out.pointer("/metadata/finalizers").is_none(), "{out}");
    assert_eq!(out["data"], json!({"k": "v"}));
}

#[test]
fn apply_keeps_fields_another_manager_owns() {
    let config = deployment(Some(2), json!([{"name": "app", "image": "nginx"}]));
    let live = server_side_apply(None, &config, "Deployment", "a", false, T0).unwrap();
    // Manager b applies the same replicas: shared ownership, no conflict.
    let b_config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}});
    let live = server_side_apply(Some(&live), &b_config, "Deployment", "b", false, T1).unwrap();
    assert!(owns(&live, "a", "Apply", "/f:spec/f:replicas"));
    assert!(owns(&live, "b", "Apply", "/f:spec/f:replicas"));
    // a stops applying replicas: b still owns them, so they stay.
    let out = server_side_apply(
        Some(&live),
        &deployment(None, json!([{"name": "app", "image": "nginx"}])),
        "Deployment",
        "a",
        false,
        T1,
    )
    .unwrap();
    assert_eq!(out["spec"]["replicas"], json!(2));
    assert!(!owns(&out, "a", "Apply", "/f:spec/f:replicas"));
    assert!(owns(&out, "b", "Apply", "/f:spec/f:replicas"));
}

#[test]
fn apply_conflicts_between_managers_and_force() {
    let config = deployment(Some(2), json!([{"name": "app", "image": "nginx:1"}]));
    let live = server_side_apply(None, &config, "Deployment", "a", false, T0).unwrap();
    let b_config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}});
    let err = server_side_apply(Some(&live), &b_config, "Deployment", "b", false, T1).unwrap_err();
    let ApplyError::Conflict(conflicts) = &err else {
        panic!("expected a conflict, got {err:?}")
    };
    let fields: Vec<&str> = conflicts.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            ".spec.replicas",
            ".spec.template.spec.containers[name=\"app\"].image"
        ]
    );
    assert!(
        conflicts
            .iter()
            .all(|c| c.manager == "a" && c.message() == "conflict with \"a\"")
    );
    assert_eq!(err.status_code(), 409);
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"app\"].image"
    );
    let one = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}});
    let err = server_side_apply(Some(&live), &one, "Deployment", "b", false, T1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
    );

    let forced = server_side_apply(Some(&live), &b_config, "Deployment", "b", true, T1).unwrap();
    assert_eq!(forced["spec"]["replicas"], json!(3));
    assert_eq!(
        forced
            .pointer("/spec/template/spec/containers/0/image")
            .unwrap(),
        "nginx:2"
    );
    assert!(!owns(&forced, "a", "Apply", "/f:spec/f:replicas"));
    assert!(owns(&forced, "b", "Apply", "/f:spec/f:replicas"));
    assert!(owns(&forced, "a", "Apply", "/f:metadata/f:labels/f:app"));
    // a gave up replicas; applying its old config without them leaves b's value alone.
    let out = server_side_apply(
        Some(&forced),
        &deployment(None, json!([])),
        "Deployment",
        "a",
        false,
        T1,
    )
    .unwrap();
    assert_eq!(out["spec"]["replicas"], json!(3));
    assert_eq!(
        out.pointer("/spec/template/spec/containers").unwrap(),
        &json!([{"name": "app", "image": "nginx:2"}])
    );
}

#[test]
fn apply_merges_keyed_lists_per_manager() {
    let a = deployment(Some(1), json!([{"name": "app", "image": "nginx"}]));
    let live = server_side_apply(None, &a, "Deployment", "a", false, T0).unwrap();
    let b = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "envoy"}]}}}});
    let live = server_side_apply(Some(&live), &b, "Deployment", "b", false, T1).unwrap();
    assert_eq!(
        live.pointer("/spec/template/spec/containers").unwrap(),
        &json!([{"name": "app", "image": "nginx"}, {"name": "proxy", "image": "envoy"}])
    );
    // a drops its container: only b's stays.
    let out = server_side_apply(
        Some(&live),
        &deployment(Some(1), json!([])),
        "Deployment",
        "a",
        false,
        T1,
    )
    .unwrap();
    assert_eq!(
        out.pointer("/spec/template/spec/containers").unwrap(),
        &json!([{"name": "proxy", "image": "envoy"}])
    );
}

#[test]
fn apply_conflicts_with_updaters_and_untracked_objects() {
    let mut created = deployment(Some(1), json!([{"name": "app", "image": "nginx"}]));
    record_update(None, &mut created, "kubectl-create", "apps/v1", T0);
    let e = entry(&created, "kubectl-create", "Update").unwrap();
    assert_eq!(e["apiVersion"], json!("apps/v1"));
    assert_eq!(
        e["fieldsV1"]["f:metadata"]["f:labels"],
        json!({".": {}, "f:app": {}})
    );
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5}});
    let err =
        server_side_apply(Some(&created), &config, "Deployment", "tool", false, T1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-create\" using apps/v1: .spec.replicas"
    );

    let untracked = deployment(Some(1), json!([]));
    let err =
        server_side_apply(Some(&untracked), &config, "Deployment", "tool", false, T1).unwrap_err();
    let ApplyError::Conflict(c) = err else {
        panic!("expected a conflict")
    };
    assert_eq!(c[0].description, "\"before-first-apply\" using apps/v1");
}

#[test]
fn apply_custom_resources_and_invalid_configs() {
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"items": [{"name": "a"}], "size": {"cpu": 1}}});
    let out = server_side_apply(None, &widget, "Widget", "ctl", false, T0).unwrap();
    assert_eq!(
        entry(&out, "ctl", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {"f:items": {}, "f:size": {"f:cpu": {}}}})
    );
    let merged = server_side_apply(
        Some(&out),
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"items": [{"name": "b"}], "size": {"cpu": 1}}}),
        "Widget",
        "ctl",
        false,
        T1,
    )
    .unwrap();
    assert_eq!(merged["spec"]["items"], json!([{"name": "b"}]));

    let no_name = deployment(None, json!([{"image": "nginx"}]));
    let err = server_side_apply(None, &no_name, "Deployment", "tool", false, T0).unwrap_err();
    assert!(
        err.to_string().contains("omits key field \"name\""),
        "{err}"
    );
    assert_eq!(err.status_code(), 400);
    let dup = deployment(None, json!([{"name": "a"}, {"name": "a"}]));
    let err = server_side_apply(None, &dup, "Deployment", "tool", false, T0).unwrap_err();
    assert!(
        err.to_string().starts_with("duplicate entries for key"),
        "{err}"
    );
    assert_eq!(
        server_side_apply(None, &widget, "Widget", "", false, T0).unwrap_err(),
        ApplyError::MissingFieldManager
    );
    let err = server_side_apply(None, &json!({"kind": "Widget"}), "Widget", "ctl", false, T0)
        .unwrap_err();
    assert!(matches!(err, ApplyError::InvalidConfig(_)));
}

#[test]
fn record_update_moves_ownership_and_resets() {
    let config = deployment(Some(2), json!([{"name": "app", "image": "nginx"}]));
    let live = server_side_apply(None, &config, "Deployment", "tool", false, T0).unwrap();
    // A controller scales the deployment and writes status.
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(4);
    scaled["status"] =
        json!({"replicas": 4, "conditions": [{"type": "Available", "status": "True"}]});
    record_update(Some(&live), &mut scaled, "hpa", "apps/v1", T1);
    assert!(!owns(&scaled, "tool", "Apply", "/f:spec/f:replicas"));
    assert!(owns(&scaled, "hpa", "Update", "/f:spec/f:replicas"));
    assert_eq!(
        entry(&scaled, "hpa", "Update").unwrap()["fieldsV1"]["f:status"],
        json!({"f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}})
    );
    assert_eq!(entry(&scaled, "hpa", "Update").unwrap()["time"], json!(T1));
    // Applying replicas again now conflicts with the updater.
    let err = server_side_apply(
        Some(&scaled),
        &deployment(Some(3), json!([{"name": "app", "image": "nginx"}])),
        "Deployment",
        "tool",
        false,
        T1,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"hpa\" using apps/v1: .spec.replicas"
    );
    // An update that removes a field takes it away from everyone.
    let mut unlabeled = scaled.clone();
    unlabeled["metadata"]["labels"] = json!({});
    record_update(Some(&scaled), &mut unlabeled, "kubectl-edit", "apps/v1", T1);
    assert!(!owns(
        &unlabeled,
        "tool",
        "Apply",
        "/f:metadata/f:labels/f:app"
    ));
    // An update that changes nothing records nothing.
    let mut same = unlabeled.clone();
    record_update(Some(&unlabeled), &mut same, "noop", "apps/v1", T1);
    assert!(entry(&same, "noop", "Update").is_none());
    // Sending managedFields: [] (or [{}]) clears them.
    for reset in [json!([]), json!([{}])] {
        let mut cleared = unlabeled.clone();
        cleared["metadata"]["managedFields"] = reset;
        record_update(Some(&unlabeled), &mut cleared, "kubectl", "apps/v1", T1);
        assert!(cleared.pointer("/metadata/managedFields").is_none());
    }
}

#[test]
fn record_update_on_create_lists_every_field() {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "p", "namespace": "ns", "labels": { "app": "web" },
            "finalizers": ["a/b"] },
        "spec": {
            "containers": [{ "name": "app", "image": "nginx", "args": ["-x", "-y"],
                "ports": [{ "containerPort": 80 }],
                "env": [{ "name": "A", "value": "1" }],
                "resources": {} }],
            "nodeName": null,
        },
    });
    record_update(None, &mut pod, "kubectl", "v1", T0);
    let entry = entry(&pod, "kubectl", "Update").unwrap();
    assert_eq!(
        entry["fieldsV1"],
        json!({
            "f:metadata": {
                "f:finalizers": { ".": {}, "v:\"a/b\"": {} },
                "f:labels": { ".": {}, "f:app": {} },
            },
            // `containers` is in the zero PodSpec (no `omitempty`): no `.` of its own.
            "f:spec": { "f:containers": { "k:{\"name\":\"app\"}": {
                ".": {}, "f:args": {}, "f:image": {}, "f:name": {},
                "f:env": { ".": {}, "k:{\"name\":\"A\"}": { ".": {}, "f:name": {}, "f:value": {} } },
                "f:ports": { ".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                    ".": {}, "f:containerPort": {} } },
                "f:resources": {},
            } } },
        })
    );
    assert_eq!(entry["time"], json!(T0));
}

#[test]
fn updates_keep_the_entries_they_do_not_touch() {
    let entry_a = json!({"manager": "a", "operation": "Update", "apiVersion": "v1",
        "time": T0, "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:x": {}, "f:y": {}}}});
    let entry_b = json!({"manager": "b", "operation": "Update", "apiVersion": "v1",
        "time": T0, "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}});
    let live = json!({"apiVersion": "v1", "kind": "Widget",
        "metadata": {"name": "w", "managedFields": [entry_a.clone(), entry_b]},
        "spec": {"x": 1, "y": 2}, "status": {"phase": "A"}});

    // "b" changes its own field: "a" is kept as written, "b" gets the new time.
    let mut next = live.clone();
    next["status"]["phase"] = json!("B");
    record_update(Some(&live), &mut next, "b", "v1", T1);
    assert_eq!(entry(&next, "a", "Update").unwrap(), &entry_a);
    assert_eq!(entry(&next, "b", "Update").unwrap()["time"], json!(T1));

    // "b" changes a field "a" owns: it moves to "b"; "a" keeps the rest.
    let mut moved = next.clone();
    moved["spec"]["x"] = json!(5);
    record_update(Some(&next), &mut moved, "b", "v1", T1);
    assert!(!owns(&moved, "a", "Update", "/f:spec/f:x"));
    assert!(owns(&moved, "a", "Update", "/f:spec/f:y"));
    assert!(owns(&moved, "b", "Update", "/f:spec/f:x"));

    // "c" removes the last field "a" owns: the emptied entry goes away.
    let mut removed = moved.clone();
    removed["spec"].as_object_mut().unwrap().remove("y");
    record_update(Some(&moved), &mut removed, "c", "v1", T1);
    assert!(entry(&removed, "a", "Update").is_none());
    assert_eq!(managers(&removed), ["b"]);

    // Entries that cannot be read are dropped, as before.
    let mut odd = live.clone();
    odd["metadata"]["managedFields"] = json!([entry_a.clone(),
        {"manager": "z", "operation": "Other", "fieldsV1": {}},
        {"manager": "y", "operation": "Update", "fieldsV1": {"f:spec": 1}}]);
    let mut written = odd.clone();
    written["status"]["phase"] = json!("C");
    record_update(Some(&odd), &mut written, "b", "v1", T1);
    assert_eq!(managers(&written), ["a", "b"]);
}

#[test]
fn status_applies_have_their_own_entry() {
    let widget = |body: Value| {
        let mut w =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        if let (Value::Object(w), Value::Object(body)) = (&mut w, body) {
            w.extend(body);
        }
        w
    };
    let live = server_side_apply(
        None,
        &widget(json!({"spec": {"size": 1}})),
        "Widget",
        "ctrl",
        false,
        T0,
    )
    .unwrap();
    let status = widget(json!({"status": {"ready": true}}));
    let out =
        server_side_apply_subresource(Some(&live), &status, "Widget", "ctrl", "status", false, T1)
            .unwrap();
    assert_eq!(
        out["spec"]["size"],
        json!(1),
        "the main-resource apply is not pruned"
    );
    assert_eq!(out["status"]["ready"], json!(true));
    let status_entry = out["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["subresource"] == "status")
        .unwrap();
    assert_eq!(
        status_entry["fieldsV1"],
        json!({"f:status": {"f:ready": {}}})
    );
    let err = server_side_apply_subresource(
        Some(&out),
        &widget(json!({"status": {"ready": false}})),
        "Widget",
        "other",
        "status",
        false,
        T1,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"ctrl\" with subresource \"status\": .status.ready"
    );
    let mut updated = out.clone();
    updated["status"]["ready"] = json!(false);
    record_update_subresource(
        Some(&out),
        &mut updated,
        "kubelet",
        "status",
        "example.com/v1",
        T1,
    );
    assert!(owns(&updated, "kubelet", "Update", "/f:status/f:ready"));
    assert_eq!(
        entry(&updated, "kubelet", "Update").unwrap()["subresource"],
        json!("status")
    );
}

#[test]
fn managed_entries_are_sorted_and_field_sets_round_trip() {
    let fields = json!({
        "f:metadata": {"f:finalizers": {".": {}, "v:\"a\"": {}}},
        "f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}, "f:type": {}}
    });
    let set = FieldSet::from_json(&fields).unwrap();
    assert_eq!(set.to_json(), fields);
    let members: Vec<String> = set.members().iter().map(|p| path_string(p)).collect();
    assert_eq!(
        members,
        vec![
            ".metadata.finalizers",
            ".metadata.finalizers[=\"a\"]",
            ".spec.ports[port=80,protocol=\"TCP\"]",
            ".spec.ports[port=80,protocol=\"TCP\"].port",
            ".spec.type"
        ]
    );
    let mut svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "ClusterIP"}});
    record_update(None, &mut svc, "z-creator", "v1", T1);
    let applied = server_side_apply(
        Some(&svc),
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
        "Service",
        "a-applier",
        false,
        T0,
    )
    .unwrap();
    let order: Vec<(&str, &str)> = applied["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap(),
                e["operation"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(order, vec![("a-applier", "Apply"), ("z-creator", "Update")]);
    assert!(owns(
        &applied,
        "a-applier",
        "Apply",
        "/f:spec/f:ports/k:{\"port\":80,\"protocol\":\"TCP\"}/f:port"
    ));
}

#[test]
fn a_test_of_null_passes_on_an_absent_key_as_kube_apiserver_does() {
    // What kube-runtime's finalizer helper sends to add the first finalizer.
    let doc = json!({"metadata": {"name": "a", "list": [null, 1]}});
    let add_first = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/f"]}
    ]);
    assert_eq!(
        json_patch(&doc, &add_first).unwrap(),
        json!({"metadata": {"name": "a", "list": [null, 1], "finalizers": ["example.com/f"]}})
    );
    // A null array element passes too; escaped keys are looked up decoded.
    let null_element = json!([{"op": "test", "path": "/metadata/list/0", "value": null}]);
    assert!(json_patch(&doc, &null_element).is_ok());
    let escaped = json!([{"op": "test", "path": "/metadata/a~1b", "value": null}]);
    assert!(json_patch(&doc, &escaped).is_ok());

    // Still failing: a present non-null value, a missing parent, an element out of range.
    for (path, failed_op) in [
        ("/metadata/name", None),
        ("/missing/finalizers", Some(0)),
        ("/metadata/list/5", Some(0)),
        ("/metadata/list/1", None),
    ] {
        let patch = json!([{"op": "test", "path": path, "value": null}]);
        let err = json_patch(&doc, &patch).unwrap_err();
        assert_eq!(err.status_code(), 422, "{path}: {err:?}");
        if let Some(index) = failed_op {
            assert!(
                matches!(&err, PatchError::Unprocessable(m) if m.starts_with(&format!("operation '/{index}'"))),
                "{path}: {err:?}"
            );
        }
    }
    // The index of a failing operation is its place in the whole patch.
    let err = json_patch(
        &doc,
        &json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "remove", "path": "/metadata/missing"}
        ]),
    )
    .unwrap_err();
    assert!(
        matches!(&err, PatchError::Unprocessable(m) if m.starts_with("operation '/1' failed at path '/metadata/missing'")),
        "{err:?}"
    );
}
