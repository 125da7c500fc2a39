//! Picking local ports for servers that need a run of them (one per virtual node, say).

use std::net::{Ipv4Addr, TcpListener};
use std::ops::RangeInclusive;

/// Where runs of ports are looked for: below Linux's ephemeral ports (32768+), so that no
/// outgoing connection holds one of them (a listener cannot bind a port a connection uses).
pub const PORT_RUNS: RangeInclusive<u16> = 20000..=32767;

/// A run of `count` ports on 127.0.0.1 that are all free now, within [`PORT_RUNS`]; the
/// search starts at a place derived from `seed` (say, the process id), so that processes
/// side by side look in different places. `None` when no run is free.
pub fn free_port_run(count: u16, seed: u32) -> Option<RangeInclusive<u16>> {
    let count = count.max(1);
    let first = u32::from(*PORT_RUNS.start());
    let slots = (u32::from(*PORT_RUNS.end()) - first + 1) / u32::from(count);
    if slots == 0 {
        return None;
    }
    let start = seed.wrapping_mul(2_654_435_761) % slots;
    (0..slots).find_map(|i| {
        let slot = (start + i) % slots;
        let base = u16::try_from(first + slot * u32::from(count)).ok()?;
        let run = base..=base + (count - 1);
        // Every port of the run must bind now; the listeners close again at once.
        let bound: Vec<TcpListener> = run
            .clone()
            .map_while(|port| TcpListener::bind((Ipv4Addr::LOCALHOST, port)).ok())
            .collect();
        (bound.len() == usize::from(count)).then_some(run)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_free_and_inside_the_range() {
        let run = free_port_run(10, std::process::id()).unwrap();
        assert_eq!(run.end() - run.start(), 9);
        assert!(PORT_RUNS.contains(run.start()) && PORT_RUNS.contains(run.end()));
        // A port held by a listener is never part of a run.
        let held = TcpListener::bind((Ipv4Addr::LOCALHOST, *run.start())).unwrap();
        let other = free_port_run(10, std::process::id()).unwrap();
        assert!(!other.contains(&held.local_addr().unwrap().port()));
        assert_eq!(free_port_run(u16::MAX, 1), None);
    }
}
