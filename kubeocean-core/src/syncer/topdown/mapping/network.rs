//! In-cluster networking of a physical pod: a mapped pod must find the computing cluster's
//! DNS and API server, not the worker's, since it holds a computing-cluster token and its
//! Service names are the computing cluster's.
//!
//! As upstream Kubeocean does:
//! - `dnsPolicy: ClusterFirst` (and `ClusterFirstWithHostNet`) becomes `None` with the
//!   computing cluster's DNS as nameserver, searches `<ns>.svc.cluster.local svc.cluster.local
//!   cluster.local` and `ndots:5`; `None` and `Default` are kept;
//! - hostAliases send `kubernetes`, `kubernetes.default`, `kubernetes.default.svc` and
//!   `kubernetes.default.svc.cluster.local` to the computing API server;
//! - `KUBERNETES_SERVICE_HOST` / `KUBERNETES_SERVICE_PORT` point at it, and `HOSTNAME` is the
//!   virtual pod's name, in every container and init container.
//!
//! **(ours)** Where upstream overwrites, the user's own choice wins: a `dnsConfig` the pod
//! sets is merged after ours (its nameservers, searches and options are kept, its `ndots`
//! wins), and an environment variable the container sets itself is left alone. A
//! `ClusterFirst` pod on the host network keeps the node's DNS, as the kubelet gives it.

use k8s_openapi::api::core::v1::{
    EnvVar, HostAlias, PodDNSConfig, PodDNSConfigOption, PodSpec, Service,
};

/// DNS domain of the computing cluster.
pub const CLUSTER_DOMAIN: &str = "cluster.local";
/// Names of the API server that mapped pods resolve through hostAliases (upstream's list).
pub const API_SERVER_HOSTNAMES: [&str; 4] = [
    "kubernetes.default.svc",
    "kubernetes.default",
    "kubernetes",
    "kubernetes.default.svc.cluster.local",
];
/// Environment variable: address of the API server.
pub const ENV_SERVICE_HOST: &str = "KUBERNETES_SERVICE_HOST";
/// Environment variable: port of the API server.
pub const ENV_SERVICE_PORT: &str = "KUBERNETES_SERVICE_PORT";
/// Environment variable: the pod's hostname, which would otherwise be the physical name.
pub const ENV_HOSTNAME: &str = "HOSTNAME";
/// `ndots` of the rewritten DNS configuration (the kubelet's for ClusterFirst).
pub const NDOTS: &str = "5";
/// Most nameservers a pod may list (Kubernetes validation).
const MAX_NAMESERVERS: usize = 3;

/// The computing cluster's API server as mapped pods reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiServerAddress {
    /// IP address.
    pub host: String,
    /// Port.
    pub port: i32,
}

/// Where mapped pods find the computing cluster's DNS and API server; `None` where the
/// Service that says so is missing or unusable (that part of the rewrite is skipped).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InClusterNetwork {
    /// Nameserver address of the computing cluster's DNS.
    pub dns_server: Option<String>,
    /// The computing cluster's API server.
    pub api_server: Option<ApiServerAddress>,
}

/// Why a Service cannot tell where mapped pods find something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceAddressError {
    /// The Service has neither a load-balancer IP nor a cluster IP.
    #[error("has no load-balancer ingress IP and no cluster IP")]
    NoAddress,
    /// The Service has no port.
    #[error("has no port")]
    NoPort,
}

/// The address of `service` as the worker reaches it: its first load-balancer ingress IP
/// (upstream reads only that: an intranet load balancer in front of the computing cluster's
/// DNS or API server), else **(ours)** its cluster IP, for clusters whose Service range is
/// routed between them.
pub fn service_address(service: &Service) -> Result<String, ServiceAddressError> {
    let ingress = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .and_then(|i| i.first())
        .and_then(|i| i.ip.clone())
        .filter(|ip| !ip.is_empty());
    let cluster_ip = || {
        service
            .spec
            .as_ref()
            .and_then(|s| s.cluster_ip.clone())
            .filter(|ip| !ip.is_empty() && ip != "None")
    };
    ingress
        .or_else(cluster_ip)
        .ok_or(ServiceAddressError::NoAddress)
}

/// The API server address `service` gives: [`service_address`] and its first port (as
/// upstream).
pub fn api_server_address(service: &Service) -> Result<ApiServerAddress, ServiceAddressError> {
    let host = service_address(service)?;
    let port = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .and_then(|p| p.first())
        .map(|p| p.port)
        .filter(|p| *p > 0)
        .ok_or(ServiceAddressError::NoPort)?;
    Ok(ApiServerAddress { host, port })
}

