//! Host ports a physical node's own pods hold: the virtual node reserves them (see
//! `syncer::bottomup::hostport`) so that the computing cluster's scheduler does not send it
//! a pod asking for one of them.

use k8s_openapi::api::core::v1::Pod;

use crate::labels;

/// A host port in use: host IP (`0.0.0.0` for every address), protocol, port, and the
/// container port it forwards to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort {
    /// Host IP, `0.0.0.0` when the pod names none.
    pub host_ip: String,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: String,
    /// The host port.
    pub port: i32,
    /// The container port behind it.
    pub container_port: i32,
}

/// The host ports `pod` holds on its node: none for Kubeocean's own pods (their virtual pods
/// already hold them on the virtual node, as upstream counts them) and for finished pods.
pub fn host_ports_of(pod: &Pod) -> Vec<HostPort> {
    let managed = labels::is_managed(&pod.metadata);
    let finished = matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    );
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    if managed || finished {
        return Vec::new();
    }
    let mut ports: Vec<HostPort> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let port = p.host_port.filter(|h| *h > 0)?;
            Some(HostPort {
                host_ip: p
                    .host_ip
                    .clone()
                    .filter(|ip| !ip.is_empty())
                    .unwrap_or_else(|| "0.0.0.0".to_owned()),
                protocol: p.protocol.clone().unwrap_or_else(|| "TCP".to_owned()),
                port,
                container_port: p.container_port,
            })
        })
        .collect();
    ports.sort();
    ports
}

/// `ports` sorted, one entry per host IP, protocol and port (what a pod may list once).
pub fn distinct_host_ports(mut ports: Vec<HostPort>) -> Vec<HostPort> {
    ports.sort();
    ports.dedup_by(|a, b| a.host_ip == b.host_ip && a.protocol == b.protocol && a.port == b.port);
    ports
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(labels: serde_json::Value, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": { "name": "p", "labels": labels },
            "spec": {
                "containers": [{ "name": "a", "ports": [
                    { "containerPort": 80, "hostPort": 8080 },
                    { "containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1" },
                    { "containerPort": 9090 } ] }],
                "initContainers": [{ "name": "i", "ports": [{ "containerPort": 1, "hostPort": 7000 }] }],
            },
            "status": { "phase": phase },
        }))
        .unwrap()
    }

    #[test]
    fn which_host_ports_a_pod_holds() {
        let ports = host_ports_of(&pod(json!({}), "Running"));
        let summary: Vec<(&str, &str, i32)> = ports
            .iter()
            .map(|p| (p.host_ip.as_str(), p.protocol.as_str(), p.port))
            .collect();
        assert_eq!(
            summary,
            [
                ("0.0.0.0", "TCP", 7000),
                ("0.0.0.0", "TCP", 8080),
                ("10.0.0.1", "UDP", 53)
            ]
        );
        let ours = json!({ labels::MANAGED_BY: labels::MANAGED_BY_VALUE });
        assert!(host_ports_of(&pod(ours, "Running")).is_empty());
        assert!(host_ports_of(&pod(json!({}), "Succeeded")).is_empty());
        let twice = [ports.clone(), ports.clone()].concat();
        assert_eq!(distinct_host_ports(twice), ports);
    }
}
