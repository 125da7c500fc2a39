//! Compiles the gRPC API (`proto/kairship/v1/*.proto`) with protox (pure Rust: no `protoc`
//! needed) and writes its encoded descriptor set for the reflection service.

use std::path::PathBuf;

use protox::prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(["kairship/v1/kairship.proto"], ["proto"])?;
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    std::fs::write(
        out_dir.join("kairship_v1_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .build_transport(false)
        .emit_rerun_if_changed(false)
        .compile_fds(descriptors)?;
    Ok(())
}
