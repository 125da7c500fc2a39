//! The async runtime a binary runs on, sized by a flag.
//!
//! A controller's work per event is small (parse, compare, one request), so on a host whose
//! cores are busy with other processes a multi-threaded runtime spends a good share of its
//! CPU handing tasks between threads and waking parked workers. One thread avoids that;
//! more threads help only when one core is not enough.

use tokio::runtime::{Builder, Runtime};

/// A runtime with timers and I/O: `threads == 1` runs every task on the calling thread,
/// `threads > 1` on that many worker threads, `threads == 0` on one worker per CPU.
pub fn build(threads: usize) -> std::io::Result<Runtime> {
    let mut builder = match threads {
        1 => Builder::new_current_thread(),
        _ => Builder::new_multi_thread(),
    };
    if threads > 1 {
        builder.worker_threads(threads);
    }
    builder.enable_all().build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::runtime::RuntimeFlavor;

    #[test]
    fn threads_choose_the_flavor_and_size() {
        let cases = [
            (1, RuntimeFlavor::CurrentThread, Some(1)),
            (3, RuntimeFlavor::MultiThread, Some(3)),
            (0, RuntimeFlavor::MultiThread, None),
        ];
        for (threads, flavor, workers) in cases {
            let runtime = build(threads).unwrap();
            let (got_flavor, got_workers) = runtime.block_on(async {
                // Timers work: the runtime was built with them enabled.
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                let handle = tokio::runtime::Handle::current();
                (handle.runtime_flavor(), handle.metrics().num_workers())
            });
            assert_eq!(got_flavor, flavor, "threads={threads}");
            if let Some(workers) = workers {
                assert_eq!(got_workers, workers, "threads={threads}");
            } else {
                assert!(got_workers >= 1, "threads={threads}");
            }
        }
    }
}
