//! Compiles the Kubernetes protobuf schemas (`proto/k8s.io/**/generated.proto`) with protox
//! (pure Rust: no `protoc` needed) into one encoded descriptor set, which the server reads
//! to decode and encode `application/vnd.kubernetes.protobuf` bodies.

use std::path::{Path, PathBuf};

use protox::prost::Message as _;

fn proto_files(dir: &Path, root: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            proto_files(&path, root, out)?;
        } else if path.extension().is_some_and(|e| e == "proto")
            && let Ok(relative) = path.strip_prefix(root)
        {
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let root = Path::new("proto");
    let mut files = Vec::new();
    proto_files(&root.join("k8s.io"), root, &mut files)?;
    files.sort();
    let descriptors = protox::compile(&files, [root])?;
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    std::fs::write(
        out_dir.join("kubernetes_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;
    Ok(())
}
