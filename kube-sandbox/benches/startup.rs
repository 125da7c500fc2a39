//! How fast a sandbox cluster is ready, and what an idle one costs in memory: the figures a
//! project weighing kube-sandbox against envtest (a real kube-apiserver and etcd) asks for.
//!
//! `cargo bench -p kube-sandbox --bench startup` prints `BENCH <name>=<value>` lines:
//! - rss_baseline_mib: the bench process before any cluster;
//! - start_to_first_answer_http_ms_first: the first cluster of the process: `Cluster::new`,
//!   `Cluster::serve` on a loopback port, then `GET /api/v1/namespaces/default` over a fresh
//!   TCP connection with the admin token, answered 200 (goal <= 50 ms);
//! - rss_one_idle_cluster_mib: the process with that cluster, served and idle for a second;
//! - rss_per_idle_cluster_mib: what each of 10 more served idle clusters adds;
//! - start_to_first_answer_in_process_ms_p50 / _max: `Cluster::new`, then the same GET
//!   through `cluster.client()` answered (no socket), median and worst of 50;
//! - start_to_first_answer_http_ms_p50 / _max: as the first, median and worst of 50 more.
//!
//! RSS is read from `/proc/self/status` (Linux); elsewhere those lines say `unavailable`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube_sandbox::{Cluster, ServeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RUNS: usize = 50;

/// Resident set size in MiB, from `/proc/self/status`.
fn rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn print_rss(name: &str, value: Option<f64>) {
    match value {
        Some(v) => println!("BENCH {name}={v:.1}"),
        None => println!("BENCH {name}=unavailable"),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// In-process: a new cluster answers its first read.
async fn start_in_process() -> Duration {
    let started = Instant::now();
    let cluster = Cluster::new("bench");
    let ns = Api::<Namespace>::all(cluster.client())
        .get("default")
        .await
        .expect("first answer");
    let took = started.elapsed();
    assert_eq!(ns.metadata.name.as_deref(), Some("default"));
    cluster.shutdown();
    took
}

/// A raw HTTP/1.1 GET with the admin token over a new connection; the status line.
async fn get(addr: std::net::SocketAddr, token: &str, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Accept: application/json\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let text = String::from_utf8_lossy(&answer);
    text.lines().next().unwrap_or_default().to_owned()
}

/// Over loopback HTTP: a new cluster, served, answers its first request.
async fn start_served() -> Duration {
    let started = Instant::now();
    let cluster = Cluster::new("bench");
    let served = cluster.serve(ServeOptions::default()).await.expect("serve");
    let status = get(
        served.addr,
        cluster.admin_token(),
        "/api/v1/namespaces/default",
    )
    .await;
    let took = started.elapsed();
    assert!(status.contains(" 200 "), "{status}");
    served.stop();
    cluster.shutdown();
    took
}

/// The median and worst of `RUNS` runs of `start`.
async fn measure<F, Fut>(name: &str, start: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Duration>,
{
    let mut runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        runs.push(start().await);
    }
    runs.sort();
    println!("BENCH {name}_ms_p50={:.2}", ms(runs[RUNS / 2]));
    println!("BENCH {name}_ms_max={:.2}", ms(runs[RUNS - 1]));
}

/// A new served cluster that answered its first request, and how long that took.
async fn serve_one() -> (Cluster, kube_sandbox::Served, Duration) {
    let started = Instant::now();
    let cluster = Cluster::new("idle");
    let served = cluster.serve(ServeOptions::default()).await.expect("serve");
    let status = get(
        served.addr,
        cluster.admin_token(),
        "/api/v1/namespaces/default",
    )
    .await;
    let took = started.elapsed();
    assert!(status.contains(" 200 "), "{status}");
    (cluster, served, took)
}

#[tokio::main]
async fn main() {
    // Memory first, before the timing loops have grown the heap.
    let baseline = rss_mib();
    print_rss("rss_baseline_mib", baseline);
    let (cluster, served, first) = serve_one().await;
    println!("BENCH start_to_first_answer_http_ms_first={:.2}", ms(first));
    let mut clusters = vec![(cluster, served)];
    tokio::time::sleep(Duration::from_secs(1)).await;
    let one = rss_mib();
    print_rss("rss_one_idle_cluster_mib", one);
    for _ in 0..10 {
        let (cluster, served, _) = serve_one().await;
        clusters.push((cluster, served));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    print_rss(
        "rss_per_idle_cluster_mib",
        one.zip(rss_mib())
            .map(|(one, eleven)| (eleven - one) / 10.0),
    );
    for (cluster, served) in clusters {
        served.stop();
        cluster.shutdown();
    }

    measure("start_to_first_answer_in_process", start_in_process).await;
    measure("start_to_first_answer_http", start_served).await;
}
