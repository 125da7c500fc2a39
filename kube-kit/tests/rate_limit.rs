//! The client-side QPS/burst limit in a kube client's stack, measured on a paused clock
//! against kube-sandbox.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::quiet_cluster;
use futures::future::join_all;
use http::{HeaderValue, Request, header};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::client::ClientBuilder;
use kube_kit::ratelimit::RateLimitLayer;
use tokio::time::Instant;

fn limited_client(cluster: &kube_sandbox::Cluster, layer: &RateLimitLayer) -> kube::Client {
    let auth = HeaderValue::from_str(&format!("Bearer {}", cluster.admin_token())).unwrap();
    let service = tower::ServiceBuilder::new()
        .map_request(move |mut req: Request<kube::client::Body>| {
            req.headers_mut()
                .insert(header::AUTHORIZATION, auth.clone());
            req
        })
        .service(cluster.router());
    ClientBuilder::new(service, "default")
        .with_layer(layer)
        .build()
}

#[tokio::test(start_paused = true)]
async fn sequential_requests_hold_the_configured_rate_after_the_burst() {
    let cluster = quiet_cluster("qps-seq");
    let (qps, burst, total) = (10.0, 5usize, 45usize);
    let api: Api<ConfigMap> = Api::namespaced(
        limited_client(&cluster, &RateLimitLayer::new(qps, burst as u32)),
        "default",
    );
    let start = Instant::now();
    let mut done = Vec::new();
    for _ in 0..total {
        api.get_opt("absent").await.unwrap();
        done.push(start.elapsed());
    }
    assert!(done[..burst].iter().all(Duration::is_zero), "{done:?}");
    for (k, at) in done.iter().enumerate().skip(burst) {
        let want = Duration::from_millis(100 * (k - burst + 1) as u64);
        assert_eq!(*at, want, "request {k}");
    }
    // Over the whole burst the rate is (total - burst) / elapsed = qps.
    let rate = (total - burst) as f64 / done[total - 1].as_secs_f64();
    assert!((rate - qps).abs() < 1e-9, "{rate}");
    cluster.shutdown();
}

#[tokio::test(start_paused = true)]
async fn concurrent_requests_queue_behind_the_limit_and_a_shared_layer_shares_it() {
    let cluster = quiet_cluster("qps-conc");
    let layer = RateLimitLayer::new(20.0, 10);
    let a: Api<ConfigMap> = Api::namespaced(limited_client(&cluster, &layer), "default");
    let b: Api<ConfigMap> = Api::namespaced(limited_client(&cluster, &layer), "default");
    let start = Instant::now();
    let requests = (0..70).map(|i| {
        let api = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move {
            api.get_opt("absent").await.unwrap();
            start.elapsed()
        }
    });
    let mut done = join_all(requests).await;
    done.sort();
    // 10 at once, then 60 more at 20 per second: the last one at 3 s, none earlier than
    // its slot.
    assert_eq!(done.iter().filter(|d| d.is_zero()).count(), 10);
    assert_eq!(*done.last().unwrap(), Duration::from_secs(3));
    for (k, at) in done.iter().enumerate().skip(10) {
        assert!(
            *at >= Duration::from_millis(50 * (k as u64 - 9)),
            "request {k} at {at:?}"
        );
    }
    // Any one-second window holds at most burst + qps requests.
    for (i, t) in done.iter().enumerate() {
        let window = done[i..]
            .iter()
            .filter(|u| **u - *t < Duration::from_secs(1))
            .count();
        assert!(window <= 30, "{window} requests in the second after {t:?}");
    }
    cluster.shutdown();
}
