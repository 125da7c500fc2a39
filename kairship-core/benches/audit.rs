//! What the audit trail adds to a write: creates through the instance writer with and without
//! the [`AuditedWriter`] in one run, interleaved so that both see the same load, against one
//! sandbox instance served over loopback HTTP, the records kept by [`HostAuditLog`] in an
//! in-process sandbox host (target: `audit_write_p99_overhead_ms` <= 1 ms). The run ends once
//! every record is stored, so the background writer's work falls inside it.
//!
//! `cargo bench -p kairship-core --bench audit`; prints `BENCH name=value` lines.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kairship_core::access::{Caller, WriteIdentity};
use kairship_core::audit::log::HostAuditLog;
use kairship_core::audit::{AuditRecord, AuditedWriter, Retention};
use kairship_core::router::{InstanceWriter, ResourceTarget, StaticInstanceClients, WriteBackend};
use kube::api::{ListParams, PostParams};
use kube::core::ApiResource;
use kube::{Api, CustomResourceExt};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const INSTANCE: &str = "bench-instance";
const ROUNDS: usize = 1_000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn configmap(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"config": "x".repeat(512)}})
}

async fn run() {
    let host = kube_sandbox::Cluster::new("host");
    let crds: Api<CustomResourceDefinition> = Api::all(host.client());
    crds.create(&PostParams::default(), &AuditRecord::crd())
        .await
        .unwrap();
    let records: Api<AuditRecord> = Api::namespaced(host.client(), "default");
    // The CRD is served once the host lists its objects.
    while records.list(&ListParams::default()).await.is_err() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let cluster = kube_sandbox::Cluster::new(INSTANCE);
    let served = cluster
        .serve(kube_sandbox::ServeOptions::default())
        .await
        .unwrap();
    let http = served.client().await.unwrap();
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, http));
    let stop = CancellationToken::new();
    let trail = HostAuditLog::start(host.client(), "default", Retention::default(), stop.clone());
    let plain: Arc<dyn WriteBackend> = Arc::new(InstanceWriter::new(clients.clone()));
    let audited = AuditedWriter::new(
        Arc::new(InstanceWriter::new(clients)),
        Arc::new(trail.clone()),
        WriteIdentity::Instance,
    );
    let configmaps = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
    let target = ResourceTarget::namespaced(INSTANCE, configmaps, "default")
        .acting_as(Caller::new("bench", vec![]));

    let mut without = Vec::with_capacity(ROUNDS);
    let mut with = Vec::with_capacity(ROUNDS);
    let run_start = Instant::now();
    for i in 0..ROUNDS {
        // Alternate which goes first: the second write of a pair finds the connection warm.
        let order = if i % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for with_audit in order {
            let (writer, times, prefix): (&dyn WriteBackend, _, _) = if with_audit {
                (&audited, &mut with, "audited")
            } else {
                (plain.as_ref(), &mut without, "plain")
            };
            let body = configmap(&format!("{prefix}-{i:05}"));
            let start = Instant::now();
            writer
                .create(&target, &body, &PostParams::default())
                .await
                .unwrap();
            times.push(start.elapsed());
        }
    }
    // Every record stored before the numbers count.
    let mut stored = 0;
    for _ in 0..6_000 {
        stored = records
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len();
        if stored + trail.dropped() as usize >= ROUNDS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let elapsed = run_start.elapsed();
    without.sort();
    with.sort();
    let (p50_without, p99_without) = (percentile(&without, 50.0), percentile(&without, 99.0));
    let (p50_with, p99_with) = (percentile(&with, 50.0), percentile(&with, 99.0));
    println!("BENCH write_p50_ms={:.3}", ms(p50_without));
    println!("BENCH write_p99_ms={:.3}", ms(p99_without));
    println!("BENCH audited_write_p50_ms={:.3}", ms(p50_with));
    println!("BENCH audited_write_p99_ms={:.3}", ms(p99_with));
    println!(
        "BENCH audit_write_p99_overhead_ms={:.3}",
        ms(p99_with) - ms(p99_without)
    );
    println!(
        "BENCH audit_write_p99_ratio={:.3}",
        p99_with.as_secs_f64() / p99_without.as_secs_f64()
    );
    println!("BENCH audit_records_stored={stored}");
    println!("BENCH audit_records_dropped={}", trail.dropped());
    println!("BENCH audit_run_s={:.2}", elapsed.as_secs_f64());
    stop.cancel();
    cluster.shutdown();
    host.shutdown();
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}
