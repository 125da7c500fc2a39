//! How the embedded cache's cost grows with the number of instances it caches: 1, 5 and 20
//! sandbox instances of 5,000 Deployments each (realistic objects: labels, annotations, a pod
//! template with a container, probes and resources, a status with conditions, the
//! managedFields the instance records), all cached by one `EmbeddedCacheBackend`.
//!
//! The sandboxes run in a child process (this same executable, started again with
//! `KAIRSHIP_BENCH_SANDBOX_CHILD` set) and are reached over loopback HTTP, so this process
//! holds the cache and nothing of the instances: its resident memory before the first cache
//! starts, and after the caches of the first N instances synced, gives the cache's memory per
//! cached Deployment. At each size, a LIST of one namespace's Deployments (100 of them) goes
//! through the native proxy over HTTP, as `kubectl` sends it, against the instances cached so
//! far in turn.
//!
//! Goal: at most 2 KiB of resident memory per cached Deployment beyond its JSON, and the LIST
//! p99 flat (within noise) as instances are added.
//!
//! `cargo bench -p kairship-core --bench cache_scale` runs 1 and 5 instances;
//! `KAIRSHIP_BENCH_CACHE_INSTANCES=1,5,20` adds the 20-instance size and
//! `KAIRSHIP_BENCH_CACHE_DEPLOYMENTS` changes the Deployments per instance (default 5,000).
//! The caches' clients are built as the API server builds them, asking for no gzip;
//! `KAIRSHIP_BENCH_CACHE_GZIP=1` has them ask for it as client-go does, so that each page of a
//! cache's list over 128 KiB comes gzipped (docs/benchmarks.md, "before and after the API's
//! reorganisation by feature", measures what that costs a first sync).
//! Prints `BENCH name=value` lines.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kairship_core::access::AllowAll;
use kairship_core::auth::StaticTokenAuthenticator;
use kairship_core::proxy::{ProxyState, proxy_routes};
use kairship_core::router::{
    DirectBackend, EmbeddedCacheBackend, InstanceWriter, ReadBackend, SplitRouter,
    StaticInstanceClients,
};
use kube::Api;
use kube::api::ListParams;
use kube::core::{DynamicObject, TypeMeta};
use support::{
    InstanceGzip, deployments, fill_deployments, instance_client_of, ms, namespace_of, percentile,
    rss_bytes, until_stdin_closes,
};

const CHILD_ENV: &str = "KAIRSHIP_BENCH_SANDBOX_CHILD";
const INSTANCES_ENV: &str = "KAIRSHIP_BENCH_CACHE_INSTANCES";
const DEPLOYMENTS_ENV: &str = "KAIRSHIP_BENCH_CACHE_DEPLOYMENTS";
const GZIP_ENV: &str = "KAIRSHIP_BENCH_CACHE_GZIP";
const LIST_ROUNDS: usize = 400;
const TOKEN: &str = "bench-token";

fn env_sizes() -> (Vec<usize>, usize) {
    let sizes = std::env::var(INSTANCES_ENV)
        .unwrap_or_else(|_| "1,5".into())
        .split(',')
        .map(|s| s.trim().parse::<usize>().unwrap())
        .collect::<Vec<_>>();
    let deployments = std::env::var(DEPLOYMENTS_ENV)
        .map(|s| s.trim().parse().unwrap())
        .unwrap_or(5_000);
    (sizes, deployments)
}

/// The child: fills `instances` sandboxes with `per_instance` Deployments, serves them, prints
/// `INSTANCE <name> <url> <token>` for each, the average JSON size of a Deployment as the
/// instance returns it, then `READY`, and lives until its stdin closes.
async fn child(instances: usize, per_instance: usize) {
    let rss_before = rss_bytes();
    let fill_start = Instant::now();
    let mut clusters = Vec::new();
    for i in 0..instances {
        clusters.push(kube_sandbox::Cluster::new(&format!("karmada-{i:02}")));
    }
    let fills = clusters.iter().map(|cluster| {
        let client = cluster.client();
        async move { fill_deployments(&client, per_instance).await }
    });
    futures::future::join_all(fills).await;
    let fill = fill_start.elapsed();
    // The JSON of each object as the cache renders it (with apiVersion and kind).
    let api: Api<DynamicObject> = Api::all_with(clusters[0].client(), &deployments());
    let listed = api.list(&ListParams::default()).await.unwrap();
    let total: usize = listed
        .items
        .into_iter()
        .map(|mut o| {
            o.types = Some(TypeMeta {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
            });
            serde_json::to_vec(&o).unwrap().len()
        })
        .sum();
    let mut out = std::io::stdout().lock();
    writeln!(out, "FILL {}", fill.as_secs_f64()).unwrap();
    writeln!(out, "JSON_AVG {}", total / per_instance.max(1)).unwrap();
    writeln!(
        out,
        "SANDBOX_RSS_PER_OBJECT {}",
        (rss_bytes() - rss_before) / (instances * per_instance).max(1) as u64
    )
    .unwrap();
    let mut served = Vec::new();
    for cluster in &clusters {
        let s = cluster
            .serve(kube_sandbox::ServeOptions::default())
            .await
            .unwrap();
        writeln!(
            out,
            "INSTANCE {} {} {}",
            cluster.name(),
            s.url,
            cluster.admin_token()
        )
        .unwrap();
        served.push(s);
    }
    writeln!(out, "READY").unwrap();
    out.flush().unwrap();
    drop(out);
    until_stdin_closes().await;
    drop(served);
}

struct Sandboxes {
    process: std::process::Child,
    instances: Vec<(String, String, String)>,
    json_avg: u64,
}

