//! The Kairship API: one service, served over REST and gRPC.
