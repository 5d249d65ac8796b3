//! Member routing: what a tar member is, decided from its name alone.
//!
//! The tar order is not the chain order (real NEFFs put `sg00/PE.bin` before `sg00/def.json`
//! and `neff.json` last), so the router cannot wait for a manifest to say what a member is.
//! Names are enough to tell the tiers apart: the runtime itself looks up `neff.json` by name,
//! and every other manifest lives beside the subgraph's `def.json`. What a payload *is*
//! (an instruction stream, a weight, a table) is decided later by the binder.

/// What the loader does with a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    /// Tier 1, `neff.json` (or the legacy `kelp.json`).
    NeffJson,
    /// Tier 2, a root `kelf-<i>.json` descriptor.
    Kelf,
    /// Tier 3, `<sg_dir>/def.json`.
    Def {
        /// The subgraph directory, e.g. `sg00`.
        sg_dir: &'a str,
    },
    /// Another JSON member inside a subgraph directory: an engine JSON or an activation
    /// function-set JSON. Which one is known only once `def.json` names it, so it is parsed
    /// with the parser that reads the keys of both.
    SubgraphJson {
        /// The subgraph directory.
        sg_dir: &'a str,
    },
    /// A payload (`*.bin`, `*.npy`, ...): streamed to the device as it passes.
    Payload {
        /// The directory the payload lives in (empty at the root).
        dir: &'a str,
    },
    /// Read past without buffering.
    Skip(SkipReason),
}

/// Why a member is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SkipReason {
    /// Debug data: `debug_info/…`, `*.dbg`, `*.asm`.
    Debug,
    /// Producer metadata the runtime does not read: `info.json`, `hlo_stats.json`,
    /// `metrics.json`, `tensor_map.json`, ...
    Metadata,
}

/// Producer metadata at the root or in a subgraph directory that no runtime path reads.
const METADATA_NAMES: [&str; 8] = [
    "info.json",
    "hlo_stats.json",
    "metrics.json",
    "hlo_metrics.json",
    "global_metric_store.json",
    "kernel_debug_info.json",
    "loop.json",
    "tensor_map.json",
];

/// Decides the route of a member from its (already normalised) tar name.
pub fn route(name: &str) -> Route<'_> {
    let (dir, file) = match name.rfind('/') {
        Some(slash) => (name.get(..slash).unwrap_or(""), name.get(slash + 1..).unwrap_or("")),
        None => ("", name),
    };
    if dir == "debug_info"
        || dir.starts_with("debug_info/")
        || file.ends_with(".dbg")
        || file.contains(".dbg_")
        || file.ends_with(".asm")
    {
        return Route::Skip(SkipReason::Debug);
    }
    if METADATA_NAMES.contains(&file) {
        return Route::Skip(SkipReason::Metadata);
    }
    let is_json = file.ends_with(".json");
    if dir.is_empty() {
        return match file {
            "neff.json" | "kelp.json" => Route::NeffJson,
            _ if is_json && file.starts_with("kelf-") => Route::Kelf,
            _ if is_json => Route::Skip(SkipReason::Metadata),
            _ => Route::Payload { dir },
        };
    }
    match file {
        "def.json" => Route::Def { sg_dir: dir },
        _ if is_json => Route::SubgraphJson { sg_dir: dir },
        _ => Route::Payload { dir },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_are_told_apart_by_name() {
        assert_eq!(route("neff.json"), Route::NeffJson);
        assert_eq!(route("kelp.json"), Route::NeffJson);
        assert_eq!(route("kelf-0.json"), Route::Kelf);
        assert_eq!(route("kelf-a.json"), Route::Kelf);
        assert_eq!(route("sg00/def.json"), Route::Def { sg_dir: "sg00" });
        assert_eq!(route("sg01/PE.json"), Route::SubgraphJson { sg_dir: "sg01" });
        assert_eq!(route("sg00/exp_and_others.json"), Route::SubgraphJson { sg_dir: "sg00" });
    }

    #[test]
    fn payloads_keep_their_directory() {
        assert_eq!(route("sg00/PE.bin"), Route::Payload { dir: "sg00" });
        assert_eq!(route("sg00/value_sg0000_identity_82_CRSM.npy"), Route::Payload { dir: "sg00" });
        assert_eq!(route("cpu.so"), Route::Payload { dir: "" });
    }

    #[test]
    fn debug_and_metadata_are_skipped() {
        for name in [
            "debug_info/debug_info_hlo.dbg_sg000000",
            "debug_info/debug_info_stack_frame_index.dbg",
            "sg00/debug_info_backend_PE.dbg",
            "sg00/pe.asm",
        ] {
            assert_eq!(route(name), Route::Skip(SkipReason::Debug), "{name}");
        }
        for name in ["info.json", "hlo_stats.json", "sg00/tensor_map.json", "metrics.json"] {
            assert_eq!(route(name), Route::Skip(SkipReason::Metadata), "{name}");
        }
    }
}