/// Rewrites `spec` of the physical pod of virtual pod `namespace/name` so that it uses the
/// computing cluster's DNS and API server (the parts `network` knows).
pub fn apply_in_cluster_network(
    spec: &mut PodSpec,
    namespace: &str,
    name: &str,
    network: &InClusterNetwork,
) {
    if let Some(dns) = &network.dns_server {
        rewrite_dns(spec, namespace, dns);
    }
    let mut env = vec![(ENV_HOSTNAME, name.to_owned())];
    if let Some(api) = &network.api_server {
        add_api_server_aliases(spec, &api.host);
        env.push((ENV_SERVICE_HOST, api.host.clone()));
        env.push((ENV_SERVICE_PORT, api.port.to_string()));
    }
    for container in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        for (var, value) in &env {
            set_env_unless_set(&mut container.env, var, value);
        }
    }
}

/// The DNS rewrite alone: a pod that uses cluster DNS gets `nameserver`, the computing
/// cluster's search path for `namespace` and `ndots:5`, merged with its own `dnsConfig`.
pub fn rewrite_dns(spec: &mut PodSpec, namespace: &str, nameserver: &str) {
    let policy = spec.dns_policy.as_deref().unwrap_or("ClusterFirst");
    let host_network = spec.host_network == Some(true);
    let cluster_dns = match policy {
        "ClusterFirstWithHostNet" => true,
        // The kubelet gives a host-network ClusterFirst pod the node's DNS.
        "ClusterFirst" => !host_network,
        _ => false,
    };
    if !cluster_dns {
        return;
    }
    let user = spec.dns_config.take().unwrap_or_default();
    let mut nameservers = vec![nameserver.to_owned()];
    push_new(&mut nameservers, user.nameservers.into_iter().flatten());
    nameservers.truncate(MAX_NAMESERVERS);
    let mut searches = vec![
        format!("{namespace}.svc.{CLUSTER_DOMAIN}"),
        format!("svc.{CLUSTER_DOMAIN}"),
        CLUSTER_DOMAIN.to_owned(),
    ];
    push_new(&mut searches, user.searches.into_iter().flatten());
    let user_options = user.options.unwrap_or_default();
    let mut options = Vec::new();
    if !user_options
        .iter()
        .any(|o| o.name.as_deref() == Some("ndots"))
    {
        options.push(PodDNSConfigOption {
            name: Some("ndots".to_owned()),
            value: Some(NDOTS.to_owned()),
        });
    }
    options.extend(user_options);
    spec.dns_policy = Some("None".to_owned());
    spec.dns_config = Some(PodDNSConfig {
        nameservers: Some(nameservers),
        searches: Some(searches),
        options: Some(options),
    });
}

/// Adds the hostAlias of the API server names (once).
fn add_api_server_aliases(spec: &mut PodSpec, host: &str) {
    let alias = HostAlias {
        ip: host.to_owned(),
        hostnames: Some(
            API_SERVER_HOSTNAMES
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
        ),
    };
    let aliases = spec.host_aliases.get_or_insert_with(Vec::new);
    if !aliases.contains(&alias) {
        aliases.push(alias);
    }
}

/// Sets `name=value` unless the container sets `name` itself.
fn set_env_unless_set(env: &mut Option<Vec<EnvVar>>, name: &str, value: &str) {
    let env = env.get_or_insert_with(Vec::new);
    if env.iter().any(|e| e.name == name) {
        return;
    }
    env.push(EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    });
}

