//! Table tests of the chart checks, with the cases both charts' tests had.
#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

#[test]
fn object_problems_table() {
    for (doc, want) in [
        (
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}}),
            vec![],
        ),
        (
            json!({"kind": "Service", "metadata": {"name": ""}}),
            vec!["no apiVersion", "no metadata.name"],
        ),
        (
            json!({"apiVersion": "v1", "kind": 3}),
            vec!["no kind", "no metadata.name"],
        ),
        (
            Value::Null,
            vec!["no apiVersion", "no kind", "no metadata.name"],
        ),
    ] {
        assert_eq!(object_problems(&doc), want, "{doc}");
    }
}

#[test]
fn parse_manifests_reads_every_document() {
    let docs =
        parse_manifests("---\n# Source: a\napiVersion: v1\nkind: A\n---\nkind: B\nn: 1\n").unwrap();
    assert_eq!(
        docs,
        vec![
            json!({"apiVersion": "v1", "kind": "A"}),
            json!({"kind": "B", "n": 1})
        ]
    );
    assert!(parse_manifests("kind: [unclosed\n").is_err());
}

#[test]
fn split_args_table() {
    let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    for (args, want) in [
        (
            strings(&["manager", "--leader-elect=true", "--embedded"]),
            Ok(("manager".to_owned(), strings(&["leader-elect", "embedded"]))),
        ),
        (strings(&["syncer"]), Ok(("syncer".to_owned(), vec![]))),
        (strings(&["--flag"]), Err(())),
        (strings(&["manager", "--image", "x:1"]), Err(())),
        (strings(&[]), Err(())),
    ] {
        assert_eq!(split_args(&args).map_err(|_| ()), want, "{args:?}");
    }
}

#[test]
fn flags_in_help_table() {
    let help = "Reconcile bindings (in-process with --embedded)\n\n\
        Usage: kubeocean manager [OPTIONS]\n\nOptions:\n      \
        --namespace <NAMESPACE>\n          Namespace, unless --in-cluster\n      \
        --leader-elect [<LEADER_ELECT>]  Run only while leading\n  \
        -h, --help  Print help (see more with '--help')\n";
    let want: BTreeSet<String> = ["namespace", "leader-elect", "help"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(flags_in_help(help), want);
    assert!(flags_in_help("-- not a flag, ---x").is_empty());
}

#[test]
fn allows_table() {
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str], names: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|s| (*s).to_owned()).collect()),
        resources: Some(resources.iter().map(|s| (*s).to_owned()).collect()),
        verbs: verbs.iter().map(|s| (*s).to_owned()).collect(),
        resource_names: (!names.is_empty())
            .then(|| names.iter().map(|s| (*s).to_owned()).collect()),
        ..PolicyRule::default()
    };
    let rules = [
        rule(&[""], &["pods", "pods/log"], &["get", "list"], &[]),
        rule(&["apps"], &["*"], &["watch"], &[]),
        rule(&["x.io"], &["things"], &["*"], &["one"]),
    ];
    for (group, resource, verb, name, want) in [
        ("", "pods", "get", None, true),
        ("", "pods/log", "list", None, true),
        ("", "pods", "create", None, false),
        ("", "pods/exec", "get", None, false),
        ("apps", "deployments", "watch", None, true),
        ("apps", "deployments", "get", None, false),
        ("x.io", "things", "delete", Some("one"), true),
        ("x.io", "things", "delete", Some("two"), false),
        ("x.io", "things", "delete", None, false),
        ("y.io", "pods", "get", None, false),
    ] {
        assert_eq!(
            allows(&rules, group, resource, verb, name),
            want,
            "{verb} {resource}.{group} {name:?}"
        );
    }
    let expanded = expand(&rules[2]);
    assert_eq!(
        expanded,
        vec![(
            "x.io".into(),
            "things".into(),
            "*".into(),
            Some("one".into())
        )]
    );
}

