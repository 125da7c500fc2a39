//! The scripted kubectl session the kubectl tests run against a sandbox API server, directly or
//! through a proxy in front of one: each step is a function, so a suite can run all of them
//! ([`full`]) or the ones its server supports. Steps panic with kubectl's output when a
//! command does not do what a real cluster would.

use std::time::Duration;

use serde_json::Value;

use super::kubectl::{Kubectl, cells, is_human_duration, reference_json, table_header, table_rows};

/// How long a step may wait for the cluster to settle (rollouts, Jobs, namespace deletion).
pub const SETTLE: Duration = Duration::from_secs(90);

/// Every step, in a fresh namespace `namespace` that is deleted at the end.
pub fn full(k: &Kubectl, namespace: &str) {
    create_kinds(k, namespace);
    apply_documents(k, namespace);
    unknown_field_is_refused(k, namespace);
    invalid_workload_is_refused(k, namespace);
    explain(k);
    tables(k, namespace);
    scale_and_roll_out(k, namespace, "web");
    job_completes(k, namespace);
    logs_and_exec(k, namespace);
    delete_namespace(k, namespace);
}

/// `kubectl create` of a namespace, ConfigMap, Secret, Deployment, Job and Service (kubectl
/// sends these bodies as protobuf).
pub fn create_kinds(k: &Kubectl, namespace: &str) {
    let ns = namespace;
    assert!(k.ok(&["create", "namespace", ns]).contains("created"));
    k.ok(&[
        "-n",
        ns,
        "create",
        "configmap",
        "settings",
        "--from-literal=mode=demo",
        "--from-literal=level=3",
    ]);
    k.ok(&[
        "-n",
        ns,
        "create",
        "secret",
        "generic",
        "credentials",
        "--from-literal=password=s3cret",
    ]);
    k.ok(&[
        "-n",
        ns,
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
        "--port=80",
    ]);
    k.ok(&[
        "-n",
        ns,
        "create",
        "job",
        "once",
        "--image=busybox",
        "--",
        "sh",
        "-c",
        "exit 0",
    ]);
    k.ok(&[
        "-n",
        ns,
        "create",
        "service",
        "clusterip",
        "web",
        "--tcp=80:80",
    ]);
    let data = k.ok(&[
        "-n",
        ns,
        "get",
        "configmap",
        "settings",
        "-o",
        "jsonpath={.data.mode}/{.data.level}",
    ]);
    assert_eq!(data, "demo/3");
    let password = k.ok(&[
        "-n",
        ns,
        "get",
        "secret",
        "credentials",
        "-o",
        "jsonpath={.data.password}",
    ]);
    assert_eq!(password, "czNjcmV0", "base64 of s3cret");
}