fn start_sandboxes(instances: usize, per_instance: usize) -> Sandboxes {
    let mut process = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, format!("{instances}:{per_instance}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let reader = BufReader::new(process.stdout.take().unwrap());
    let mut found = Vec::new();
    let mut json_avg = 0;
    for line in reader.lines() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["FILL", secs] => println!(
                "BENCH cache_scale_fill_{}x{per_instance}_s={secs:.5}",
                instances
            ),
            ["JSON_AVG", bytes] => {
                json_avg = bytes.parse().unwrap();
                println!("BENCH deployment_json_avg_bytes={json_avg}");
            }
            ["SANDBOX_RSS_PER_OBJECT", bytes] => {
                println!("BENCH sandbox_rss_per_deployment_bytes={bytes}");
            }
            ["INSTANCE", name, url, token] => {
                found.push(((*name).to_owned(), (*url).to_owned(), (*token).to_owned()));
            }
            ["READY"] => break,
            _ => panic!("unexpected line from the sandbox process: {line}"),
        }
    }
    Sandboxes {
        process,
        instances: found,
        json_avg,
    }
}

async fn parent() {
    let (sizes, per_instance) = env_sizes();
    let most = sizes.iter().copied().max().unwrap_or(1);
    println!("BENCH cache_scale_deployments_per_instance={per_instance}");
    let gzip = match std::env::var(GZIP_ENV).as_deref() {
        Ok("1") => InstanceGzip::Asked,
        _ => InstanceGzip::AsTheApiServer,
    };
    println!(
        "BENCH cache_scale_instance_gzip={}",
        u8::from(gzip == InstanceGzip::Asked)
    );
    let sandboxes = start_sandboxes(most, per_instance);

    let mut clients = StaticInstanceClients::new();
    for (name, url, token) in &sandboxes.instances {
        clients = clients.with(name, instance_client_of(name, url, token, gzip).await);
    }
    let clients = Arc::new(clients);
    let cache = Arc::new(EmbeddedCacheBackend::new(clients.clone()));
    let router = Arc::new(SplitRouter::new(
        cache.clone(),
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients.clone())),
    ));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let state = ProxyState::new(
        router.clone(),
        clients.clone(),
        Arc::new(StaticTokenAuthenticator::parse(&format!("{TOKEN},bench,1")).unwrap()),
        Arc::new(AllowAll),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_addr = listener.local_addr().unwrap();
    tokio::spawn(support::serve_without_delay(listener, proxy_routes(state)));
    let http = reqwest::Client::new();
    let url = |instance: &str, ns: &str| {
        format!(
            "http://{proxy_addr}/apis/kairship.io/v1alpha1/instances/{instance}/proxy/apis/apps/v1/namespaces/{ns}/deployments"
        )
    };
    let in_namespace = |ns: &str| (0..per_instance).filter(|i| namespace_of(*i) == ns).count();
    let list = |instance: String, ns: String| {
        let per_namespace = in_namespace(&ns);
        let http = http.clone();
        let url = url(&instance, &ns);
        async move {
            let start = Instant::now();
            let response = http.get(url).bearer_auth(TOKEN).send().await.unwrap();
            assert_eq!(response.status(), 200);
            let body = response.bytes().await.unwrap();
            let took = start.elapsed();
            let list: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(
                list["items"].as_array().map(Vec::len),
                Some(per_namespace),
                "{instance}/{ns}"
            );
            took
        }
    };
    // Warm the proxy's discovery of every instance, so that the baseline holds it.
    for (name, _, _) in &sandboxes.instances {
        let discovered = http
            .get(format!(
                "http://{proxy_addr}/apis/kairship.io/v1alpha1/instances/{name}/proxy/apis/apps/v1"
            ))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(discovered.status(), 200);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let baseline = rss_bytes();

    let mut cached = 0;
    for &size in &sizes {
        let sync_start = Instant::now();
        let starting: Vec<String> = sandboxes.instances[cached..size]
            .iter()
            .map(|(name, _, _)| name.clone())
            .collect();
        for name in &starting {
            while !cache.synced(name, &deployments()).await {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        let synced = sync_start.elapsed();
        cached = size;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let grown = rss_bytes().saturating_sub(baseline);
        let objects = (size * per_instance) as u64;
        let per_object = grown / objects;
        println!(
            "BENCH cache_sync_{size}_ms={:.0} ({} new instances)",
            ms(synced),
            starting.len()
        );
        println!(
            "BENCH cache_rss_growth_{size}_mib={:.1}",
            grown as f64 / 1048576.0
        );
        println!("BENCH cache_rss_per_deployment_bytes_{size}={per_object}");
        println!(
            "BENCH cache_overhead_beyond_json_bytes_{size}={}",
            per_object as i64 - sandboxes.json_avg as i64
        );

        // LISTs of one namespace, over every instance cached so far in turn.
        let mut samples = Vec::with_capacity(LIST_ROUNDS);
        for round in 0..LIST_ROUNDS + 20 {
            let instance = sandboxes.instances[round % size].0.clone();
            let ns = namespace_of(round * 7);
            let took = list(instance, ns).await;
            if round >= 20 {
                samples.push(took);
            }
        }
        samples.sort();
        println!(
            "BENCH cached_list_p50_ms_{size}={:.2}",
            ms(percentile(&samples, 50.0))
        );
        println!(
            "BENCH cached_list_p99_ms_{size}={:.2}",
            ms(percentile(&samples, 99.0))
        );
    }
    let mut process = sandboxes.process;
    drop(process.stdin.take());
    let _ = process.wait();
}

fn main() {
    let child_sizes = std::env::var(CHILD_ENV).ok().map(|spec| {
        let (a, b) = spec.split_once(':').unwrap();
        (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap())
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    match child_sizes {
        Some((instances, per_instance)) => runtime.block_on(child(instances, per_instance)),
        None => runtime.block_on(parent()),
    }
}
