//! Build script of the firmware image.
//!
//! 1. Puts `memory.x` where the linker finds it.
//! 2. Finds the real NEFFs in the `shared/` directory beside the repository (both nkipy files
//!    and a bf16 trainium-kernel-fusion one, whose weights are `<V2` `.npy`) and computes,
//!    with std crates (`flate2` + `tar` + `xxhash-rust`'s one-shot XXH3), what the firmware must
//!    find when it loads them with the no_std core: every payload's member name, landed
//!    length and digest, the tar member count and the inflated tar length. These expected
//!    values share no code with the core (the digest is the same crate's one-shot function, not
//!    the core's streaming wrapper), so a bug in the core's inflater, tar walker, `.npy` reader
//!    or digest streaming shows up as a mismatch under QEMU. The same goes for the header hash:
//!    the MD5 of the payload `data[0..data_size]` (`md-5`, one shot) and the byte order the
//!    header stores it in (spec §2.6), which the firmware's `--verify`-like check must report.
//! 3. Generates a big model with the project's own generator (`targets/host/src/scale.rs`,
//!    its `firmware` preset: 512 I/O tensors, 10,000 vars, 500 weights, 8 subgraphs) into
//!    `$OUT_DIR`, and computes the same expected values for it with the same code.
//! 4. Writes them, with an `include_bytes!` of each NEFF, to `$OUT_DIR/fixtures.rs`.
//! 5. For the defmt image (`src/bin/defmt.rs`), makes two variants of `matmul_small.neff` by
//!    editing one manifest and rewriting the NEFF with the same generator's writer: one that
//!    loads with a known warning, and one the loader must reject with a manifest error naming
//!    its member and key path. They go to `$OUT_DIR/variants.rs` (see [`VARIANTS`]).
//! 6. Links the defmt image with defmt's linker script (`-Tdefmt.x`), that image only.

// The host crate's NEFF generator, as crate-root modules (`scale` uses `crate::sample` and
// `crate::writer`). The build script uses a part of them only.
#[allow(dead_code)]
#[path = "../host/src/writer.rs"]
mod writer;

#[allow(dead_code)]
#[path = "../host/src/sample.rs"]
mod sample;

#[allow(dead_code)]
#[path = "../host/src/scale.rs"]
mod scale;

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::{env, fs};

/// The NEFFs the image loads, under `shared/fixtures/`, and their names in its output. The
/// trainium-kernel-fusion one is a bf16 model: its weights are `.npy` with `'descr': '<V2'`
/// (spec §15.21); it is named by its directory (every file there is `baseline.neff` or
/// `fused.neff`).
const NEFFS: [(&str, &str); 7] = [
    ("public/nkipy/matmul_small.neff", "matmul_small.neff"),
    ("public/nkipy/matmul_large.neff", "matmul_large.neff"),
    ("public/trainium-kernel-fusion/baseline_bf16_s512/baseline.neff", "trainium-kernel-fusion/baseline_bf16_s512"),
    // The real training NEFFs a controller's arena once refused, one per cause, and a small one
    // (`shared/fixtures/training-cache/README.md`): DMA references waiting for `def.json`
    // (29,581 of them, var names of 468 bytes), the `neff.json` I/O join of 1,312 tensors,
    // the DVE references of a mid-size one, and a small healthy entry.
    (TRAINING_BIG, "training-cache/MODULE_14041361676943519958"),
    (TRAINING_IO, "training-cache/MODULE_6855667900855398127"),
    (TRAINING_DVE, "training-cache/MODULE_10103772202104053224"),
    (TRAINING_SMALL, "training-cache/MODULE_10014641777187220149"),
];
const TRAINING_BIG: &str =
    "training-cache/neuronxcc-2.14.227.0+2d4f85be/MODULE_14041361676943519958+ade7b014/model.neff";
const TRAINING_IO: &str = "training-cache/neuronxcc-2.14.227.0+2d4f85be/MODULE_6855667900855398127+ade7b014/model.neff";
const TRAINING_DVE: &str =
    "training-cache/neuronxcc-2.14.227.0+2d4f85be/MODULE_10103772202104053224+ade7b014/model.neff";
const TRAINING_SMALL: &str =
    "training-cache/neuronxcc-2.14.227.0+2d4f85be/MODULE_10014641777187220149+ade7b014/model.neff";
