//! The request path at real scale: one kube-sandbox instance holding 5,000 Deployments (about
//! 5 KB each, as a Helm chart installs them, with status), read through Kairship's native proxy
//! (embedded cache, the API server's HTTP/1.1 + HTTP/2 connection settings) and straight from
//! the instance, interleaved round by round.
//!
//! Measures, printing `BENCH name=value` lines:
//! - the full LIST's bytes and p50/p99 with and without `Accept-Encoding: gzip`, through the
//!   proxy and direct, over HTTP/1.1, and through the proxy over HTTP/2 (h2c);
//! - the API server's resident memory 30 s after a LIST that raced the cache's sync, against
//!   one whose cache synced first (each in a fresh process);
//! - the controller-manager's statistics (their caches in the shared instance cache and one
//!   summary) resident memory with the 5,000 Deployments;
//! - a load of 24 callers for 40 s mixing namespace LISTs, GETs and writes through the proxy
//!   with the same writes sent straight to the instance: server errors, dropped connections,
//!   writes stored, and write p50/p99 through the proxy against direct.
//!
//! The instance runs in a child process (this executable again, with `KAIRSHIP_BENCH_REQ_CHILD`
//! set), as do the memory measurements, so each process holds only what it measures.
//!
//! `cargo bench -p kairship-core --bench request_path`; `KAIRSHIP_BENCH_REQ_DEPLOYMENTS`
//! (default 5000), `KAIRSHIP_BENCH_REQ_ROUNDS` (LIST rounds, default 30),
//! `KAIRSHIP_BENCH_REQ_SETTLE_S` (default 30), `KAIRSHIP_BENCH_REQ_LOAD_S` (default 40) and
//! `KAIRSHIP_BENCH_REQ_CALLERS` (default 24) change the sizes; `KAIRSHIP_BENCH_REQ_PARTS`
//! (default `lists,apiserver,controller,load`) runs only the parts it names.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use kairship_core::access::AllowAll;
use kairship_core::auth::StaticTokenAuthenticator;
use kairship_core::controllers::resource_statistics::cache::InstanceCache;
use kairship_core::proxy::{ProxyState, connection_builder, proxy_routes};
use kairship_core::router::{
    DirectBackend, EmbeddedCacheBackend, InstanceWriter, ReadBackend, SplitRouter,
    StaticInstanceClients,
};
use kube::Api;
use kube::api::ListParams;
use serde_json::json;
use support::{
    NAMESPACES, client_of, deployments, fill_deployments, mib, ms, namespace_of, percentile,
    rss_bytes, until_stdin_closes,
};

const CHILD_ENV: &str = "KAIRSHIP_BENCH_REQ_CHILD";
const INSTANCE: &str = "karmada";
const TOKEN: &str = "bench-token";

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Child: the instance with `count` Deployments, served; prints `INSTANCE <url> <token>`.
async fn sandbox_child(count: usize) {
    let cluster = kube_sandbox::Cluster::new(INSTANCE);
    let client = cluster.client();
    fill_deployments(&client, count).await;
    let served = cluster
        .serve(kube_sandbox::ServeOptions::default())
        .await
        .unwrap();
    println!("INSTANCE {} {}", served.url, cluster.admin_token());
    std::io::stdout().flush().unwrap();
    until_stdin_closes().await;
    drop(served);
}

