//! Generates the gRPC code from `proto/` with tonic's prost generator.
//!
//! protoc comes from the `protoc-bin-vendored` crate, so no machine needs one installed.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let well_known = protoc_bin_vendored::include_path()?;
    // SAFETY: build scripts are single-threaded; prost-build reads PROTOC from here.
    unsafe { std::env::set_var("PROTOC", protoc) };

    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let protos = [
        PathBuf::from("proto/a2a/commands/v1/a2a.proto"),
        PathBuf::from("proto/a2a/commands/v1/commands.proto"),
    ];
    tonic_prost_build::configure()
        // prost's codec plus a bound on what a request costs once decoded (src/wire.rs).
        .codec_path("crate::wire::BoundedCodec")
        // Methods a handler does not implement answer UNIMPLEMENTED (CommandHandler's
        // Complete is optional), as in grpcio and other gRPC libraries.
        .generate_default_stubs(true)
        // The descriptor set feeds server reflection, so grpcurl needs no proto files.
        .file_descriptor_set_path(out_dir.join("a2a_commands_descriptor.bin"))
        .compile_protos(&protos, &[PathBuf::from("proto"), well_known.clone()])?;
    // etcd's API, for the fleet store: a client only, with prost's own codec (etcd's
    // answers are bounded by the client's decode limit, not by our request budget), and
    // kept out of the descriptor set reflection serves.
    tonic_prost_build::configure()
        .build_server(false)
        .compile_protos(
            &[PathBuf::from("proto/etcd/etcd.proto")],
            &[PathBuf::from("proto"), well_known],
        )?;
    // A2A 1.0's messages, for the front's gRPC binding: prost types, and serde for them
    // in protobuf's canonical JSON (pbjson), so that the front reads a gRPC request as
    // the JSON its other bindings read. Kept out of the descriptor set reflection serves
    // (the front's gRPC surface is A2A's, on the front's port).
    let a2a_descriptor = out_dir.join("lf_a2a_descriptor.bin");
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(false)
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .file_descriptor_set_path(&a2a_descriptor)
        .compile_protos(
            &[PathBuf::from("proto/lf/a2a/v1/a2a.proto")],
            &[PathBuf::from("proto"), protoc_bin_vendored::include_path()?],
        )?;
    pbjson_build::Builder::new()
        .register_descriptors(&std::fs::read(&a2a_descriptor)?)?
        .build(&[".lf.a2a.v1"])?;
    println!("cargo:rerun-if-changed=proto");

    // `--version` names the commit built from: A2A_COMMANDS_COMMIT when set (an image
    // build has no .git: its build-arg sets it), else the git checkout's HEAD.
    println!("cargo:rerun-if-env-changed=A2A_COMMANDS_COMMIT");
    let given = std::env::var("A2A_COMMANDS_COMMIT")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let commit = given
        .map(|s| s.trim().to_owned())
        .or_else(|| {
            std::process::Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=A2A_COMMANDS_COMMIT={commit}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    Ok(())
}
