//! The refusal table's codegen on small tables: the generated enums, messages and documents,
//! the C names, and table errors that name `file:line:col`.
use std::path::PathBuf;

use neff_schema_codegen::errors::{c_name, placeholders, screaming, Errors, LayerPart};

const HEAD: &str = r#"
refusals_intro = "Intro."
refusals_legend = "Legend."
warnings_intro = "Warnings intro."
codes_intro = "Codes intro."

[constants]
LIMIT = 0x20

[[refusal]]
variant = "Truncated"
code = 200
status = "Invalid"
message = "unexpected end of input"
basis = "decision"
spec = "§3.1"
source = "format"
doc = "The input ended."

[[layer]]
name = "Demo"
hundred = 5
error = "DemoError"
error_doc = "Errors of the demo layer."
warning = "DemoWarning"
warning_doc = "Warnings of the demo layer."
"#;

const ROWS: &str = r#"
[[refusal]]
layer = "Demo"
variant = "TooLong"
code = 501
status = "Resource"
message = "length {len} is above {LIMIT:x} ({what})"
args = { what = "describe(len)" }
basis = "seed"
spec = "§2.5 (gate 2)"
source = "seed: libnrt"
doc = "Too long."
fields = [{ name = "len", type = "u64", doc = "The length." }]

[[refusal]]
layer = "Demo"
variant = "Magic"
code = 502
status = "Invalid"
message = "bad magic {found:02x?}"
basis = "secondary only"
spec = "§3.1"
source = "**secondary only**: W-META"
doc = "Bad magic."
fields = [{ name = "found", type = "[u8; 2]", doc = "The bytes." }]
[[refusal.case]]
when = "b0 == 0"
bind = { found = "[b0, b1]" }
message = "zero magic, then {b1}"

[[refusal]]
layer = "Demo"
variant = "Empty"
code = 503
status = "Invalid"
message = "empty"
basis = "decision"
spec = "§4"
source = "loader"
doc = "Empty."

[[warning]]
layer = "Demo"
variant = "Odd"
code = 501
message = "{n} is odd"
basis = "official"
spec = "§4"
source = "official: DOC-NEFF"
doc = "Odd."
tuple = true
fields = [{ name = "n", type = "u32" }]
"#;

fn table(text: &str) -> Result<Errors, String> {
    Errors::parse("schema/errors.toml", PathBuf::from("errors.toml"), text.to_string()).map_err(|e| e.0)
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect()
}

#[test]
fn a_layer_expands_to_its_enums_codes_statuses_and_messages() {
    let t = table(&format!("{HEAD}{ROWS}")).unwrap();
    let types = squash(&t.generate_layer("Demo", LayerPart::Types).unwrap().to_string());
    assert!(types.contains("pubenumDemoError{"), "{types}");
    assert!(types.contains("TooLong{#[doc=\"Thelength.\"]len:u64}"), "{types}");
    assert!(types.contains("DemoError::TooLong{..}=>1u8"), "{types}");
    assert!(types.contains("DemoError::Empty=>3u8"), "{types}");
    assert!(types.contains("DemoError::TooLong{..}=>crate::Status::Resource"), "{types}");
    assert!(types.contains("DemoError::Magic{..}|DemoError::Empty=>crate::Status::Invalid"), "{types}");
    assert!(types.contains("pubenumDemoWarning{#[doc=\"Odd.\"]Odd(u32)"), "{types}");
    assert!(types.contains("derive(defmt::Format)"), "{types}");

    let messages = squash(&t.generate_layer("Demo", LayerPart::Messages).unwrap().to_string());
    assert!(
        messages.contains(
            "DemoError::TooLong{len}=>::core::write!(f,\"length{len}isabove20({what})\",what=describe(len),len=len)"
        ),
        "{messages}"
    );
    assert!(messages.contains("DemoError::Magic{found:[b0,b1]}ifb0==0=>"), "{messages}");
    assert!(
        messages.contains("DemoError::Magic{found}=>::core::write!(f,\"badmagic{found:02x?}\",found=found)"),
        "{messages}"
    );
    assert!(messages.contains("DemoError::Empty=>f.write_str(\"empty\")"), "{messages}");
    assert!(messages.contains("DemoWarning::Odd(n)=>::core::write!(f,\"{n}isodd\",n=n)"), "{messages}");
    assert!(messages.contains("::static_assertions::const_assert_eq!(LIMIT,32)"), "{messages}");
}