fn push_new(into: &mut Vec<String>, items: impl IntoIterator<Item = String>) {
    for item in items {
        if !into.contains(&item) {
            into.push(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        Container, EnvVarSource, LoadBalancerIngress, LoadBalancerStatus, ObjectFieldSelector,
        ServicePort, ServiceSpec, ServiceStatus,
    };

    use super::*;

    const DNS: &str = "10.0.0.10";

    fn network() -> InClusterNetwork {
        InClusterNetwork {
            dns_server: Some(DNS.to_owned()),
            api_server: Some(ApiServerAddress {
                host: "10.0.0.1".to_owned(),
                port: 443,
            }),
        }
    }

    fn spec(policy: Option<&str>, host_network: bool, config: Option<PodDNSConfig>) -> PodSpec {
        PodSpec {
            dns_policy: policy.map(str::to_owned),
            host_network: host_network.then_some(true),
            dns_config: config,
            containers: vec![Container {
                name: "app".to_owned(),
                ..Container::default()
            }],
            ..PodSpec::default()
        }
    }

    fn option(name: &str, value: &str) -> PodDNSConfigOption {
        PodDNSConfigOption {
            name: Some(name.to_owned()),
            value: Some(value.to_owned()),
        }
    }

    fn ours(
        extra_ns: &[&str],
        extra_search: &[&str],
        options: Vec<PodDNSConfigOption>,
    ) -> PodDNSConfig {
        let mut nameservers = vec![DNS.to_owned()];
        nameservers.extend(extra_ns.iter().map(|s| (*s).to_owned()));
        let mut searches: Vec<String> = [
            "team-a.svc.cluster.local",
            "svc.cluster.local",
            "cluster.local",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        searches.extend(extra_search.iter().map(|s| (*s).to_owned()));
        PodDNSConfig {
            nameservers: Some(nameservers),
            searches: Some(searches),
            options: Some(options),
        }
    }

    /// (case, policy, hostNetwork, user dnsConfig, expected policy, expected dnsConfig)
    type DnsCase = (
        &'static str,
        Option<&'static str>,
        bool,
        Option<PodDNSConfig>,
        &'static str,
        Option<PodDNSConfig>,
    );

    #[test]
    fn dns_policy_cases() {
        let user = PodDNSConfig {
            nameservers: Some(vec![
                "1.1.1.1".into(),
                DNS.into(),
                "8.8.8.8".into(),
                "9.9.9.9".into(),
            ]),
            searches: Some(vec!["corp.example".into(), "cluster.local".into()]),
            options: Some(vec![option("ndots", "2"), option("timeout", "1")]),
        };
        let user_no_ndots = PodDNSConfig {
            nameservers: None,
            searches: None,
            options: Some(vec![option("edns0", "")]),
        };
        let ndots5 = || vec![option("ndots", NDOTS)];
        // (case, policy, hostNetwork, user dnsConfig, expected policy, expected dnsConfig)
        let cases: Vec<DnsCase> = vec![
            (
                "unset means ClusterFirst",
                None,
                false,
                None,
                "None",
                Some(ours(&[], &[], ndots5())),
            ),
            (
                "ClusterFirst",
                Some("ClusterFirst"),
                false,
                None,
                "None",
                Some(ours(&[], &[], ndots5())),
            ),
            (
                "ClusterFirstWithHostNet",
                Some("ClusterFirstWithHostNet"),
                true,
                None,
                "None",
                Some(ours(&[], &[], ndots5())),
            ),
            (
                "ClusterFirst on the host network keeps the node's DNS",
                Some("ClusterFirst"),
                true,
                None,
                "ClusterFirst",
                None,
            ),
            (
                "None kept",
                Some("None"),
                false,
                Some(user.clone()),
                "None",
                Some(user.clone()),
            ),
            (
                "Default kept",
                Some("Default"),
                false,
                None,
                "Default",
                None,
            ),
            (
                "user dnsConfig merged: nameservers capped at 3, duplicates dropped, user ndots wins",
                Some("ClusterFirst"),
                false,
                Some(user.clone()),
                "None",
                Some(ours(
                    &["1.1.1.1", "8.8.8.8"],
                    &["corp.example"],
                    vec![option("ndots", "2"), option("timeout", "1")],
                )),
            ),
            (
                "user options without ndots keep ours first",
                Some("ClusterFirst"),
                false,
                Some(user_no_ndots),
                "None",
                Some(ours(
                    &[],
                    &[],
                    vec![option("ndots", NDOTS), option("edns0", "")],
                )),
            ),
        ];
        for (case, policy, host_network, config, want_policy, want_config) in cases {
            let mut s = spec(policy, host_network, config);
            rewrite_dns(&mut s, "team-a", DNS);
            assert_eq!(
                s.dns_policy.as_deref().unwrap_or("ClusterFirst"),
                want_policy,
                "{case}"
            );
            assert_eq!(s.dns_config, want_config, "{case}");
        }
    }

    #[test]
    fn host_aliases_name_the_api_server_once() {
        let mut s = spec(None, false, None);
        s.host_aliases = Some(vec![HostAlias {
            ip: "192.168.1.1".into(),
            hostnames: Some(vec!["db".into()]),
        }]);
        apply_in_cluster_network(&mut s, "team-a", "web", &network());
        apply_in_cluster_network(&mut s, "team-a", "web", &network());
        let aliases = s.host_aliases.unwrap();
        assert_eq!(
            aliases.len(),
            2,
            "the user's alias is kept, ours added once"
        );
        assert_eq!(aliases[0].ip, "192.168.1.1");
        assert_eq!(aliases[1].ip, "10.0.0.1");
        assert_eq!(
            aliases[1].hostnames.as_deref().unwrap(),
            API_SERVER_HOSTNAMES.map(str::to_owned)
        );
    }

    fn value(v: &str) -> EnvVar {
        EnvVar {
            name: String::new(),
            value: Some(v.to_owned()),
            value_from: None,
        }
    }

    #[test]
    fn env_precedence() {
        let from_field = EnvVar {
            name: ENV_SERVICE_HOST.into(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "status.hostIP".into(),
                    api_version: None,
                }),
                ..EnvVarSource::default()
            }),
        };
        // (case, the container's own env, expected host, port and hostname variables)
        let cases: Vec<(&str, Vec<EnvVar>, EnvVar, EnvVar, EnvVar)> = vec![
            (
                "nothing set: ours",
                vec![],
                value("10.0.0.1"),
                value("443"),
                value("web"),
            ),
            (
                "the user's host wins, the port is ours",
                vec![EnvVar {
                    name: ENV_SERVICE_HOST.into(),
                    ..value("api.example")
                }],
                value("api.example"),
                value("443"),
                value("web"),
            ),
            (
                "a valueFrom of the user wins too",
                vec![from_field.clone()],
                from_field.clone(),
                value("443"),
                value("web"),
            ),
            (
                "the user's port and hostname win",
                vec![
                    EnvVar {
                        name: ENV_SERVICE_PORT.into(),
                        ..value("6443")
                    },
                    EnvVar {
                        name: ENV_HOSTNAME.into(),
                        ..value("mine")
                    },
                ],
                value("10.0.0.1"),
                value("6443"),
                value("mine"),
            ),
        ];
        for (case, env, host, port, hostname) in cases {
            let mut s = spec(None, false, None);
            s.containers[0].env = Some(env.clone());
            s.init_containers = Some(vec![Container {
                name: "init".into(),
                env: Some(env),
                ..Container::default()
            }]);
            apply_in_cluster_network(&mut s, "team-a", "web", &network());
            let init = s.init_containers.clone().unwrap().remove(0);
            for container in [&s.containers[0], &init] {
                let get = |name: &str| {
                    let found = container
                        .env
                        .iter()
                        .flatten()
                        .filter(|e| e.name == name)
                        .collect::<Vec<_>>();
                    assert_eq!(
                        found.len(),
                        1,
                        "{case}: {name} set once in {}",
                        container.name
                    );
                    EnvVar {
                        name: String::new(),
                        ..found[0].clone()
                    }
                };
                let unnamed = |e: EnvVar| EnvVar {
                    name: String::new(),
                    ..e
                };
                assert_eq!(get(ENV_SERVICE_HOST), unnamed(host.clone()), "{case}");
                assert_eq!(get(ENV_SERVICE_PORT), unnamed(port.clone()), "{case}");
                assert_eq!(get(ENV_HOSTNAME), unnamed(hostname.clone()), "{case}");
            }
        }
    }

    #[test]
    fn a_missing_service_skips_its_part_only() {
        let mut s = spec(None, false, None);
        let only_dns = InClusterNetwork {
            dns_server: Some(DNS.into()),
            api_server: None,
        };
        apply_in_cluster_network(&mut s, "team-a", "web", &only_dns);
        assert_eq!(s.dns_policy.as_deref(), Some("None"));
        assert!(s.host_aliases.is_none());
        let names: Vec<&str> = s.containers[0]
            .env
            .iter()
            .flatten()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, [ENV_HOSTNAME]);

        let mut s = spec(None, false, None);
        apply_in_cluster_network(&mut s, "team-a", "web", &InClusterNetwork::default());
        assert_eq!(s.dns_policy, None);
        assert!(s.dns_config.is_none());
    }

    fn service(cluster_ip: Option<&str>, lb: Option<&str>, ports: &[i32]) -> Service {
        Service {
            spec: Some(ServiceSpec {
                cluster_ip: cluster_ip.map(str::to_owned),
                ports: Some(
                    ports
                        .iter()
                        .map(|p| ServicePort {
                            port: *p,
                            ..ServicePort::default()
                        })
                        .collect(),
                ),
                ..ServiceSpec::default()
            }),
            status: Some(ServiceStatus {
                load_balancer: Some(LoadBalancerStatus {
                    ingress: lb.map(|ip| {
                        vec![LoadBalancerIngress {
                            ip: Some(ip.into()),
                            ..LoadBalancerIngress::default()
                        }]
                    }),
                }),
                conditions: None,
            }),
            ..Service::default()
        }
    }

    #[test]
    fn service_addresses() {
        let cases = [
            (
                "load balancer first",
                service(Some("10.96.0.5"), Some("172.16.0.9"), &[443]),
                Ok("172.16.0.9"),
                Ok(443),
            ),
            (
                "cluster IP otherwise",
                service(Some("10.96.0.5"), None, &[6443, 443]),
                Ok("10.96.0.5"),
                Ok(6443),
            ),
            (
                "headless has no address",
                service(Some("None"), None, &[53]),
                Err(ServiceAddressError::NoAddress),
                Err(ServiceAddressError::NoAddress),
            ),
            (
                "no port",
                service(Some("10.96.0.5"), None, &[]),
                Ok("10.96.0.5"),
                Err(ServiceAddressError::NoPort),
            ),
        ];
        for (case, svc, address, port) in cases {
            assert_eq!(service_address(&svc), address.map(str::to_owned), "{case}");
            assert_eq!(api_server_address(&svc).map(|a| a.port), port, "{case}");
        }
    }
}
