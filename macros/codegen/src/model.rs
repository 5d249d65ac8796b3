//! The TOML schema format, as serde structs (`deny_unknown_fields` everywhere so a typo'd
//! key is an error that lists the valid ones), and the loading of a schema directory.
//!
//! One file holds any of four kinds of tables:
//!
//! ```toml
//! stage = "DefJson"            # the manifest tier (`kinds.toml`) whose document the root
//!                              # object is; its errors' `Stage`, its keys' table label
//!
//! [[capacity]]                 # a const generic parameter of the manifest types
//! name = "VARS"
//! default = 32
//! doc = "Variables per def.json."
//!
//! [[object]]                   # a JSON object the loader reads
//! name = "Var"                 # Rust type name
//! root = false                 # true: a whole document (gets a parse entry)
//! key_field = "name"           # for objects stored in a `map<..>`: where the JSON key goes
//! key_type = "string<VAR_NAME>"
//! doc = "..."
//! [[object.key]]
//! key = "size"                 # JSON key; `aliases = [..]` for other spellings
//! type = "u64"                 # type expression, see `ty.rs`
//! field = "size"               # destination field
//! required = false             # or `default = <value>`; otherwise the field is an Option
//! doc = "..."
//!
//! [[enum]]                     # a discriminator map
//! name = "MrType"
//! c_name = "kbin_mr_type"
//! repr = "u32"
//! [[enum.variant]]
//! name = "Sb"
//! value = 1
//! json = ["state-buffer"]      # strings that select it (the first is `as_str`)
//!
//! [[layout]]                   # a published #[repr(C)] struct
//! name = "IoNodeInfo"
//! c_name = "io_node_info_t"
//! size = 144
//! [[layout.field]]
//! name = "size"
//! type = "u64"
//! offset = 0
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

/// One schema file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileToml {
    /// What the file describes (free text for the docs).
    #[serde(default)]
    pub doc: String,
    /// The `Stage` of the manifest tier (`kinds.toml`) whose document the file's root object is.
    #[serde(default)]
    pub stage: Option<Spanned<String>>,
    /// Const generic capacities.
    #[serde(default, rename = "capacity")]
    pub capacities: Vec<CapacityToml>,
    /// JSON objects.
    #[serde(default, rename = "object")]
    pub objects: Vec<ObjectToml>,
    /// Discriminator maps.
    #[serde(default, rename = "enum")]
    pub enums: Vec<EnumToml>,
    /// Published C layouts.
    #[serde(default, rename = "layout")]
    pub layouts: Vec<LayoutToml>,
}

/// A const generic capacity.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityToml {
    /// Upper-case name of the const parameter.
    pub name: Spanned<String>,
    /// Its value on bare-metal targets (`target_os = "none"`: the firmware profile).
    pub default: usize,
    /// Its value on hosted targets, where no valid NEFF may be refused for its size (spec
    /// §15.20); absent: the default everywhere.
    #[serde(default)]
    pub hosted: Option<usize>,
    /// What it bounds.
    pub doc: String,
}

/// A JSON object the loader reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectToml {
    /// Rust type name.
    pub name: Spanned<String>,
    /// Doc comment.
    pub doc: String,
    /// A whole document of its tier.
    #[serde(default)]
    pub root: bool,
    /// For entries of a `map<..>`: the field that receives the JSON key.
    #[serde(default)]
    pub key_field: Option<Spanned<String>>,
    /// The type of [`ObjectToml::key_field`] (a `string<CAP>`).
    #[serde(default)]
    pub key_type: Option<Spanned<String>>,
    /// Doc of the key field.
    #[serde(default)]
    pub key_doc: Option<String>,
    /// The consumed keys.
    #[serde(default, rename = "key")]
    pub keys: Vec<KeyToml>,
}

/// One consumed key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyToml {
    /// The JSON key.
    pub key: Spanned<String>,
    /// Other accepted spellings of the same key.
    #[serde(default)]
    pub aliases: Vec<Spanned<String>>,
    /// Type expression.
    #[serde(rename = "type")]
    pub ty: Spanned<String>,
    /// Destination field name.
    pub field: Spanned<String>,
    /// Absent is an error.
    #[serde(default)]
    pub required: bool,
    /// Value when absent (scalars and strings; `[]` for arrays).
    #[serde(default)]
    pub default: Option<Spanned<toml::Value>>,
    /// The runtime's message when the key is absent (required keys).
    #[serde(default)]
    pub missing: Option<String>,
    /// The runtime's message when the value has the wrong JSON type.
    #[serde(default)]
    pub type_error: Option<String>,
    /// The runtime's message when a `tagged<..>` list is malformed.
    #[serde(default)]
    pub format_error: Option<String>,
    /// The discriminator enum a string value selects.
    #[serde(default)]
    pub map: Option<Spanned<String>>,
    /// Name of the generated accessor returning the enum (default: the field name + `_kind`).
    #[serde(default)]
    pub accessor: Option<Spanned<String>>,
    /// Reject strings the map does not know with this `ManifestError` variant (taking the value).
    #[serde(default)]
    pub strict: Option<Spanned<String>>,
    /// For arrays: the `ManifestError` variant (taking the element count) used when the
    /// count passes `runtime_max`.
    #[serde(default)]
    pub overflow_error: Option<Spanned<String>>,
    /// For arrays: the runtime's own limit (see `overflow_error`).
    #[serde(default)]
    pub runtime_max: Option<u64>,
    /// For `each<..>` and `each_map<..>`: the variant of `Entry` each element is handed to the
    /// visitor as.
    #[serde(default)]
    pub entry: Option<Spanned<String>>,
    /// Doc comment of the field.
    pub doc: String,
    /// Extra notes for the key table (sources, conflicts).
    #[serde(default)]
    pub notes: String,
}