/// The generated NEFFs: preset, and name in the firmware's output. `firmware` is the big
/// model (hundreds of members); `controller` is shaped like the real NEFFs a controller's arena
/// once refused (engine JSONs before `def.json` with 30,000 DMA references over 300 names,
/// 1,300 I/O tensors, var names of 468 bytes).
const GENERATED: [(&str, &str); 2] = [
    ("firmware", "scale-firmware.neff (generated)"),
    ("controller", "scale-controller.neff (generated: shaped like the refused real ones)"),
];

/// A variant of `matmul_small.neff` ([`VARIANTS`]).
type Variant = (&'static str, &'static str, &'static str, &'static str, Option<(&'static str, &'static str)>);

/// The variants of `matmul_small.neff` the defmt image loads: name, the manifest edited, the
/// text replaced (its first occurrence) and its replacement, and for a NEFF that must be
/// rejected, the member and key path its error names.
///
/// * The warning: a `dtype` that no map knows on var `output0` of `sg00/def.json`; accepted
///   (`ManifestWarning::UnknownValue`), so the NEFF loads with the same payloads as the
///   original.
/// * The rejection: var `output0`'s `size` written as a string; refused
///   (`ManifestError::WrongType`, an unsigned integer expected, a string found).
const VARIANTS: [Variant; 2] = [
    (
        "matmul_small-unknown-dtype.neff (variant)",
        "sg00/def.json",
        "\"size\": 32768,\n            \"type\": \"output\",",
        "\"size\": 32768,\n            \"dtype\": \"float99\",\n            \"type\": \"output\",",
        None,
    ),
    (
        "matmul_small-size-as-string.neff (variant, must be rejected)",
        "sg00/def.json",
        "\"size\": 32768,\n            \"type\": \"output\",",
        "\"size\": \"32768\",\n            \"type\": \"output\",",
        Some(("sg00/def.json", "var.output0.size")),
    ),
];

/// Bytes of the NEFF header before the gzip'd tar.
const HEADER_SIZE: usize = 1024;

/// The payload digest, XXH3-64 as `neff::digest::digest64` defines it, computed here with the
/// `xxhash-rust` crate's one-shot `xxh3_64` over the whole buffer (the core streams it).
fn digest64(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The array data of a `.npy` file: v1 has a u16 header length at offset 8 (data at 10 + len),
/// v2 and v3 a u32 (data at 12 + len).
fn npy_data<'a>(member: &str, file: &'a [u8]) -> &'a [u8] {
    assert!(file.starts_with(b"\x93NUMPY") && file.len() >= 12, "{member}: not a .npy file");
    let start = match file[6] {
        1 => 10 + usize::from(u16::from_le_bytes([file[8], file[9]])),
        2 | 3 => 12 + u32::from_le_bytes([file[8], file[9], file[10], file[11]]) as usize,
        v => panic!("{member}: unknown .npy version {v}"),
    };
    &file[start..]
}

/// A payload as neff-format.md defines it: a `.bin` or `.npy` member outside `debug_info/`.
fn is_payload(name: &str) -> bool {
    !name.starts_with("debug_info/") && (name.ends_with(".bin") || name.ends_with(".npy"))
}

/// The MD5 of the payload `data[0..data_size]` of `bytes` and the order its header stores it
/// in, as Rust source (`DigestOrder::Plain` or `WordSwapped`, spec §2.6). Panics when the
/// header holds neither: such a file is not what a compiler writes.
fn header_md5(path: &Path, bytes: &[u8]) -> ([u8; 16], &'static str) {
    use md5::Digest as _;
    let data_size = u64::from_le_bytes(bytes[16..24].try_into().expect("data_size")) as usize;
    let md5: [u8; 16] = md5::Md5::digest(&bytes[HEADER_SIZE..HEADER_SIZE + data_size]).into();
    // Each 4-byte word reversed, as neuronx-cc 2.18 and later write it.
    let swapped: Vec<u8> = md5.chunks(4).flat_map(|w| w.iter().rev().copied()).collect();
    let stored = &bytes[172..188];
    let order = if stored == md5 {
        "Plain"
    } else if stored == swapped.as_slice() {
        "WordSwapped"
    } else {
        panic!("{}: the header hash is neither the payload's MD5 nor its word-swapped form", path.display())
    };
    (md5, order)
}

