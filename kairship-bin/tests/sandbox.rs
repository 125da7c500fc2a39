//! `kairship sandbox` starts the clusters and the controller-manager and prints both
//! Instances running with their summaries.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn sandbox_prints_running_instances() {
    let dir = std::env::temp_dir().join(format!("kairship-sandbox-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_kairship"))
        .arg("sandbox")
        .arg(format!("--dir={}", dir.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kairship sandbox");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut printed = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read stdout");
        if line.starts_with("--- running") {
            break;
        }
        printed.push_str(&line);
        printed.push('\n');
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(dir.join("host.kubeconfig").exists(), "{printed}");
    assert!(dir.join("karmada-a.kubeconfig").exists(), "{printed}");
    assert_eq!(printed.matches("state: RUNNING").count(), 2, "{printed}");
    // karmada-b: 3 members, 2 ready, 8 nodes of which 7 ready.
    assert!(printed.contains("name: karmada-b"), "{printed}");
    assert!(printed.contains("totalNum: 8"), "{printed}");
    let _ = std::fs::remove_dir_all(&dir);
}
