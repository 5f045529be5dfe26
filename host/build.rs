//! Checks, once per build, that the embedded precompiled guest
//! (`guest-js/dist/wrepl-guest.x86_64-linux.cwasm`) was compiled from the
//! embedded guest component (`guest-js/dist/wrepl-guest.wasm`): its header
//! names the component's SHA-256. The runtime then need not hash the 1.5 MB
//! component at every start when it is handed exactly the embedded one
//! (`runtime/engine.rs`, `embedded_artifact`); any other component is still
//! hashed and compared.

use sha2::Digest;

/// Must equal `PRECOMPILED_MAGIC` in `src/runtime/engine.rs`.
const MAGIC: &[u8] = b"WREPLPC1";

fn main() {
    // `guest/` links to guest-js/dist/ in the repository; in a packaged
    // crate it holds the files themselves.
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("guest");
    let component = dist.join("wrepl-guest.wasm");
    let artifact = dist.join("wrepl-guest.x86_64-linux.cwasm");
    println!("cargo::rerun-if-changed={}", component.display());
    println!("cargo::rerun-if-changed={}", artifact.display());
    let matches = match (std::fs::read(&component), std::fs::read(&artifact)) {
        (Ok(c), Ok(a)) => a
            .strip_prefix(MAGIC)
            .and_then(|rest| rest.get(..32))
            .is_some_and(|digest| digest == sha2::Sha256::digest(&c).as_slice()),
        _ => false,
    };
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let digest = std::fs::read(&component).map(|c| sha2::Sha256::digest(&c).to_vec()).unwrap_or_default();
    // The wasmtime this build links, as the lock file pins it (snapshots name it).
    // The workspace's lock file, or the packaged crate's own.
    let manifest_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = [manifest_dir.join("../Cargo.lock"), manifest_dir.join("Cargo.lock")]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| manifest_dir.join("Cargo.lock"));
    println!("cargo::rerun-if-changed={}", lock.display());
    let wasmtime = std::fs::read_to_string(&lock)
        .ok()
        .and_then(|text| {
            let at = text.find("\nname = \"wasmtime\"\nversion = \"")? + "\nname = \"wasmtime\"\nversion = \"".len();
            text[at..].split('"').next().map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".into());
    let text = format!(
        "/// Whether the build found the embedded precompiled guest compiled from the embedded component.\n\
         const EMBEDDED_PAIR_VERIFIED: bool = {matches};\n\
         /// The SHA-256 of the embedded guest component (empty when the build could not read it).\n\
         const EMBEDDED_GUEST_SHA256: &[u8] = &{digest:?};\n\
         /// The wasmtime version this build links (from Cargo.lock).\n\
         pub const WASMTIME_VERSION: &str = {wasmtime:?};\n"
    );
    std::fs::write(out.join("embedded_pair.rs"), text).expect("write OUT_DIR/embedded_pair.rs");
}
