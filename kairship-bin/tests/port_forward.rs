//! The real kubectl (v1.36) runs `kubectl port-forward` to a member's pod through Kairship's
//! native proxy, with a kubeconfig whose server is Karmada's cluster proxy of member `a-east`
//! inside the instance proxy
//! (`…/instances/karmada-a/proxy/apis/cluster.karmada.io/v1alpha1/clusters/a-east/proxy`), as
//! `kairship sandbox --tls` serves it: kubectl's default WebSocket (SPDY tunnelled in it) and
//! the plain SPDY upgrade (`KUBECTL_PORT_FORWARD_WEBSOCKETS=false`) both reach the pod's
//! port, whose HTTP echo server names the member pod it runs in. The request reaches the
//! member as the caller (impersonated by Karmada's cluster proxy, as for exec). The viewer, who
//! may read the instance but not write to it, is refused with a 403 Status in both forms: the
//! upgrade is authorized as `create`, as kube-apiserver authorizes `pods/portforward`.
//!
//! kubectl is found as `kube_sandbox::testing::kubectl` says; without it the test prints a
//! notice and passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use kube_sandbox::testing::kubectl::{Kubectl, kubectl_or_skip};
use kube_sandbox::testing::process::Background;
use serde_json::Value;

mod support;

use support::{LIMIT, free_port, member_kubeconfig, start_sandbox};

/// A Deployment serving HTTP on a port named `http`, placed on member a-east.
const WEB: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: hello, namespace: demo, labels: {app: hello}}
spec:
  replicas: 1
  selector: {matchLabels: {app: hello}}
  template:
    metadata: {labels: {app: hello}}
    spec:
      containers:
      - name: server
        image: nginx:1.27
        ports: [{name: http, containerPort: 8080}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: hello, namespace: demo}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: hello}]
  placement: {clusterAffinity: {clusterNames: [a-east]}}
"#;

/// The name of the running hello pod in the member, once the member's Deployment has rolled
/// out.
fn running_pod(member: &Kubectl) -> String {
    member.ok_within(
        &[
            "-n",
            "demo",
            "rollout",
            "status",
            "deployment/hello",
            "--timeout=120s",
        ],
        LIMIT,
    );
    let deadline = Instant::now() + LIMIT;
    loop {
        let out = member.run(&[
            "-n",
            "demo",
            "get",
            "pods",
            "-l",
            "app=hello",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{.status.phase}{\"\\n\"}{end}",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some(name) = text
            .lines()
            // A pod being deleted has a deletionTimestamp before its phase.
            .find_map(|l| l.strip_suffix(" Running").map(str::to_owned))
        {
            return name;
        }
        assert!(
            Instant::now() < deadline,
            "no running hello pod in the member: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `kubectl -v=4 port-forward` in the background with its log on standard output, and the
/// local port once it listens.
fn port_forward(
    binary: &Path,
    kubeconfig: &Path,
    websockets: bool,
    pod: &str,
) -> (Background, u16) {
    let mut command = Command::new("sh");
    command
        .args(["-c", "exec \"$0\" \"$@\" 2>&1"])
        .arg(binary)
        .args([
            "-v=4",
            "-n",
            "demo",
            "port-forward",
            &format!("pod/{pod}"),
            ":8080",
        ])
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", kubeconfig.with_extension("pf-cache"))
        .env(
            "KUBECTL_PORT_FORWARD_WEBSOCKETS",
            if websockets { "true" } else { "false" },
        );
    let mut forward = Background::spawn(command);
    let line = forward.wait_for_line(LIMIT, |l| {
        l.starts_with("Forwarding from 127.0.0.1:") && l.ends_with(" -> 8080")
    });
    let port = line
        .trim_start_matches("Forwarding from 127.0.0.1:")
        .trim_end_matches(" -> 8080")
        .parse()
        .unwrap();
    (forward, port)
}

/// The JSON body of `GET path` on a local port, which must answer 200.
fn http_get(port: u16, path: &str) -> Value {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{answer}");
    serde_json::from_str(body).unwrap()
}

#[test]
fn kubectl_port_forward_reaches_a_member_pod_through_the_native_proxy() {
    let test = "kubectl_port_forward_reaches_a_member_pod_through_the_native_proxy";
    let Some(binary) = kubectl_or_skip(test) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("kairship-port-forward-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sandbox = start_sandbox(&dir, free_port(), &["--tls"]);

    let admin = Kubectl::new(&binary, dir.join("admin.kubeconfig"));
    admin.ok_with_input(&["apply", "-f", "-"], WEB);
    let member_config = member_kubeconfig(&dir.join("admin.kubeconfig"), "a-east");
    let member = Kubectl::new(&binary, &member_config);
    let pod = running_pod(&member);

    for websockets in [true, false] {
        let (forward, local) = port_forward(&binary, &member_config, websockets, &pod);
        let answer = http_get(local, "/through/kairship");
        assert_eq!(answer["pod"], pod.as_str(), "{answer}");
        assert_eq!(answer["namespace"], "demo");
        assert_eq!(answer["container"], "server");
        assert_eq!(answer["port"], 8080);
        assert_eq!(answer["path"], "/through/kairship");
        // kubectl kept to the form asked for (no fallback from the tunnel).
        let log = &forward.printed;
        assert!(!log.contains("fallback to secondary dialer"), "{log}");
        assert_eq!(
            log.contains("negotiated protocol: portforward.k8s.io"),
            websockets,
            "{log}"
        );
        drop(forward);
    }

    // The viewer may read the instance (and the pod) but not forward its ports: the upgrade
    // needs `create`, in both forms.
    let viewer_config = member_kubeconfig(&dir.join("viewer.kubeconfig"), "a-east");
    let viewer = Kubectl::new(&binary, &viewer_config);
    viewer.ok(&["-n", "demo", "get", "pod", &pod]);
    for websockets in ["true", "false"] {
        let out = Command::new(&binary)
            .env("KUBECONFIG", &viewer_config)
            .env("KUBECACHEDIR", viewer_config.with_extension("pf-cache"))
            .env("KUBECTL_PORT_FORWARD_WEBSOCKETS", websockets)
            .args(["-n", "demo", "port-forward", &format!("pod/{pod}"), ":8080"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains("forbidden") && err.contains("cannot create"),
            "{err}"
        );
    }

    drop(sandbox);
}