/// A discriminator map.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnumToml {
    /// Rust type name.
    pub name: Spanned<String>,
    /// The runtime's C enum name.
    pub c_name: String,
    /// Integer representation (`u8`, `u16`, `u32`, `i32`).
    pub repr: Spanned<String>,
    /// Doc comment.
    pub doc: String,
    /// Variants.
    #[serde(rename = "variant")]
    pub variants: Vec<VariantToml>,
}

/// A variant of a discriminator map.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantToml {
    /// Rust variant name.
    pub name: Spanned<String>,
    /// Numeric value.
    pub value: i64,
    /// JSON strings selecting it; the first is its `as_str`.
    #[serde(default)]
    pub json: Vec<Spanned<String>>,
    /// The runtime's enumerator.
    #[serde(default)]
    pub c_name: Option<String>,
    /// Element size in bytes (dtype maps: all variants or none).
    #[serde(default)]
    pub size: Option<u64>,
    /// Other names a person gives it (an instance family: `trn2`), taken with its JSON strings
    /// where a person names a variant (`from_name`: `--arch`, Python's `arch=`), never read from
    /// a manifest.
    #[serde(default)]
    pub names: Vec<Spanned<String>>,
    /// Doc comment.
    #[serde(default)]
    pub doc: String,
}

/// A published `#[repr(C)]` layout.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutToml {
    /// Rust type name.
    pub name: Spanned<String>,
    /// The runtime's C struct name.
    pub c_name: String,
    /// `sizeof` on x86-64.
    pub size: u64,
    /// Doc comment.
    pub doc: String,
    /// Fields in order.
    #[serde(rename = "field")]
    pub fields: Vec<FieldToml>,
}

/// A field of a layout.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldToml {
    /// Field name.
    pub name: Spanned<String>,
    /// Fixed-width Rust type (`u32`, `u64`, `bool`, `[u32; 32]`).
    #[serde(rename = "type")]
    pub ty: Spanned<String>,
    /// Offset on x86-64.
    pub offset: u64,
    /// Doc comment.
    pub doc: String,
}

/// A loaded schema file: its name (for messages), text (for line:col) and contents.
#[derive(Debug)]
pub struct SchemaFile {
    /// Path as given to messages (relative to the crate root when possible).
    pub display: String,
    /// Absolute path (for `include_bytes!`).
    pub path: PathBuf,
    /// The text, for turning byte spans into line:col.
    pub text: String,
    /// Parsed contents.
    pub toml: FileToml,
}

/// A schema error: `file:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError(pub String);

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// 1-based line and column of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.chars().count(), |nl| before[nl + 1..].chars().count()) + 1;
    (line, col)
}

/// `display:line:col: msg`, for byte `at` of `text` (the file named `display`).
pub fn error_in(display: &str, text: &str, at: usize, msg: impl std::fmt::Display) -> SchemaError {
    let (line, col) = line_col(text, at);
    SchemaError(format!("{display}:{line}:{col}: {msg}"))
}

/// Parses `text`, the TOML file named `display`, as `T`: a syntax error or an unknown key is an
/// error at its `line:col`.
pub fn parse_toml<T: serde::de::DeserializeOwned>(display: &str, text: &str) -> Result<T, SchemaError> {
    toml::from_str::<T>(text)
        .map_err(|e| error_in(display, text, e.span().map_or(0, |s| s.start), e.message().trim_end()))
}

/// The text of the file at `path`, named `display` in messages.
pub fn read_text(path: &Path, display: &str) -> Result<String, SchemaError> {
    std::fs::read_to_string(path).map_err(|e| SchemaError(format!("{display}: {e}")))
}

impl SchemaFile {
    /// Parses `text` as a schema file named `display`.
    pub fn parse(display: &str, path: PathBuf, text: String) -> Result<Self, SchemaError> {
        let toml = parse_toml::<FileToml>(display, &text)?;
        Ok(Self { display: display.to_string(), path, text, toml })
    }

    /// An error at the start of `span`.
    pub fn error_at(&self, span: std::ops::Range<usize>, msg: impl std::fmt::Display) -> SchemaError {
        error_in(&self.display, &self.text, span.start, msg)
    }
}

/// The refusal table's file name in a schema directory ([`crate::errors`]).
pub const ERRORS_FILE: &str = "errors.toml";

/// The kinds table's file name in a schema directory ([`crate::kinds`]).
pub const KINDS_FILE: &str = "kinds.toml";

/// Reads every `*.toml` of `dir` (but the refusal and kinds tables), sorted by name. `display_prefix` is prepended to file
/// names in messages (for example `schema/`).
pub fn load_dir(dir: &Path, display_prefix: &str) -> Result<Vec<SchemaFile>, SchemaError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| SchemaError(format!("{}: cannot read the schema directory: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        // The refusal table and the kinds table are not schema files: `refusals!` and
        // `kinds!` expand them.
        .filter(|p| !p.ends_with(ERRORS_FILE) && !p.ends_with(KINDS_FILE))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(SchemaError(format!("{}: no *.toml schema files", dir.display())));
    }
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let display = format!("{display_prefix}{name}");
            let text = read_text(&path, &display)?;
            SchemaFile::parse(&display, path, text)
        })
        .collect()
}
