//! What the benches that run a syncer child process share.

use kubeocean_core::syncer::SYNCER_RUNTIME_THREADS;
use tokio::runtime::Runtime;

/// The runtime of a bench process: a syncer child runs on the runtime `kubeocean syncer`
/// uses by default, the bench itself (sandbox clusters and clients) on one worker per CPU.
pub fn runtime(syncer_child: bool) -> Runtime {
    let threads = match syncer_child {
        true => SYNCER_RUNTIME_THREADS,
        false => 0,
    };
    match kube_kit::runtime::build(threads) {
        Ok(runtime) => runtime,
        Err(err) => panic!("cannot start a runtime: {err}"),
    }
}