const DOCUMENTS: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
data:
  colour: blue
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  labels: {app: api}
spec:
  replicas: 2
  selector:
    matchLabels: {app: api}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: api
        image: nginx:1.27
        ports: [{containerPort: 8080}]
        resources:
          requests: {cpu: 100m, memory: 64Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  selector: {app: api}
  ports: [{port: 80, targetPort: 8080}]
"#;

/// `kubectl apply -f` of a multi-document file, client-side then server-side, and again
/// unchanged.
pub fn apply_documents(k: &Kubectl, namespace: &str) {
    let out = k.ok_with_input(&["-n", namespace, "apply", "-f", "-"], DOCUMENTS);
    for line in [
        "configmap/applied created",
        "deployment.apps/api created",
        "service/api created",
    ] {
        assert!(out.contains(line), "{out}");
    }
    let again = k.ok_with_input(&["-n", namespace, "apply", "-f", "-"], DOCUMENTS);
    assert!(again.contains("configmap/applied unchanged"), "{again}");
    let changed = DOCUMENTS.replace("colour: blue", "colour: green");
    let server_side = k.ok_with_input(
        &[
            "-n",
            namespace,
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &changed,
    );
    assert!(
        server_side.contains("configmap/applied serverside-applied"),
        "{server_side}"
    );
    let colour = k.ok(&[
        "-n",
        namespace,
        "get",
        "configmap",
        "applied",
        "-o",
        "jsonpath={.data.colour}",
    ]);
    assert_eq!(colour, "green");
}

/// A manifest with an unknown field is refused with kubectl's message naming the field, by
/// client-side and by server-side apply.
pub fn unknown_field_is_refused(k: &Kubectl, namespace: &str) {
    let bad = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: bogus
spec:
  bogusField: 1
  selector:
    matchLabels: {app: bogus}
  template:
    metadata:
      labels: {app: bogus}
    spec:
      containers: [{name: c, image: nginx}]
"#;
    for args in [
        vec!["-n", namespace, "apply", "-f", "-"],
        vec!["-n", namespace, "apply", "--server-side", "-f", "-"],
        vec!["-n", namespace, "create", "-f", "-"],
    ] {
        let err = k.fails_with_input(&args, bad);
        // Server-side apply words it as kube-apiserver's typed patch does.
        assert!(
            (err.contains("unknown field") || err.contains("field not declared in schema"))
                && err.contains("bogusField"),
            "kubectl {args:?}: {err}"
        );
    }
    let missing = k.run(&["-n", namespace, "get", "deployment", "bogus"]);
    assert!(!missing.status.success(), "nothing was created");
}

/// A Deployment kube-apiserver refuses (negative replicas) is refused with kubectl's rendering
/// of the 422 Status, by client-side and server-side apply, and nothing is stored.
pub fn invalid_workload_is_refused(k: &Kubectl, namespace: &str) {
    let bad = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: negative
spec:
  replicas: -1
  selector:
    matchLabels: {app: negative}
  template:
    metadata:
      labels: {app: negative}
    spec:
      containers: [{name: c, image: nginx}]
"#;
    for args in [
        vec!["-n", namespace, "apply", "-f", "-"],
        vec!["-n", namespace, "apply", "--server-side", "-f", "-"],
    ] {
        let err = k.fails_with_input(&args, bad);
        assert!(
            err.contains(
                "The Deployment \"negative\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
            ),
            "kubectl {args:?}: {err}"
        );
    }
    let missing = k.run(&["-n", namespace, "get", "deployment", "negative"]);
    assert!(!missing.status.success(), "nothing was created");
}

/// `kubectl explain` reads the OpenAPI documents.
pub fn explain(k: &Kubectl) {
    let out = k.ok(&["explain", "deployment.spec.strategy"]);
    assert!(out.contains("KIND:") && out.contains("Deployment"), "{out}");
    assert!(out.contains("rollingUpdate"), "{out}");
    let out = k.ok(&["explain", "pods.spec.containers.resources"]);
    assert!(out.contains("limits"), "{out}");
}

/// The kinds `kubectl get` is compared on, with the reference Table (if recorded) or the
/// header kubectl v1.36 prints for them (from kube's printers).
const KINDS: &[(&str, Option<&str>, &[&str])] = &[
    (
        "pods",
        Some("tables/api_v1_namespaces_refcap_pods.json"),
        &[],
    ),
    (
        "configmaps",
        Some("tables/api_v1_namespaces_refcap_configmaps.json"),
        &[],
    ),
    (
        "secrets",
        Some("tables/api_v1_namespaces_refcap_secrets.json"),
        &[],
    ),
    (
        "services",
        Some("tables/api_v1_namespaces_refcap_services.json"),
        &[],
    ),
    (
        "serviceaccounts",
        Some("tables/api_v1_namespaces_refcap_serviceaccounts.json"),
        &[],
    ),
    (
        "endpointslices",
        Some("tables/apis_discovery.k8s.io_v1_namespaces_refcap_endpointslices.json"),
        &[],
    ),
    (
        "events",
        Some("tables/api_v1_namespaces_refcap_events.json"),
        &[],
    ),
    (
        "deployments",
        Some("tables/apis_apps_v1_namespaces_refcap_deployments.json"),
        &[],
    ),
    (
        "replicasets",
        Some("tables/apis_apps_v1_namespaces_refcap_replicasets.json"),
        &[],
    ),
    (
        "jobs",
        Some("tables/apis_batch_v1_namespaces_refcap_jobs.json"),
        &[],
    ),
    (
        "cronjobs",
        Some("tables/apis_batch_v1_namespaces_refcap_cronjobs.json"),
        &[],
    ),
    (
        "roles",
        Some("tables/apis_rbac.authorization.k8s.io_v1_namespaces_refcap_roles.json"),
        &[],
    ),
    ("statefulsets", None, &["NAME", "READY", "AGE"]),
    (
        "daemonsets",
        None,
        &[
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE SELECTOR",
            "AGE",
        ],
    ),
    (
        "persistentvolumeclaims",
        None,
        &[
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE",
        ],
    ),
];

/// Objects of the kinds that `create_kinds` and `apply_documents` do not make, so that every
/// table has a row.
const MORE_OBJECTS: &str = r#"apiVersion: v1
kind: ServiceAccount
metadata: {name: builder}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres:17}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: busybox}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"#;

