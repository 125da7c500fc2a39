//! The real kubectl (v1.36) streaming through Kairship's native proxy to a member pod:
//! `kubectl exec` (WebSocket `v5.channel.k8s.io`, an interactive shell over stdin, an exit
//! code), `kubectl attach` and `kubectl logs -f` (lines arriving while the container writes them), and port
//! forwarding with kube-rs's client (`v4.channel.k8s.io`), with a
//! kubeconfig whose server is Karmada's cluster proxy of member `a-east` inside the instance
//! proxy (`…/instances/karmada-a/proxy/apis/cluster.karmada.io/v1alpha1/clusters/a-east/proxy`),
//! as `kairship sandbox --tls` serves it. The viewer, who may read the instance but not
//! write to it, is refused exec (authorized as `create`, as kube-apiserver does).
//!
//! kubectl is found as `kube_sandbox::testing::kubectl` says; without it the test prints a
//! notice and passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use kube_sandbox::testing::kubectl::{Kubectl, kubectl_or_skip};
use kube_sandbox::testing::process::Background;

mod support;

use support::{LIMIT, client_from, free_port, member_kubeconfig, start_sandbox};

/// A Deployment printing a line every 300 ms, placed on member a-east.
const TICKER: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: ticker, namespace: demo, labels: {app: ticker}}
spec:
  replicas: 1
  selector: {matchLabels: {app: ticker}}
  template:
    metadata: {labels: {app: ticker}}
    spec:
      containers:
      - name: ticker
        image: busybox:1.36
        command: ["sh", "-c", "echo started; while true; do echo tick $(date); sleep 0.3; done"]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: ticker, namespace: demo}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: ticker}]
  placement: {clusterAffinity: {clusterNames: [a-east]}}
"#;

/// The name of the running ticker pod in the member.
fn running_ticker(member: &Kubectl) -> String {
    let deadline = Instant::now() + LIMIT;
    loop {
        let out = member.run(&[
            "-n",
            "demo",
            "get",
            "pods",
            "-l",
            "app=ticker",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.status.phase}{\"\\n\"}{end}",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some(name) = text
            .lines()
            .find_map(|l| l.strip_suffix(" Running").map(str::to_owned))
        {
            return name;
        }
        assert!(
            Instant::now() < deadline,
            "no running ticker pod in the member: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn kubectl_exec_and_logs_follow_reach_a_member_pod_through_the_native_proxy() {
    let test = "kubectl_exec_and_logs_follow_reach_a_member_pod_through_the_native_proxy";
    let Some(binary) = kubectl_or_skip(test) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("kairship-kubectl-streams-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sandbox = start_sandbox(&dir, free_port(), &["--tls"]);

    let admin = Kubectl::new(&binary, dir.join("admin.kubeconfig"));
    admin.ok_with_input(&["apply", "-f", "-"], TICKER);
    let member = Kubectl::new(
        &binary,
        member_kubeconfig(&dir.join("admin.kubeconfig"), "a-east"),
    );
    let pod = running_ticker(&member);

    // One command, over WebSocket through Kairship, Karmada's cluster proxy and the member.
    let out = member.ok(&["-n", "demo", "exec", &pod, "--", "echo", "hello"]);
    assert_eq!(out, "hello\n");
    // A shell reading its commands from stdin.
    let out = member.ok_with_input(
        &["-n", "demo", "exec", "-i", &pod, "--", "sh"],
        "echo one\nhostname\nexit 0\n",
    );
    assert_eq!(out, format!("one\n{pod}\n"));
    // The exit code comes back as the container's.
    let err = member.fails(&["-n", "demo", "exec", &pod, "--", "sh", "-c", "exit 3"]);
    assert!(err.contains("exit code 3"), "{err}");

    // `attach` carries the container's output (the sandbox's kubelet sends what the
    // container printed so far, then detaches).
    let out = member.ok(&["-n", "demo", "attach", &pod]);
    assert!(out.starts_with("started\ntick "), "{out}");
    assert!(out.lines().skip(1).all(|l| l.starts_with("tick ")), "{out}");

    // `logs -f` streams the lines while the container writes them: after the last line
    // written before the command, new ones arrive, each written later than the one before
    // (the kubelet's timestamps).
    let mut follow = Command::new(&binary);
    follow
        .env("KUBECONFIG", &member.kubeconfig)
        .env("KUBECACHEDIR", dir.join("follow-cache"))
        .args(["-n", "demo", "logs", "-f", "--timestamps", "--tail=1", &pod]);
    let mut follow = Background::spawn(follow);
    let is_tick = |line: &str| line.contains(" tick ");
    let mut written = vec![follow.wait_for_line(LIMIT, is_tick)];
    while written.len() < 4 {
        written.push(follow.wait_for_line(LIMIT, is_tick));
    }
    let times: Vec<jiff::Timestamp> = written
        .iter()
        .map(|line| line.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{written:?}");
    drop(follow);

    // Port forwarding carries a connection to the pod (a port not named `http` echoes), here
    // with kube-rs's client (`v4.channel.k8s.io`) and the same kubeconfig; `kubectl
    // port-forward` (SPDY) has its own test, port_forward.rs.
    let echoed = tokio::runtime::Runtime::new().unwrap().block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        kube_kit::client::install_crypto_provider();
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(client_from(&member.kubeconfig).await, "demo");
        let mut forwarder = pods.portforward(&pod, &[8080]).await.unwrap();
        let mut port = forwarder.take_stream(8080).unwrap();
        port.write_all(b"ping through kairship").await.unwrap();
        let mut echoed = [0u8; 21];
        port.read_exact(&mut echoed).await.unwrap();
        drop(port);
        forwarder.abort();
        echoed
    });
    assert_eq!(&echoed, b"ping through kairship");

    // The viewer may read the instance but not run commands in it.
    let viewer = Kubectl::new(
        &binary,
        member_kubeconfig(&dir.join("viewer.kubeconfig"), "a-east"),
    );
    let err = viewer.fails(&["-n", "demo", "exec", &pod, "--", "echo", "hi"]);
    assert!(
        err.contains("forbidden") && err.contains("cannot create"),
        "{err}"
    );

    drop(sandbox);
}
