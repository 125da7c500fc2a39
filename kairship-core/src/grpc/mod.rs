//! The gRPC adapters of the Kairship API.
