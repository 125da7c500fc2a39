//! The gRPC adapters of the Kairship API: `kairship.v1.KairshipService` (from
//! `proto/kairship/v1/kairship.proto`, compiled with protox), the standard health service
//! (`grpc.health.v1.Health`) and server reflection (`grpc.reflection.v1` and, for older
//! clients such as grpcurl before 1.8.8, `grpc.reflection.v1alpha`), as one axum router that
//! shares the REST port over HTTP/2. Reflection describes every one of these services.
//!
//! The service is a thin adapter over [`KairshipApi`]: the same authentication (bearer token
//! in the `authorization` metadata), the same request messages, the same errors (the gRPC
//! status code is the REST body's `code`), so REST and gRPC answer alike.

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;

use crate::access::Authenticator;
use crate::api::KairshipApi;
use crate::transport::{ServedOverTls, request_base_url};

pub mod applications;
pub mod audit;
pub mod convert;
pub mod drift;
pub mod instances;
pub mod members;
pub mod placement;
pub mod resources;
pub mod search;
mod service;
pub mod workloads;

pub use service::{GrpcApi, RequestBaseUrl};

/// The generated protobuf messages, server and client of `kairship.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic, clippy::unwrap_used)]
pub mod pb;

/// The encoded `FileDescriptorSet` of `kairship.v1`, as served by reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/kairship_v1_descriptor.bin"));

/// The fully qualified name of the Kairship gRPC service.
pub const SERVICE_NAME: &str = "kairship.v1.KairshipService";

/// Every service the gRPC routes serve, as reflection lists them.
pub const SERVED_SERVICES: [&str; 4] = [
    SERVICE_NAME,
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// Largest request message accepted, the same limit as REST bodies.
pub const MAX_MESSAGE_BYTES: usize = crate::transport::MAX_BODY_BYTES;

/// Why the gRPC routes could not be built.
#[derive(Debug, thiserror::Error)]
pub enum GrpcError {
    /// The embedded descriptor set did not load into the reflection service.
    #[error("the gRPC reflection service could not load the API descriptors: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// The gRPC services as one router to merge into the API server's router: the Kairship
/// service over `api`, health (reporting the Kairship service and the server as serving) and
/// reflection (v1 and v1alpha, each describing all of [`SERVED_SERVICES`]).
pub async fn routes(
    api: Arc<dyn KairshipApi>,
    authenticator: Arc<dyn Authenticator>,
) -> Result<Router, GrpcError> {
    let kairship =
        pb::kairship_service_server::KairshipServiceServer::new(GrpcApi::new(api, authenticator))
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .accept_compressed(tonic::codec::CompressionEncoding::Gzip)
            .send_compressed(tonic::codec::CompressionEncoding::Gzip);
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<pb::kairship_service_server::KairshipServiceServer<GrpcApi>>()
        .await;
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;
    let router = tonic::service::Routes::new(kairship)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .into_axum_router()
        .layer(axum::middleware::map_request(record_base_url));
    Ok(router)
}

/// A reflection builder with the descriptors of every served service. Both reflection
/// versions are registered by hand (the builder only adds its own version) so that either
/// one lists the other too.
fn reflection() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .include_reflection_service(false)
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET)
}

/// Puts the call's base URL on the request for `CreateKubeconfig`.
async fn record_base_url(mut req: Request) -> Request {
    let tls = req.extensions().get::<ServedOverTls>().is_some_and(|t| t.0);
    let base = request_base_url(req.headers(), req.uri(), tls);
    req.extensions_mut().insert(RequestBaseUrl(base));
    req
}
