//! Member paths that may be written under an output directory (`neff unpack`): relative,
//! normal components only. The fuzz target `unpack_path` holds the sanitiser to that.

/// Why a member path may not be written under the output directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnsafePath {
    /// The path is empty.
    Empty,
    /// The path starts with `/`.
    Absolute,
    /// The path holds a `\` (a separator on some hosts, so never a plain name character here).
    Backslash,
    /// The path holds a NUL byte.
    Nul,
    /// Two `/` in a row, or a trailing `/`.
    EmptyComponent,
    /// A `.` component.
    DotComponent,
    /// A `..` component: the path would leave the output directory.
    ParentComponent,
}

impl std::fmt::Display for UnsafePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UnsafePath::Empty => "empty member path",
            UnsafePath::Absolute => "absolute member path",
            UnsafePath::Backslash => "member path holds a backslash",
            UnsafePath::Nul => "member path holds a NUL byte",
            UnsafePath::EmptyComponent => "member path has an empty component",
            UnsafePath::DotComponent => "member path has a '.' component",
            UnsafePath::ParentComponent => "member path escapes the output directory ('..')",
        })
    }
}

impl std::error::Error for UnsafePath {}

/// Splits a member path into its components, or says why it may not be written under the
/// output directory. Accepted paths are relative and made of normal components only: joined
/// with `/`, the components are the path again.
pub fn safe_components(name: &str) -> Result<Vec<&str>, UnsafePath> {
    safe_components_raw(name.as_bytes())?;
    Ok(name.split('/').collect())
}

/// [`safe_components`] over a member name's raw bytes (which need not be UTF-8).
pub fn safe_components_raw(name: &[u8]) -> Result<Vec<&[u8]>, UnsafePath> {
    if name.is_empty() {
        return Err(UnsafePath::Empty);
    }
    if name.starts_with(b"/") {
        return Err(UnsafePath::Absolute);
    }
    if name.contains(&b'\\') {
        return Err(UnsafePath::Backslash);
    }
    if name.contains(&0) {
        return Err(UnsafePath::Nul);
    }
    let parts: Vec<&[u8]> = name.split(|&b| b == b'/').collect();
    for part in &parts {
        match *part {
            b"" => return Err(UnsafePath::EmptyComponent),
            b"." => return Err(UnsafePath::DotComponent),
            b".." => return Err(UnsafePath::ParentComponent),
            _ => {}
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_components_say_why_a_path_is_refused() {
        let cases = [
            ("", UnsafePath::Empty),
            ("/etc/passwd", UnsafePath::Absolute),
            ("sg00\\PE.bin", UnsafePath::Backslash),
            ("..\\evil", UnsafePath::Backslash),
            ("sg00/PE\0.bin", UnsafePath::Nul),
            ("\0", UnsafePath::Nul),
            ("a//b", UnsafePath::EmptyComponent),
            ("sg00/", UnsafePath::EmptyComponent),
            (".", UnsafePath::DotComponent),
            ("a/./b", UnsafePath::DotComponent),
            ("..", UnsafePath::ParentComponent),
            ("sg00/../../x", UnsafePath::ParentComponent),
        ];
        for (name, reason) in cases {
            assert_eq!(safe_components(name), Err(reason), "{name:?}");
        }
        assert_eq!(UnsafePath::Nul.to_string(), "member path holds a NUL byte");
        assert_eq!(UnsafePath::Backslash.to_string(), "member path holds a backslash");
    }

    #[test]
    fn safe_components_split_relative_paths() {
        assert_eq!(safe_components("sg00/def.json"), Ok(vec!["sg00", "def.json"]));
        assert_eq!(safe_components("..x/.y/z.."), Ok(vec!["..x", ".y", "z.."]));
    }
}