/// `kubectl get` of each common kind prints the columns a real kube-apiserver's Table has,
/// with human ages.
pub fn tables(k: &Kubectl, namespace: &str) {
    tables_of(k, namespace, |_| true);
}

/// [`tables`] of the kinds that have objects without workload controllers (a Karmada API
/// server runs none): not pods, ReplicaSets, EndpointSlices or Events.
pub fn tables_without_pods(k: &Kubectl, namespace: &str) {
    tables_of(k, namespace, |kind| {
        !matches!(kind, "pods" | "replicasets" | "endpointslices" | "events")
    });
}

fn tables_of(k: &Kubectl, namespace: &str, include: impl Fn(&str) -> bool) {
    k.ok_with_input(&["-n", namespace, "apply", "-f", "-"], MORE_OBJECTS);
    for (kind, reference, fixed) in KINDS.iter().filter(|(kind, _, _)| include(kind)) {
        let expected: Vec<String> = match reference {
            Some(file) => table_header(&reference_json(file), false),
            None => fixed.iter().map(|s| (*s).to_owned()).collect(),
        };
        let out = k.ok(&["-n", namespace, "get", kind]);
        check_table(kind, &out, &expected);
    }
    let expected = table_header(
        &reference_json("tables/apis_apps_v1_namespaces_refcap_deployments.json"),
        true,
    );
    let wide = k.ok(&["-n", namespace, "get", "deployments", "-o", "wide"]);
    check_table("deployments -o wide", &wide, &expected);
    let namespaces = k.ok(&["get", "namespaces"]);
    check_table(
        "namespaces",
        &namespaces,
        &table_header(&reference_json("tables/api_v1_namespaces.json"), false),
    );
    let row = namespaces
        .lines()
        .map(cells)
        .find(|row| row.first().is_some_and(|name| name == namespace))
        .unwrap_or_else(|| panic!("no row for {namespace}:\n{namespaces}"));
    assert_eq!(row.get(1).map(String::as_str), Some("Active"), "{row:?}");
}

/// The header of `out` is `expected`, every row has as many cells, and the AGE column holds
/// human durations.
fn check_table(kind: &str, out: &str, expected: &[String]) {
    let (header, rows) = table_rows(out);
    assert_eq!(header, expected, "kubectl get {kind}:\n{out}");
    assert!(
        !rows.is_empty(),
        "kubectl get {kind} printed no row:\n{out}"
    );
    if let Some(age) = header.iter().position(|h| h == "AGE") {
        for row in &rows {
            let cell = row.get(age).map(String::as_str).unwrap_or_default();
            assert!(
                is_human_duration(cell),
                "kubectl get {kind}: AGE {cell:?} is not a duration:\n{out}"
            );
        }
    }
}

