//! The generated protobuf messages, server and client of `kairship.v1` (its own file, so the
//! conversions beside it import the messages without importing the module that serves them).

tonic::include_proto!("kairship.v1");
