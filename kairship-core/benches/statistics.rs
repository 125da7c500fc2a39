//! resource-statistics at scale: 20 instances x 50 member clusters, one member changing 100
//! times. Reports status writes issued per real change (target 1) and the time from a member's
//! status change to the updated `status.summary` on the host (target p99 <= 500 ms).
//!
//! `cargo bench -p kairship-core --bench statistics`; prints `BENCH name=value` lines.
#![allow(clippy::unwrap_used)]

mod support;

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;
use kairship_core::instance::{Instance, InstanceState};
use kube::Api;
use kube::api::PostParams;
use support::percentile;

const INSTANCES: usize = 20;
const MEMBERS: usize = 50;
const CHANGES: usize = 100;

async fn run() {
    let host = host().await;
    let hc = host.client();
    let mut karmadas = Vec::new();
    for i in 0..INSTANCES {
        let name = format!("bench-{i}");
        let karmada = KarmadaInstance::start(&name).await;
        for m in 0..MEMBERS {
            karmada
                .add_member(&Member::new(
                    &format!("m{m}"),
                    true,
                    (3, 3),
                    "8",
                    "32Gi",
                    "110",
                ))
                .await;
        }
        put_kubeconfig_secret(
            &hc,
            &format!("{name}-kubeconfig"),
            "kubeconfig",
            &karmada.served.kubeconfig_yaml,
        )
        .await;
        karmadas.push((name, karmada));
    }
    let mut config = fast_config();
    config.probe_interval = Duration::from_secs(1);
    let (ctx, stop) = start_manager(&hc, config);
    let instances: Api<Instance> = Api::all(hc.clone());
    for (name, _) in &karmadas {
        instances
            .create(&PostParams::default(), &adopt_instance(name))
            .await
            .unwrap();
    }
    let setup = Instant::now();
    for (name, _) in &karmadas {
        wait_state(&hc, name, InstanceState::Running, Duration::from_secs(120)).await;
        eventually("initial summary", Duration::from_secs(120), || async {
            let s = get_instance(&hc, name).await?.status?.summary?;
            (s.cluster_summary.total_num == MEMBERS as i32).then_some(())
        })
        .await;
    }
    println!("BENCH statistics_setup_ms={}", setup.elapsed().as_millis());

    let (target_name, target) = &karmadas[0];
    let writes_before = ctx.writes.statistics();
    let mut latencies = Vec::with_capacity(CHANGES);
    let mut member = Member::new("m0", true, (3, 3), "8", "32Gi", "110");
    for change in 0..CHANGES {
        let nodes = 4 + change as i32;
        member.nodes = (nodes, nodes);
        member.cpu = format!("{}", 9 + change);
        let expected_nodes = 3 * (MEMBERS as i32 - 1) + nodes;
        let started = Instant::now();
        target.set_member(&member).await;
        loop {
            let s = get_instance(&hc, target_name)
                .await
                .and_then(|i| i.status?.summary);
            if s.is_some_and(|s| s.node_summary.total_num == expected_nodes) {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "summary never followed change {change}"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        latencies.push(started.elapsed());
    }
    // Let any late duplicate write land before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let writes = ctx.writes.statistics() - writes_before;
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("BENCH statistics_instances={INSTANCES}");
    println!("BENCH statistics_members_per_instance={MEMBERS}");
    println!("BENCH statistics_changes={CHANGES}");
    println!("BENCH statistics_writes={writes}");
    println!(
        "BENCH statistics_writes_per_change={:.2}",
        writes as f64 / CHANGES as f64
    );
    println!(
        "BENCH statistics_latency_p50_ms={:.1}",
        ms(percentile(&latencies, 50.0))
    );
    println!(
        "BENCH statistics_latency_p99_ms={:.1}",
        ms(percentile(&latencies, 99.0))
    );
    println!(
        "BENCH statistics_latency_max_ms={:.1}",
        ms(percentile(&latencies, 100.0))
    );
    stop.cancel();
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}
