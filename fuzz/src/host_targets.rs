//! Fuzz target bodies for the `neff` command: `unpack`'s member-path sanitiser.
//!
//! This file is also compiled by `targets/host/tests/fuzz_replay.rs` with `#[path]`.

use std::path::{Component, Path};

use neff_cli::commands::unpack::safe_components;

/// `unpack_path`: whatever the member path, an accepted one stays under the output directory:
/// relative, only normal components, none of them empty, `.`, `..`, or holding `\` or NUL, and
/// the components joined with `/` are the path again. A refusal always says why.
pub fn unpack_path(data: &[u8]) {
    let Ok(name) = std::str::from_utf8(data) else {
        return;
    };
    match safe_components(name) {
        Ok(parts) => {
            assert_eq!(parts.join("/"), name);
            for part in &parts {
                assert!(!part.is_empty() && *part != "." && *part != "..", "{name:?}: {part:?}");
                assert!(!part.contains(['/', '\\', '\0']), "{name:?}: {part:?}");
            }
            let path = Path::new(name);
            assert!(path.is_relative(), "{name:?}");
            assert!(path.components().all(|c| matches!(c, Component::Normal(_))), "{name:?}");
            assert_eq!(path.components().count(), parts.len(), "{name:?}");
        }
        Err(reason) => assert!(!reason.to_string().is_empty()),
    }
}