/// The `Arch` variant of the KELF target `kelf-0.json` names, as Rust source.
fn kelf_arch(tar_stream: &[u8]) -> &'static str {
    let mut archive = tar::Archive::new(tar_stream);
    for entry in archive.entries().expect("tar entries") {
        let mut entry = entry.expect("tar entry");
        if entry.path().expect("member path").to_string_lossy() == "kelf-0.json" {
            let mut text = String::new();
            entry.read_to_string(&mut text).expect("kelf-0.json");
            return if text.contains("\"sunda\"") { "Sunda" } else { "Cayman" };
        }
    }
    "Cayman"
}

/// Expected values of one NEFF (`bytes`, read from `path`), as Rust source. Its bytes are a
/// static of their own in the `.neffs` section (`memory.x`: the board's PSRAM, past flash),
/// named by `n`.
fn expected(name: &str, path: &Path, bytes: &[u8]) -> String {
    let mut tar_stream = Vec::new();
    flate2::read::GzDecoder::new(&bytes[HEADER_SIZE..])
        .read_to_end(&mut tar_stream)
        .unwrap_or_else(|e| panic!("{}: gunzip: {e}", path.display()));
    let mut members = 0u32;
    let mut payloads = String::new();
    let mut archive = tar::Archive::new(tar_stream.as_slice());
    for entry in archive.entries().expect("tar entries") {
        let mut entry = entry.expect("tar entry");
        if !entry.header().entry_type().is_file() {
            continue;
        }
        members += 1;
        let name = entry.path().expect("member path").to_string_lossy().into_owned();
        if !is_payload(&name) {
            continue;
        }
        let mut body = Vec::new();
        entry.read_to_end(&mut body).expect("member body");
        let data = if name.ends_with(".npy") { npy_data(&name, &body) } else { &body };
        writeln!(
            payloads,
            "            Payload {{ member: {name:?}, len: {}, digest: {:#018x} }},",
            data.len(),
            digest64(data)
        )
        .unwrap();
    }
    let (md5, order) = header_md5(path, bytes);
    let arch = kelf_arch(&tar_stream);
    format!(
        "    Fixture {{\n        name: {name:?},\n        bytes: {{\n            #[allow(unsafe_code)]\n            \
         #[link_section = \".neffs\"]\n            static BYTES: [u8; {len}] = *include_bytes!({path:?});\n            \
         &BYTES\n        }},\n        arch: Arch::{arch},\n        members: {members},\n        \
         inflated_bytes: {inflated},\n        md5: {md5:#04x?},\n        md5_order: DigestOrder::{order},\n        \
         payloads: &[\n{payloads}        ],\n    }},\n",
        len = bytes.len(),
        path = path.display().to_string(),
        inflated = tar_stream.len(),
    )
}

/// The regular members of a NEFF, in tar order.
fn members(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut tar_stream = Vec::new();
    flate2::read::GzDecoder::new(&bytes[HEADER_SIZE..]).read_to_end(&mut tar_stream).expect("gunzip");
    let mut members = Vec::new();
    let mut archive = tar::Archive::new(tar_stream.as_slice());
    for entry in archive.entries().expect("tar entries") {
        let mut entry = entry.expect("tar entry");
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path().expect("member path").to_string_lossy().into_owned();
        let mut body = Vec::new();
        entry.read_to_end(&mut body).expect("member body");
        members.push((name, body));
    }
    members
}

/// The header fields of `bytes` the writer is told (it computes sizes and hash itself).
fn header_fields(bytes: &[u8]) -> writer::HeaderFields {
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let str_at = |at: usize, len: usize| {
        let field = &bytes[at..at + len];
        let end = field.iter().position(|&b| b == 0).unwrap_or(len);
        String::from_utf8(field[..end].to_vec()).expect("UTF-8 header string")
    };
    let mut fields =
        writer::HeaderFields::new(&str_at(220, 256), bytes[204..220].try_into().expect("uuid"), u32_at(552));
    fields.pkg_version = u64_at(0);
    fields.neff_version_major = u64_at(24);
    fields.neff_version_minor = u64_at(32);
    fields.build_version = str_at(40, 128);
    fields.num_tpb = u32_at(168);
    fields.requested_tpb_count = u32_at(476);
    fields.tpb_per_node = bytes[480..544].try_into().expect("tpb_per_node");
    fields.feature_bits = u64_at(544);
    fields
}

