//! Karmada's server-side behaviour for kube-sandbox clusters holding Karmada's resource types,
//! so that `kairship sandbox` and the tests meet what a real Karmada serves.

pub mod cluster_proxy;
