//! Prometheus metrics of the proxier: requests by endpoint and status code, and failed calls
//! to the worker cluster by endpoint.

use kube_kit::admin::Metrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// Labels of the request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// ClusterBinding name.
    pub binding: String,
    /// Endpoint (`containerLogs`, `exec`, `stats/summary`, ...).
    pub endpoint: String,
    /// HTTP status code answered (101 for upgraded streams).
    pub code: String,
}

/// Labels of the upstream error counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamLabels {
    /// ClusterBinding name.
    pub binding: String,
    /// Endpoint whose upstream call failed.
    pub endpoint: String,
}

/// The proxier's metrics; register once and share (cheap to clone).
#[derive(Clone, Debug, Default)]
pub struct ProxierMetrics {
    requests: Family<RequestLabels, Counter>,
    upstream_errors: Family<UpstreamLabels, Counter>,
}

impl ProxierMetrics {
    /// Creates the metrics and registers them into `metrics`.
    pub fn register(metrics: &Metrics) -> ProxierMetrics {
        let this = ProxierMetrics::default();
        metrics.with_registry(|registry| {
            registry.register(
                "kubeocean_proxier_requests",
                "Requests to the kubelet API of virtual nodes, by endpoint and status code",
                this.requests.clone(),
            );
            registry.register(
                "kubeocean_proxier_upstream_errors",
                "Failed calls to the worker or computing cluster while serving a request",
                this.upstream_errors.clone(),
            );
        });
        this
    }

    /// Counts one answered request.
    pub fn request(&self, binding: &str, endpoint: &str, code: u16) {
        self.requests
            .get_or_create(&RequestLabels {
                binding: binding.to_owned(),
                endpoint: endpoint.to_owned(),
                code: code.to_string(),
            })
            .inc();
    }

    /// Counts one failed upstream call.
    pub fn upstream_error(&self, binding: &str, endpoint: &str) {
        self.upstream_errors
            .get_or_create(&UpstreamLabels {
                binding: binding.to_owned(),
                endpoint: endpoint.to_owned(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_exported() {
        let registry = Metrics::new();
        let metrics = ProxierMetrics::register(&registry);
        metrics.request("b1", "exec", 101);
        metrics.request("b1", "exec", 101);
        metrics.request("b1", "containerLogs", 404);
        metrics.upstream_error("b1", "stats/summary");
        let text = registry.encode().unwrap();
        for line in [
            "kubeocean_proxier_requests_total{binding=\"b1\",endpoint=\"exec\",code=\"101\"} 2",
            "kubeocean_proxier_requests_total{binding=\"b1\",endpoint=\"containerLogs\",code=\"404\"} 1",
            "kubeocean_proxier_upstream_errors_total{binding=\"b1\",endpoint=\"stats/summary\"} 1",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