/// The variants of [`VARIANTS`], made from `original` (`matmul_small.neff`), as Rust source:
/// `VARIANTS: &[Fixture]` (those that load) and `REJECTED: &[Rejected]`.
fn variants(out: &Path, original: &[u8]) -> String {
    let fields = header_fields(original);
    let (mut loads, mut rejected) = (String::new(), String::new());
    for (i, (name, member, from, to, error)) in VARIANTS.into_iter().enumerate() {
        let mut members = members(original);
        let (_, body) = members.iter_mut().find(|(n, _)| n == member).expect("the edited member exists");
        let text = String::from_utf8(body.clone()).expect("a UTF-8 manifest");
        assert!(text.contains(from), "{member} of matmul_small.neff no longer holds {from:?}");
        *body = text.replacen(from, to, 1).into_bytes();
        let bytes = writer::neff_bytes(&fields, &members).expect("rewrite the variant");
        let path = out.join(format!("variant-{i}.neff"));
        fs::write(&path, &bytes).expect("write the variant to OUT_DIR");
        match error {
            None => loads.push_str(&expected(name, &path, &bytes)),
            Some((member, key_path)) => {
                let fixture = expected(name, &path, &bytes);
                let fixture = fixture.trim().trim_end_matches(',');
                writeln!(rejected, "    Rejected {{\n    fixture: {fixture},\n    member: {member:?},\n    key_path: {key_path:?},\n    }},")
                    .unwrap();
            }
        }
    }
    format!(
        "// Generated by build.rs: variants of matmul_small.neff. Do not edit.\n\
         const VARIANTS: &[Fixture] = &[\n{loads}];\n\
         const REJECTED: &[Rejected] = &[\n{rejected}];\n"
    )
}

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::copy("memory.x", out.join("memory.x")).expect("copy memory.x to OUT_DIR");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=build.rs");
    // defmt's linker script (from the defmt crate's build script) for the defmt image only:
    // the semihosting image links as before.
    println!("cargo:rustc-link-arg-bin=neff-qemu-m4-defmt=-Tdefmt.x");

    // targets/qemu-m4 -> the repository -> the directory holding it, where shared/ lives.
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let fixtures = manifest_dir.join("../../../shared/fixtures");
    let Ok(fixtures) = fixtures.canonicalize() else {
        // A message, not a panic: no backtrace to scroll past.
        eprintln!(
            "error: neff-qemu-m4 needs the real NEFFs, and {} is absent.\n\
             The image embeds shared/fixtures/public/nkipy/*.neff and a trainium-kernel-fusion NEFF from the `shared/` directory beside \
             the repository (they are never copied into the repository). scripts/test-all.sh skips this \
             step when shared/ is absent, and fails under CI=true.",
            fixtures.display()
        );
        std::process::exit(1);
    };
    let mut table = String::from(
        "// Generated by build.rs from the real NEFFs and a generated one with flate2 + tar + xxhash-rust. Do not edit.\n\
         pub const FIXTURES: &[Fixture] = &[\n",
    );
    for (neff, name) in NEFFS {
        let path = fixtures.join(neff);
        println!("cargo:rerun-if-changed={}", path.display());
        let bytes = fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        table.push_str(&expected(name, &path, &bytes));
        if neff.ends_with("matmul_small.neff") {
            fs::write(out.join("variants.rs"), variants(&out, &bytes)).expect("write variants.rs");
        }
    }
    for source in ["writer.rs", "sample.rs", "scale.rs"] {
        println!("cargo:rerun-if-changed=../host/src/{source}");
    }
    for (preset, name) in GENERATED {
        let spec = scale::ScaleSpec::preset(preset).expect("the generator has the preset");
        let bytes = spec.build().expect("the scale NEFF generator failed");
        let path = out.join(format!("scale-{preset}.neff"));
        fs::write(&path, &bytes).expect("write the generated NEFF to OUT_DIR");
        table.push_str(&expected(name, &path, &bytes));
    }
    table.push_str("];\n");
    fs::write(out.join("fixtures.rs"), table).expect("write fixtures.rs");
}
