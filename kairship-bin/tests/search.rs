//! The fleet search of `kairship sandbox --tls`, wired as `kairship apiserver` wires it: the
//! commands of docs/kairship/search.md run as written (the port aside) with curl and jq, and
//! print what the page says they print.
//!
//! curl and jq are found on PATH; without them the test prints a notice and passes, unless
//! `KUBEOCEAN_REQUIRE_TOOLS` is set (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Command;

use kube_sandbox::testing::tools::{on_path, skip_or_fail};
use support::{free_port, start_sandbox};

const TEST: &str = "search_commands_of_the_docs_print_what_the_docs_say";

/// The first shell block of docs/kairship/search.md's "Try it" section, against `port`.
fn documented_commands(port: u16) -> String {
    let doc = include_str!("../../docs/kairship/search.md");
    let section = &doc[doc.find("## Try it").expect("a Try it section")..];
    let start = section.find("```sh\n").expect("a sh block") + "```sh\n".len();
    let block = &section[start..];
    let block = &block[..block.find("```").expect("the block's end")];
    block.replace("127.0.0.1:8443", &format!("127.0.0.1:{port}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_commands_of_the_docs_print_what_the_docs_say() {
    if on_path("curl").is_none() || on_path("jq").is_none() {
        skip_or_fail(TEST, "curl and jq are needed", "install curl and jq");
        return;
    }
    let work = std::env::temp_dir().join(format!("kairship-search-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let port = free_port();
    let sandbox = start_sandbox(&work.join("kairship-sandbox"), port, &["--tls"]);
    let run = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &documented_commands(port)])
        .current_dir(&work)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "karmada-a\tdemo\tweb",
            "karmada-b\tdemo\tweb",
            r#"[{"instance":"karmada-a","total":2},{"instance":"karmada-b","total":2}]"#,
            "karmada-a",
            lines.get(4).copied().unwrap_or_default(),
            "3",
        ],
        "{out}"
    );
    assert!(lines[4].starts_with("kind:"), "{out}");
    drop(sandbox);
    let _ = std::fs::remove_dir_all(&work);
}
