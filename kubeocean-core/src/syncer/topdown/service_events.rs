//! How watch events of Services and EndpointSlices (both clusters) turn into keys of the
//! ServiceReflection queue ([`super::service_reflection`]), and what the in-cluster network
//! of mapped pods is ([`TopDown::in_cluster_network`]).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Resource;

use super::mapping::{
    InClusterNetwork, api_server_address, reflected_service_of, service_address, slice_service,
};
use super::service_reflection::NETWORK_KEY;
use super::state::TopDown;
use super::store::object_key;
use crate::syncer::config::SyncerConfig;
use crate::syncer::reflector::Change;

fn key_of<K: Resource>(obj: &K) -> String {
    let meta = obj.meta();
    object_key(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

impl TopDown {
    /// Where mapped pods find the computing cluster's DNS and API server, from the Services
    /// `config` names; the second value lists what is missing or unusable.
    pub fn in_cluster_network(&self, config: &SyncerConfig) -> (InClusterNetwork, Vec<String>) {
        let stores = self.stores();
        let mut problems = Vec::new();
        let dns = match stores.services.get(&config.dns_service.key()) {
            None => {
                problems.push(format!("DNS Service {} not found", config.dns_service));
                None
            }
            Some(svc) => match service_address(&svc) {
                Ok(address) => Some(address),
                Err(err) => {
                    problems.push(format!("DNS Service {} {err}", config.dns_service));
                    None
                }
            },
        };
        let api = match stores.services.get(&config.api_server_service.key()) {
            None => {
                problems.push(format!(
                    "API server Service {} not found",
                    config.api_server_service
                ));
                None
            }
            Some(svc) => match api_server_address(&svc) {
                Ok(address) => Some(address),
                Err(err) => {
                    problems.push(format!(
                        "API server Service {} {err}",
                        config.api_server_service
                    ));
                    None
                }
            },
        };
        (
            InClusterNetwork {
                dns_server: dns,
                api_server: api,
            },
            problems,
        )
    }

    /// Queues every Service known on either side, and the network check.
    pub(super) fn enqueue_all_services(&self) {
        let keys: BTreeSet<String> = {
            let stores = self.stores();
            stores
                .services
                .keys()
                .cloned()
                .chain(
                    stores
                        .physical_services
                        .values()
                        .filter_map(|s| reflected_service_of(&s.metadata))
                        .map(|(ns, name)| object_key(&ns, &name)),
                )
                .collect()
        };
        self.services.add_all(keys.iter().map(String::as_str));
        self.services.add(NETWORK_KEY);
    }

    /// Services of the computing cluster changed.
    pub(super) fn on_virtual_services(&self, config: &SyncerConfig, change: Change<Service>) {
        let network = [config.dns_service.key(), config.api_server_service.key()];
        let mut keys: Vec<String> = Vec::new();
        {
            let mut stores = self.stores_mut();
            match change {
                Change::Applied(svc) => {
                    keys.push(key_of(&svc));
                    stores.services.apply(svc);
                }
                Change::Deleted(svc) => {
                    keys.push(key_of(&svc));
                    stores.services.delete(&svc);
                }
                Change::Relisted(all) => {
                    keys.extend(all.iter().map(key_of));
                    let gone = stores.services.replace(all);
                    keys.extend(gone.iter().map(|s| key_of(s.as_ref())));
                }
            }
        }
        if keys.iter().any(|k| network.contains(k)) {
            self.services.add(NETWORK_KEY);
        }
        self.services.add_all(keys.iter().map(String::as_str));
    }

    /// EndpointSlices of the computing cluster changed: their Service is reflected again.
    pub(super) fn on_virtual_slices(&self, change: Change<EndpointSlice>) {
        let service_key = |s: &EndpointSlice| {
            let ns = s.metadata.namespace.as_deref().unwrap_or_default();
            slice_service(s).map(|svc| object_key(ns, svc))
        };
        let mut keys: Vec<String> = Vec::new();
        {
            let mut stores = self.stores_mut();
            match change {
                Change::Applied(slice) => {
                    keys.extend(service_key(&slice));
                    stores.endpoint_slices.apply(slice);
                }
                Change::Deleted(slice) => {
                    keys.extend(service_key(&slice));
                    stores.endpoint_slices.delete(&slice);
                }
                Change::Relisted(all) => {
                    keys.extend(all.iter().filter_map(service_key));
                    let gone = stores.endpoint_slices.replace(all);
                    keys.extend(gone.iter().filter_map(|s| service_key(s)));
                }
            }
        }
        self.services.add_all(keys.iter().map(String::as_str));
    }

    /// Our reflected Services or EndpointSlices in the worker changed: their virtual Service
    /// is reflected again (a copy deleted behind our back comes back, a stale one goes).
    pub(super) fn on_physical_reflections<K: Resource + Clone>(
        &self,
        change: Change<K>,
        store: impl Fn(&mut super::state::Stores) -> &mut super::store::ObjectStore<K>,
    ) {
        let owner = |o: &K| reflected_service_of(o.meta()).map(|(ns, name)| object_key(&ns, &name));
        let mut keys: Vec<String> = Vec::new();
        {
            let mut stores = self.stores_mut();
            match change {
                Change::Applied(obj) => {
                    keys.extend(owner(&obj));
                    store(&mut stores).apply(obj);
                }
                Change::Deleted(obj) => {
                    keys.extend(owner(&obj));
                    store(&mut stores).delete(&obj);
                }
                Change::Relisted(all) => {
                    keys.extend(all.iter().filter_map(owner));
                    let gone = store(&mut stores).replace(all);
                    keys.extend(gone.iter().filter_map(|o| owner(o)));
                }
            }
        }
        self.services.add_all(keys.iter().map(String::as_str));
    }
}