#[test]
fn the_documents_are_rendered_from_the_rows() {
    let t = table(&format!("{HEAD}{ROWS}")).unwrap();
    let refusals = t.render_refusals();
    assert!(refusals.contains("| seed | 1 | 0 |\n| official | 0 | 1 |\n| secondary only | 1 | 0 |\n| decision | 2 | 0 |\n| total | 4 | 1 |"), "{refusals}");
    assert!(
        refusals.contains(
            "| `DemoError::TooLong` | `length {len} is above 20 ({what})` | `NRT_RESOURCE` (4) | §2.5 (gate 2) |"
        ),
        "{refusals}"
    );
    assert!(
        refusals.contains("| `DemoError::Magic` | `bad magic {found:02x?}` (or `zero magic, then {b1}`) |"),
        "{refusals}"
    );
    assert!(refusals.contains("| `DemoWarning::Odd` | `{n} is odd` | none (warning) |"), "{refusals}");
    let codes = t.render_error_codes();
    assert!(codes.contains("| 200 | `Truncated` | `NEFF_ERR_TRUNCATED` | The input ended |"), "{codes}");
    assert!(codes.contains("| 501 | `Demo(TooLong)` | `NEFF_ERR_DEMO_TOO_LONG` | Too long |"), "{codes}");
    let header = t.render_c_header();
    assert!(header.contains("#ifndef NEFF_CODES_H"));
    assert!(header.contains("typedef enum neff_error_code {"));
    assert!(header.contains("    NEFF_ERR_DEMO_MAGIC = 502,\n"));
    assert!(header.contains("    NEFF_WARN_DEMO_ODD = 501,\n} neff_warning_code;"));
}

#[test]
fn c_names_are_the_layer_and_the_variant_in_upper_snake_case() {
    assert_eq!(c_name(false, Some("Manifest"), "ArchMismatch"), "NEFF_ERR_MANIFEST_ARCH_MISMATCH");
    assert_eq!(c_name(false, None, "Truncated"), "NEFF_ERR_TRUNCATED");
    assert_eq!(c_name(true, Some("Tar"), "LoneZeroBlock"), "NEFF_WARN_TAR_LONE_ZERO_BLOCK");
    assert_eq!(screaming("HeaderSizeNot1024"), "HEADER_SIZE_NOT1024");
    assert_eq!(screaming("InvalidUtf8"), "INVALID_UTF8");
    assert_eq!(screaming("ABCDef"), "ABC_DEF");
    assert_eq!(screaming("Isize"), "ISIZE");
}

#[test]
fn placeholders_are_named() {
    assert_eq!(placeholders("a {x} {{b}} {y:02x}").unwrap(), ["x", "y"]);
    assert!(placeholders("a {} b").is_err());
    assert!(placeholders("a } b").is_err());
}

#[test]
fn mistakes_in_the_table_name_their_line() {
    let err = |rows: &str| table(&format!("{HEAD}{rows}")).unwrap_err();
    let row = |extra: &str| {
        format!(
            "[[refusal]]\nlayer = \"Demo\"\nvariant = \"New\"\ncode = 504\nstatus = \"Invalid\"\nbasis = \"decision\"\n\
             spec = \"§4\"\nsource = \"loader\"\ndoc = \"New.\"\n{extra}"
        )
    };
    let e = err(&row("message = \"n is {n}\"\n"));
    assert!(e.starts_with("schema/errors.toml:29:11: `New`") && e.contains("`{n}` is no field"), "{e}");
    let e = err(&row("message = \"above {OTHER}\"\n"));
    assert!(e.contains("constant `OTHER` has no value"), "{e}");
    let e = err(&format!("{ROWS}{}", row("message = \"x\"\n").replace("504", "503")));
    assert!(e.contains("code 503 is given twice"), "{e}");
    let e = err(&row("message = \"x\"\n").replace("504", "601"));
    assert!(e.contains("code 601 is not in layer Demo's 501..=599"), "{e}");
    let e = err(&row("message = \"x\"\n").replace("\"decision\"", "\"guess\""));
    assert!(e.contains("basis \"guess\" is not one of"), "{e}");
    let e = err(&row("message = \"x\"\n").replace("§4", "4"));
    assert!(e.contains("the spec names no section"), "{e}");
    let e = err(&row("message = \"x\"\n").replace("\"loader\"", "\"**secondary only**: W\""));
    assert!(e.contains("secondary only"), "{e}");
    let e = err(&row("message = \"x\"\n").replace("status = \"Invalid\"\n", ""));
    assert!(e.contains("a refusal needs a status"), "{e}");
    let e = err(&row("message = \"x\"\nfields = [{ name = \"a\", type = \"u8\" }]\n"));
    assert!(e.contains("field a has no doc"), "{e}");
    let e = err(&row("mesage = \"x\"\n"));
    assert!(e.contains("unknown field `mesage`"), "{e}");
}