/// The proxy over the instance at `url`, served with the API server's connection settings;
/// returns its address and the cache.
async fn start_proxy(url: &str, token: &str) -> (std::net::SocketAddr, Arc<EmbeddedCacheBackend>) {
    // The instance client as the API server builds it (kube-kit's options for clients relaying
    // users' requests: no client-side limit, no retries).
    let yaml = kube_sandbox::serve::kubeconfig_yaml(INSTANCE, url, None, token);
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&yaml).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let options = kube_kit::client::ClientOptions::new("kairship-bench").relaying_users();
    let client = kube_kit::client::client_from_config(config, &options, "the instance").unwrap();
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, client));
    let cache = Arc::new(EmbeddedCacheBackend::new(clients.clone()));
    let router = Arc::new(SplitRouter::new(
        cache.clone(),
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients.clone())),
    ));
    let state = ProxyState::new(
        router,
        clients,
        Arc::new(StaticTokenAuthenticator::parse(&format!("{TOKEN},bench,1")).unwrap()),
        Arc::new(AllowAll),
    );
    let app = proxy_routes(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let app = app.clone();
            tokio::spawn(async move {
                let builder = connection_builder();
                let _ = builder
                    .serve_connection_with_upgrades(
                        TokioIo::new(stream),
                        TowerToHyperService::new(app),
                    )
                    .await;
            });
        }
    });
    (addr, cache)
}

fn proxy_base(addr: std::net::SocketAddr) -> String {
    format!("http://{addr}/apis/kairship.io/v1alpha1/instances/{INSTANCE}/proxy")
}

