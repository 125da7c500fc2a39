//! The fleet search of `kairship sandbox --tls`, wired as `kairship apiserver` wires it: the
//! commands of docs/kairship/search.md run as written (the port aside) with curl and jq, and
//! print what the page says they print.
//!
//! curl and jq are found on PATH; without them the test prints a notice and passes, unless
//! `KUBEOCEAN_REQUIRE_TOOLS` is set (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::{curl_and_jq_or_skip, free_port, run_bash, sh_block_after, start_sandbox};

const TEST: &str = "search_commands_of_the_docs_print_what_the_docs_say";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_commands_of_the_docs_print_what_the_docs_say() {
    if !curl_and_jq_or_skip(TEST) {
        return;
    }
    let work = std::env::temp_dir().join(format!("kairship-search-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let port = free_port();
    let sandbox = start_sandbox(&work.join("kairship-sandbox"), port, &["--tls"]);
    let commands = sh_block_after(
        include_str!("../../docs/kairship/search.md"),
        "## Try it",
        port,
    );
    let out = run_bash(&commands, &work, None);
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
