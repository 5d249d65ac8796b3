//! The C header of the repository's schema: every published layout with its size and offset
//! assertions, every enum with its values, and the checked-in `targets/c/include/neff_schema.h` equal to
//! what the generator writes now (scripts/gen-header.sh regenerates it).
use std::path::Path;

use neff_schema_codegen::{c, model};

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn header() -> String {
    let files = model::load_dir(&repo().join("schema"), "schema/").unwrap_or_else(|e| panic!("{e}"));
    let kinds = neff_schema_codegen::load_kinds(&repo().join("schema"), "schema/").unwrap_or_else(|e| panic!("{e}"));
    c::header(&files, &kinds).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_layout_and_enum_reaches_the_header_with_its_assertions() {
    let text = header();
    let files = model::load_dir(&repo().join("schema"), "schema/").unwrap();
    let mut layouts = 0;
    for f in &files {
        for l in &f.toml.layouts {
            layouts += 1;
            let c = &l.c_name;
            assert!(text.contains(&format!("typedef struct {c} {{")), "{c}");
            assert!(text.contains(&format!("NEFF_SCHEMA_ASSERT(sizeof({c}) == {},", l.size)), "{c}");
            for field in &l.fields {
                let line = format!("NEFF_SCHEMA_ASSERT(offsetof({c}, {}) == {},", field.name.get_ref(), field.offset);
                assert!(text.contains(&line), "{line}");
            }
        }
    }
    assert!(layouts >= 4, "io_node_info_t, sb_carveout and the fp8 structs at least");
    for name in ["io_node_info_t", "sb_carveout", "kbin_fp8_conv_cfg_t", "fp8_conversion_info"] {
        assert!(text.contains(&format!("}} {name};")), "{name}");
    }
    assert!(text.contains("  NEFF_ARCH_CAYMAN = 3,"));
    assert!(text.contains("  NEFF_USAGE_CLASS_WEIGHT = 6,"));
    // A nested layout is declared before the layout that holds it.
    let inner = text.find("typedef struct kbin_fp8_conv_cfg_t").unwrap();
    let outer = text.find("typedef struct fp8_conversion_info").unwrap();
    assert!(inner < outer);
}

#[test]
fn the_checked_in_header_is_current() {
    let path = repo().join("targets/c/include/neff_schema.h");
    let Ok(checked_in) = std::fs::read_to_string(&path) else {
        panic!("{} is missing: run scripts/gen-header.sh", path.display());
    };
    assert!(checked_in == header(), "{} is stale: run scripts/gen-header.sh", path.display());
}

#[test]
fn the_header_holds_its_layouts_and_enum_sizes_on_32_bit_targets_and_cites_no_spec_section() {
    let text = header();
    // Every 64-bit field is aligned to 8 explicitly (i386 aligns uint64_t to 4).
    let fields64 = text.lines().filter(|l| l.trim_start().starts_with("uint64_t ") || l.contains(" uint64_t ")).count();
    assert!(fields64 >= 6, "{fields64}");
    for line in text.lines().filter(|l| l.contains("uint64_t ") && l.trim_end().ends_with(';')) {
        assert!(line.trim_start().starts_with("NEFF_SCHEMA_ALIGN8 uint64_t "), "{line}");
    }
    // Enums are 32 bits wide whatever -fshort-enums says: a uint32_t before C23.
    assert!(text.contains("typedef uint32_t neff_arch;"));
    assert!(text.contains("enum neff_arch\n#if NEFF_SCHEMA_FIXED_ENUMS\n  : uint32_t\n#endif\n{"));
    // The header ships without the spec: no section citations.
    assert!(!text.contains('§'));
    assert!(text.contains("Device architecture of `kelf` `target`. "), "the sentence survives its citation");
}
