//! The audit trail of `kairship sandbox --tls`, wired as `kairship apiserver` wires it: the
//! commands of docs/kairship/audit.md run as written (the port aside) with curl, jq and the
//! real kubectl; then each of their writes (REST, kubectl through the native proxy, a write
//! the instance refuses) has exactly one record in the host, and the viewer reads only the
//! records of its instance.
//!
//! kubectl, curl and jq are found on PATH (kubectl also as `kube_sandbox::testing::kubectl`
//! says); without them the test prints a notice and passes, unless `KUBEOCEAN_REQUIRE_TOOLS`
//! is set (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::Duration;

use kube_sandbox::testing::kubectl::kubectl_or_skip;
use serde_json::Value;
use support::{P, curl_and_jq_or_skip, free_port, run_bash, sh_block_after, start_sandbox};

const TEST: &str = "audit_commands_of_the_docs_leave_one_record_per_write";

/// `GET audit{query}` as the bearer of `token`.
async fn audit(http: &reqwest::Client, base: &str, token: &str, query: &str) -> Value {
    let answer = http
        .get(format!("{base}{P}/audit{query}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success(), "{query}: {}", answer.status());
    answer.json().await.unwrap()
}

fn summary(list: &Value) -> Vec<(String, String, String, u64)> {
    let mut rows: Vec<_> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["door"].as_str().unwrap().to_owned(),
                r["object"]["name"].as_str().unwrap_or_default().to_owned(),
                r["user"].as_str().unwrap().to_owned(),
                r["code"].as_u64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_commands_of_the_docs_leave_one_record_per_write() {
    let Some(kubectl) = kubectl_or_skip(TEST) else {
        return;
    };
    if !curl_and_jq_or_skip(TEST) {
        return;
    }
    let work = std::env::temp_dir().join(format!("kairship-audit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let port = free_port();
    // The docs' default directory, `./kairship-sandbox`, in the working directory.
    let sandbox = start_sandbox(&work.join("kairship-sandbox"), port, &["--tls"]);

    let commands = sh_block_after(
        include_str!("../../docs/kairship/audit.md"),
        "## Try it",
        port,
    );
    let out = run_bash(
        &commands,
        &work,
        Some(kubectl.parent().unwrap_or(Path::new("/"))),
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first(), Some(&"audited"), "{out}");
    assert!(
        lines.contains(&"configmap/audited-by-kubectl created"),
        "{out}"
    );
    assert!(lines.contains(&"3"), "{out}");
    assert_eq!(lines.last(), Some(&"7"), "{out}");

    kube_kit::client::install_crypto_provider();
    let ca = std::fs::read(sandbox.dir.join("kairship-ca.crt")).unwrap();
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .build()
        .unwrap();
    let base = format!("https://127.0.0.1:{port}");
    let admin = std::fs::read_to_string(sandbox.dir.join("admin.token")).unwrap();
    let viewer = std::fs::read_to_string(sandbox.dir.join("viewer.token")).unwrap();
    let admin = admin.trim();
    let expected = vec![
        (
            "proxy".into(),
            "audited-by-kubectl".into(),
            "sandbox-admin".into(),
            201,
        ),
        ("rest".into(), "audited".into(), "sandbox-admin".into(), 201),
        ("rest".into(), "refused".into(), "sandbox-admin".into(), 422),
    ];
    let mut seen = Vec::new();
    // Records are stored in the background: wait (bounded) for the three.
    for _ in 0..200 {
        seen = summary(&audit(&http, &base, admin, "?instance=karmada-a").await);
        if seen.len() >= expected.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(seen, expected);

    // The viewer reads karmada-a's records only; the admin wrote nothing elsewhere, so a
    // write to karmada-b makes the difference visible.
    let created = http
        .post(format!(
            "{base}{P}/instances/karmada-b/namespaces/demo/configmaps"
        ))
        .bearer_auth(admin)
        .json(&serde_json::json!({"metadata": {"name": "in-b"}}))
        .send()
        .await
        .unwrap();
    assert!(created.status().is_success(), "{}", created.status());
    for _ in 0..200 {
        if audit(&http, &base, admin, "?instance=karmada-b").await["pagination"]["total"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        audit(&http, &base, admin, "").await["pagination"]["total"],
        4
    );
    let of_viewer = audit(&http, &base, viewer.trim(), "").await;
    let instances: Vec<&str> = of_viewer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["instance"].as_str().unwrap())
        .collect();
    assert_eq!(instances, ["karmada-a"; 3]);
    drop(sandbox);
    let _ = std::fs::remove_dir_all(&work);
}