/// `kubectl get nodes` shows `nodes` nodes, each `Ready` with a human age.
pub fn nodes_table(k: &Kubectl, nodes: usize) {
    let out = k.ok(&["get", "nodes"]);
    check_table(
        "nodes",
        &out,
        &table_header(&reference_json("tables/api_v1_nodes.json"), false),
    );
    let rows: Vec<Vec<String>> = out.lines().skip(1).map(cells).collect();
    assert_eq!(rows.len(), nodes, "{out}");
    for row in rows {
        assert_eq!(row.get(1).map(String::as_str), Some("Ready"), "{out}");
    }
}

/// `kubectl scale`, `kubectl rollout status` and `kubectl rollout restart` on Deployment
/// `name`.
pub fn scale_and_roll_out(k: &Kubectl, namespace: &str, name: &str) {
    let deployment = format!("deployment/{name}");
    let timeout = format!("--timeout={}s", SETTLE.as_secs());
    k.ok(&["-n", namespace, "rollout", "status", &deployment, &timeout]);
    k.ok(&["-n", namespace, "scale", &deployment, "--replicas=3"]);
    k.ok(&["-n", namespace, "rollout", "status", &deployment, &timeout]);
    let ready = k.ok(&[
        "-n",
        namespace,
        "get",
        &deployment,
        "-o",
        "jsonpath={.status.readyReplicas}",
    ]);
    assert_eq!(ready, "3");
    let before = replica_sets(k, namespace);
    k.ok(&["-n", namespace, "rollout", "restart", &deployment]);
    k.ok(&["-n", namespace, "rollout", "status", &deployment, &timeout]);
    let after = replica_sets(k, namespace);
    assert!(
        after.iter().any(|rs| !before.contains(rs)),
        "a restart makes a new ReplicaSet: {before:?} -> {after:?}"
    );
    let updated = k.ok(&[
        "-n",
        namespace,
        "get",
        &deployment,
        "-o",
        "jsonpath={.status.updatedReplicas}/{.status.availableReplicas}",
    ]);
    assert_eq!(updated, "3/3");
}

fn replica_sets(k: &Kubectl, namespace: &str) -> Vec<String> {
    let out = k.ok(&["-n", namespace, "get", "replicasets", "-o", "json"]);
    let list: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|rs| rs["metadata"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `kubectl wait --for=condition=complete` on the Job `create_kinds` made.
pub fn job_completes(k: &Kubectl, namespace: &str) {
    let timeout = format!("--timeout={}s", SETTLE.as_secs());
    k.ok(&[
        "-n",
        namespace,
        "wait",
        "--for=condition=complete",
        "job/once",
        &timeout,
    ]);
    let succeeded = k.ok(&[
        "-n",
        namespace,
        "get",
        "job",
        "once",
        "-o",
        "jsonpath={.status.succeeded}",
    ]);
    assert_eq!(succeeded, "1");
}

/// `kubectl logs` and `kubectl exec` on a pod of Deployment `web`.
pub fn logs_and_exec(k: &Kubectl, namespace: &str) {
    let logs = k.ok_within(&["-n", namespace, "logs", "deployment/web"], SETTLE);
    assert!(!logs.trim().is_empty(), "the container says something");
    let out = k.ok_within(
        &[
            "-n",
            namespace,
            "exec",
            "deployment/web",
            "--",
            "echo",
            "hello",
        ],
        SETTLE,
    );
    assert_eq!(out.trim(), "hello");
}

/// `kubectl delete namespace` waits until the namespace and everything in it are gone.
pub fn delete_namespace(k: &Kubectl, namespace: &str) {
    let timeout = format!("--timeout={}s", SETTLE.as_secs());
    k.ok(&["delete", "namespace", namespace, &timeout]);
    let err = k.fails(&["get", "namespace", namespace]);
    assert!(err.contains("NotFound"), "{err}");
}
