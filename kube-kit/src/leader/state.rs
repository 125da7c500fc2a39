//! The leadership a candidate believes it has, as [`super::LeaseElector`] publishes it and
//! readiness checks read it.

/// What a candidate currently believes about its leadership.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaderState {
    /// No lease round trip has completed yet.
    Starting,
    /// Not leading; `holder` is the current holder when known.
    Standby {
        /// Identity of the holder, if the lease is held by someone else.
        holder: Option<String>,
    },
    /// This candidate holds the lease.
    Leading,
    /// Stepped down because the lease could not be renewed before the renew deadline; stays
    /// here until the lease can be read again.
    Lost,
    /// The elector has stopped (the lease was released if it was held).
    Stopped,
}

impl LeaderState {
    /// Whether this candidate holds the lease.
    pub fn is_leading(&self) -> bool {
        matches!(self, Self::Leading)
    }

    /// Whether a leader-elected process in this state should report ready: a standby is
    /// ready (it can take over at once), one that lost its lease to API errors is not.
    pub fn is_ready(&self) -> bool {
        matches!(self, Self::Leading | Self::Standby { .. })
    }
}
