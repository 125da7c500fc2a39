//! Emulations of Karmada's own controllers, for sandboxes and tests where no Karmada runs
//! (feature `karmada-sim`): they act on a Karmada-like API server as Karmada's controllers
//! would, so that what Kairship creates behaves as it does in a real instance.

pub mod cluster_status;
