//! HTTP: the router that maps kube-apiserver's URLs onto the API server (and a pod's `log`,
//! `exec`, `attach` and `portforward` onto the simulator's node proxy), and serving it, with
//! the simulated kubelet API, over loopback HTTP(S) with TLS from the cluster CA.

pub mod gzip;
pub mod negotiate;
pub mod serve;
pub mod server;
pub mod tls;