#[test]
fn deployment_problems_find_unsafe_or_inconsistent_pods() {
    let container = |args: Value, ports: Value, security: Value| {
        json!({"spec": {"template": {"spec": {"containers": [{
            "name": "c", "args": args, "ports": ports, "securityContext": security,
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "probes"}},
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": "probes"}},
        }]}}}})
    };
    let ports = json!([{"name": "metrics", "containerPort": 8080}, {"name": "probes", "containerPort": 8081}]);
    let safe = json!({"runAsNonRoot": true, "readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false});
    let args = json!([
        "manager",
        "--metrics-addr=0.0.0.0:8080",
        "--probe-addr=0.0.0.0:8081"
    ]);
    assert!(deployment_problems(&container(args.clone(), ports.clone(), safe.clone())).is_empty());
    let wrong_port = json!([
        "manager",
        "--metrics-addr=0.0.0.0:9090",
        "--probe-addr=0.0.0.0:8081"
    ]);
    assert_eq!(
        deployment_problems(&container(wrong_port, ports.clone(), safe.clone())).len(),
        1
    );
    let writable = json!({"runAsNonRoot": true, "allowPrivilegeEscalation": false});
    assert_eq!(
        deployment_problems(&container(args, ports, writable)).len(),
        1
    );
}

#[test]
fn split_args_and_flags_in_help_of_another_binary() {
    let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    for (args, want) in [
        (
            strings(&["apiserver", "--listen=0.0.0.0:8443", "--tls-generate-dev"]),
            Ok((
                "apiserver".to_owned(),
                strings(&["listen", "tls-generate-dev"]),
            )),
        ),
        (strings(&["--listen=x"]), Err(())),
        (strings(&["apiserver", "--listen", ":1"]), Err(())),
    ] {
        assert_eq!(split_args(&args).map_err(|_| ()), want, "{args:?}");
    }
    let help = "Options:\n      --listen <ADDR>\n          Listen; see also --external-url\n  \
        -h, --help  Print help\n";
    assert_eq!(
        flags_in_help(help),
        ["listen", "help"].into_iter().map(str::to_owned).collect()
    );
}

#[test]
fn deployment_problems_find_unmounted_files_and_unsafe_pods() {
    let deployment = |args: Value, mounts: Value, volumes: Value, security: Value| {
        json!({"spec": {"template": {"spec": {
            "volumes": volumes,
            "containers": [{
                "name": "c", "args": args, "volumeMounts": mounts, "securityContext": security,
                "ports": [{"name": "metrics", "containerPort": 8080}, {"name": "probes", "containerPort": 8081}],
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "probes"}},
                "readinessProbe": {"httpGet": {"path": "/readyz", "port": "probes"}},
            }],
        }}}})
    };
    let safe = json!({"runAsNonRoot": true, "readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false});
    let args = json!([
        "apiserver",
        "--metrics-addr=0.0.0.0:8080",
        "--probe-addr=0.0.0.0:8081",
        "--token-file=/etc/k/tokens/t"
    ]);
    let mounts = json!([{"name": "tokens", "mountPath": "/etc/k/tokens"}]);
    let volumes = json!([{"name": "tokens", "secret": {"secretName": "s"}}]);
    assert!(
        deployment_problems(&deployment(
            args.clone(),
            mounts.clone(),
            volumes.clone(),
            safe.clone()
        ))
        .is_empty()
    );
    assert_eq!(
        deployment_problems(&deployment(args.clone(), json!([]), volumes, safe.clone())).len(),
        1
    );
    assert_eq!(
        deployment_problems(&deployment(args.clone(), mounts.clone(), json!([]), safe)).len(),
        1
    );
    let root = json!({"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false});
    assert_eq!(
        deployment_problems(&deployment(args, mounts, json!([]), root)).len(),
        2
    );
}

#[test]
fn allows_table_with_object_names() {
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str], names: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|s| (*s).to_owned()).collect()),
        resources: Some(resources.iter().map(|s| (*s).to_owned()).collect()),
        verbs: verbs.iter().map(|s| (*s).to_owned()).collect(),
        resource_names: (!names.is_empty())
            .then(|| names.iter().map(|s| (*s).to_owned()).collect()),
        ..PolicyRule::default()
    };
    let rules = [
        rule(&["kairship.io"], &["instances"], &["get"], &["prod"]),
        rule(&["clusterpedia.io"], &["*"], &["*"], &[]),
    ];
    for (group, resource, verb, name, want) in [
        ("kairship.io", "instances", "get", Some("prod"), true),
        ("kairship.io", "instances", "get", Some("dev"), false),
        ("kairship.io", "instances", "get", None, false),
        ("kairship.io", "instances", "delete", Some("prod"), false),
        ("clusterpedia.io", "resources", "list", None, true),
        ("", "secrets", "get", None, false),
    ] {
        assert_eq!(
            allows(&rules, group, resource, verb, name),
            want,
            "{verb} {resource}.{group} {name:?}"
        );
    }
    assert_eq!(expand(&rules[0]).len(), 1);
}