async fn wait_synced(cache: &EmbeddedCacheBackend) {
    while !cache.synced(INSTANCE, &deployments()).await {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One GET: (status, bytes on the wire, time to the last byte).
async fn timed_get(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    gzip: bool,
) -> (u16, usize, Duration) {
    let start = Instant::now();
    let mut request = http.get(url).bearer_auth(token);
    if gzip {
        request = request.header("Accept-Encoding", "gzip");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let gzipped = response
        .headers()
        .get("content-encoding")
        .is_some_and(|v| v == "gzip");
    let body = response.bytes().await.unwrap();
    let took = start.elapsed();
    // Checked outside the timing: the answer is a whole list.
    let text = if gzipped {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    } else {
        assert!(
            !gzip || body.len() < 128 * 1024,
            "a large answer went uncompressed"
        );
        body.to_vec()
    };
    assert_eq!(
        status,
        200,
        "{}",
        String::from_utf8_lossy(&text[..text.len().min(300)])
    );
    (status, body.len(), took)
}

/// Child: an API server whose first LIST races the cache's sync (`race`) or comes after it;
/// prints its resident memory once synced and `settle` later.
async fn apiserver_child(url: &str, token: &str, race: bool, settle: Duration) {
    let (addr, cache) = start_proxy(url, token).await;
    let http = reqwest::Client::new();
    let list = format!("{}/apis/apps/v1/deployments", proxy_base(addr));
    if race {
        // The first read starts the cache: this LIST is answered before it synced.
        timed_get(&http, &list, TOKEN, false).await;
        wait_synced(&cache).await;
    } else {
        // Starts the cache without listing through the proxy.
        wait_synced(&cache).await;
        timed_get(&http, &list, TOKEN, false).await;
    }
    println!("RSS_SYNCED {}", rss_bytes());
    tokio::time::sleep(settle).await;
    println!("RSS_SETTLED {}", rss_bytes());
    std::io::stdout().flush().unwrap();
}

/// Child: what the controller-manager's statistics keep of the instance (its caches in the
/// shared instance cache, and a summary computed from them); prints its resident memory once
/// the Deployments are cached and summed.
async fn controller_child(url: &str, token: &str) {
    let client = client_of(INSTANCE, url, token).await;
    let before = rss_bytes();
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, client));
    let backend = EmbeddedCacheBackend::new(clients);
    let cache = InstanceCache::open(&backend, INSTANCE).await.unwrap();
    // The bench's instance serves no Karmada kinds: their caches never list.
    let core = [
        &cache.deployments,
        &cache.services,
        &cache.secrets,
        &cache.configmaps,
        &cache.pvcs,
    ];
    while !core.iter().all(|c| c.has_listed()) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let summary = kairship_core::controllers::resource_statistics::compute(&cache);
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!("CACHED {}", summary.workload_summary.deployments.total_num);
    println!("RSS {} {}", rss_bytes(), before);
    std::io::stdout().flush().unwrap();
}

/// Runs this executable as a child with `spec`; returns it and its stdout lines.
fn spawn_child(
    spec: &str,
) -> (
    std::process::Child,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    let mut process = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, spec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(process.stdout.take().unwrap()).lines();
    (process, lines)
}

/// Runs a measuring child to its end and returns its lines.
fn run_child(spec: &str) -> Vec<String> {
    let (mut process, lines) = spawn_child(spec);
    let out: Vec<String> = lines.map(Result::unwrap).collect();
    drop(process.stdin.take());
    let _ = process.wait();
    out
}

fn value_of(lines: &[String], key: &str) -> Vec<u64> {
    lines
        .iter()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in {lines:?}"))
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

#[derive(Default)]
struct Series {
    bytes: usize,
    samples: Vec<Duration>,
}

impl Series {
    fn report(&mut self, name: &str) -> (f64, f64) {
        self.samples.sort();
        let (p50, p99) = (
            ms(percentile(&self.samples, 50.0)),
            ms(percentile(&self.samples, 99.0)),
        );
        println!("BENCH {name}_bytes={}", self.bytes);
        println!("BENCH {name}_p50_ms={p50:.1}");
        println!("BENCH {name}_p99_ms={p99:.1}");
        (p50, p99)
    }
}

async fn lists(url: &str, token: &str, count: usize) {
    let rounds = env_number("KAIRSHIP_BENCH_REQ_ROUNDS", 30) as usize;
    let (addr, cache) = start_proxy(url, token).await;
    wait_synced(&cache).await;
    let proxy = format!("{}/apis/apps/v1/deployments", proxy_base(addr));
    let direct = format!("{url}/apis/apps/v1/deployments");
    let h1 = reqwest::Client::builder().http1_only().build().unwrap();
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    // (name, client, url, token, gzip)
    let cases: [(&str, &reqwest::Client, &str, &str, bool); 6] = [
        ("list_proxy_plain_h1", &h1, &proxy, TOKEN, false),
        ("list_proxy_gzip_h1", &h1, &proxy, TOKEN, true),
        ("list_direct_plain_h1", &h1, &direct, token, false),
        ("list_direct_gzip_h1", &h1, &direct, token, true),
        ("list_proxy_plain_h2", &h2, &proxy, TOKEN, false),
        ("list_direct_plain_h2", &h2, &direct, token, false),
    ];
    let mut series: Vec<Series> = cases.iter().map(|_| Series::default()).collect();
    for round in 0..rounds + 2 {
        for (i, (_, client, url, token, gzip)) in cases.iter().enumerate() {
            let (_, bytes, took) = timed_get(client, url, token, *gzip).await;
            // The first two rounds warm connections and the compressed list.
            if round >= 2 {
                series[i].bytes = bytes;
                series[i].samples.push(took);
            }
        }
    }
    println!("BENCH list_deployments={count}");
    println!("BENCH list_rounds={rounds}");
    let mut p50s = Vec::new();
    for (i, (name, ..)) in cases.iter().enumerate() {
        p50s.push(series[i].report(name).0);
    }
    println!(
        "BENCH list_gzip_bytes_proxy_over_direct={:.3}",
        series[1].bytes as f64 / series[3].bytes as f64
    );
    println!("BENCH list_proxy_h2_over_h1_p50={:.2}", p50s[4] / p50s[0]);
    println!(
        "BENCH list_direct_over_proxy_gzip_p50={:.2}",
        p50s[3] / p50s[1]
    );
}

async fn load(url: &str, token: &str) {
    let seconds = env_number("KAIRSHIP_BENCH_REQ_LOAD_S", 40);
    let callers = env_number("KAIRSHIP_BENCH_REQ_CALLERS", 24) as usize;
    let (addr, cache) = start_proxy(url, token).await;
    wait_synced(&cache).await;
    let base = proxy_base(addr);
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let server_errors = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicUsize::new(0));
    let stored_proxy = Arc::new(AtomicUsize::new(0));
    let stored_direct = Arc::new(AtomicUsize::new(0));
    let tasks = (0..callers).map(|caller| {
        let (http, base) = (http.clone(), base.clone());
        let (url, token) = (url.to_owned(), token.to_owned());
        let (server_errors, dropped) = (server_errors.clone(), dropped.clone());
        let (stored_proxy, stored_direct) = (stored_proxy.clone(), stored_direct.clone());
        async move {
            let mut writes_proxy = Vec::new();
            let mut writes_direct = Vec::new();
            let mut reads = Vec::new();
            let mut n = 0usize;
            while Instant::now() < deadline {
                n += 1;
                let ns = namespace_of(caller * 31 + n);
                let (request, kind) = match n % 5 {
                    0 | 1 => (
                        http.get(format!("{base}/apis/apps/v1/namespaces/{ns}/deployments"))
                            .bearer_auth(TOKEN),
                        0,
                    ),
                    2 => (
                        http.get(format!(
                            "{base}/apis/apps/v1/namespaces/{ns}/deployments/svc-{:05}",
                            (caller * 31 + n) % NAMESPACES
                        ))
                        .bearer_auth(TOKEN),
                        0,
                    ),
                    3 => (
                        http.post(format!("{base}/api/v1/namespaces/{ns}/configmaps"))
                            .bearer_auth(TOKEN)
                            .json(&json!({"metadata": {"name": format!("p-{caller}-{n}")},
                                "data": {"k": "v"}})),
                        1,
                    ),
                    _ => (
                        http.post(format!("{url}/api/v1/namespaces/{ns}/configmaps"))
                            .bearer_auth(&token)
                            .json(&json!({"metadata": {"name": format!("d-{caller}-{n}")},
                                "data": {"k": "v"}})),
                        2,
                    ),
                };
                let start = Instant::now();
                match request.send().await {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        if response.bytes().await.is_err() {
                            dropped.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        let took = start.elapsed();
                        if status >= 500 {
                            server_errors.fetch_add(1, Ordering::Relaxed);
                        }
                        match (kind, status) {
                            (1, 201) => {
                                stored_proxy.fetch_add(1, Ordering::Relaxed);
                                writes_proxy.push(took);
                            }
                            (2, 201) => {
                                stored_direct.fetch_add(1, Ordering::Relaxed);
                                writes_direct.push(took);
                            }
                            (0, _) => reads.push(took),
                            _ => {}
                        }
                    }
                    Err(_) => {
                        dropped.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            (writes_proxy, writes_direct, reads)
        }
    });
    let results = futures::future::join_all(tasks).await;
    let (mut proxy, mut direct, mut reads) = (Vec::new(), Vec::new(), Vec::new());
    for (p, d, r) in results {
        proxy.extend(p);
        direct.extend(d);
        reads.extend(r);
    }
    proxy.sort();
    direct.sort();
    reads.sort();
    // Every write answered 201 is stored, once.
    let client = client_of(INSTANCE, url, token).await;
    let stored = Api::<k8s_openapi::api::core::v1::ConfigMap>::all(client)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|c| {
            c.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("p-") || n.starts_with("d-"))
        })
        .count();
    let answered = stored_proxy.load(Ordering::Relaxed) + stored_direct.load(Ordering::Relaxed);
    println!("BENCH load_callers={callers}");
    println!("BENCH load_seconds={seconds}");
    println!(
        "BENCH load_requests={}",
        proxy.len() + direct.len() + reads.len()
    );
    println!(
        "BENCH load_server_errors={}",
        server_errors.load(Ordering::Relaxed)
    );
    println!(
        "BENCH load_dropped_connections={}",
        dropped.load(Ordering::Relaxed)
    );
    println!("BENCH load_writes_answered_201={answered}");
    println!("BENCH load_writes_stored={stored}");
    println!("BENCH load_read_p50_ms={:.1}", ms(percentile(&reads, 50.0)));
    println!("BENCH load_read_p99_ms={:.1}", ms(percentile(&reads, 99.0)));
    let (p99_proxy, p99_direct) = (ms(percentile(&proxy, 99.0)), ms(percentile(&direct, 99.0)));
    println!(
        "BENCH load_write_proxy_p50_ms={:.1}",
        ms(percentile(&proxy, 50.0))
    );
    println!("BENCH load_write_proxy_p99_ms={p99_proxy:.1}");
    println!(
        "BENCH load_write_direct_p50_ms={:.1}",
        ms(percentile(&direct, 50.0))
    );
    println!("BENCH load_write_direct_p99_ms={p99_direct:.1}");
    println!(
        "BENCH load_write_p99_proxy_over_direct={:.2}",
        p99_proxy / p99_direct.max(0.001)
    );
}

/// Whether `KAIRSHIP_BENCH_REQ_PARTS` (default: every part) names `part`.
fn part_runs(part: &str) -> bool {
    std::env::var("KAIRSHIP_BENCH_REQ_PARTS")
        .map(|parts| parts.split(',').any(|p| p.trim() == part))
        .unwrap_or(true)
}

async fn parent() {
    let count = env_number("KAIRSHIP_BENCH_REQ_DEPLOYMENTS", 5000) as usize;
    let settle = env_number("KAIRSHIP_BENCH_REQ_SETTLE_S", 30);
    let (mut sandbox, mut lines) = spawn_child(&format!("sandbox {count}"));
    let line = lines.next().unwrap().unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let ["INSTANCE", url, token] = words.as_slice() else {
        panic!("unexpected line from the sandbox process: {line}");
    };
    let (url, token) = ((*url).to_owned(), (*token).to_owned());

    if part_runs("lists") {
        lists(&url, &token, count).await;
    }

    for race in [false, true].into_iter().filter(|_| part_runs("apiserver")) {
        let name = if race { "raced" } else { "synced" };
        let out = run_child(&format!("apiserver {url} {token} {race} {settle}"));
        let synced = value_of(&out, "RSS_SYNCED ")[0];
        let settled = value_of(&out, "RSS_SETTLED ")[0];
        println!("BENCH apiserver_rss_{name}_mib={:.1}", mib(synced));
        println!(
            "BENCH apiserver_rss_{name}_after_{settle}s_mib={:.1}",
            mib(settled)
        );
    }

    if part_runs("controller") {
        let out = run_child(&format!("controller {url} {token}"));
        let rss = value_of(&out, "RSS ");
        println!(
            "BENCH controller_statistics_cached_deployments={}",
            value_of(&out, "CACHED ")[0]
        );
        println!("BENCH controller_statistics_rss_mib={:.1}", mib(rss[0]));
        println!(
            "BENCH controller_statistics_rss_growth_mib={:.1}",
            mib(rss[0].saturating_sub(rss[1]))
        );
    }

    if part_runs("load") {
        load(&url, &token).await;
    }

    drop(sandbox.stdin.take());
    let _ = sandbox.wait();
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let spec = std::env::var(CHILD_ENV).ok();
    let words: Vec<&str> = spec.as_deref().unwrap_or("").split_whitespace().collect();
    match words.as_slice() {
        [] => runtime.block_on(parent()),
        ["sandbox", count] => runtime.block_on(sandbox_child(count.parse().unwrap())),
        ["apiserver", url, token, race, settle] => runtime.block_on(apiserver_child(
            url,
            token,
            *race == "true",
            Duration::from_secs(settle.parse().unwrap()),
        )),
        ["controller", url, token] => runtime.block_on(controller_child(url, token)),
        _ => panic!("unknown {CHILD_ENV}: {spec:?}"),
    }
}
