//! Codegen on small schemas: the generated tokens of a known schema, and schema errors that
//! name `file:line:col`.
use std::path::PathBuf;

use neff_schema_codegen::kinds::{KindEnum, Kinds};
use neff_schema_codegen::{generate, SchemaFile};

fn file(name: &str, text: &str) -> Result<SchemaFile, neff_schema_codegen::SchemaError> {
    SchemaFile::parse(&format!("schema/{name}"), PathBuf::from(name), text.to_string())
}

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schema")
}

/// The real kinds table: the small schemas below name its tiers.
fn kinds() -> Kinds {
    neff_schema_codegen::load_kinds(&schema_dir(), "schema/").unwrap()
}

fn gen(files: &[(&str, &str)]) -> Result<String, String> {
    let files: Vec<SchemaFile> = files.iter().map(|(n, t)| file(n, t)).collect::<Result<_, _>>().map_err(|e| e.0)?;
    generate(&files, &kinds()).map(|ts| ts.to_string()).map_err(|e| e.0)
}

const SMALL: &str = r#"
stage = "Kelf"

[[capacity]]
name = "NAME"
default = 8
doc = "Bytes of a name."

[[enum]]
name = "Color"
c_name = "color_t"
repr = "u32"
doc = "A color."
[[enum.variant]]
name = "Red"
value = 1
json = ["red", "r"]
[[enum.variant]]
name = "Blue"
value = 7
json = ["blue"]

[[layout]]
name = "Pair"
c_name = "pair_t"
size = 16
doc = "Two numbers."
[[layout.field]]
name = "a"
type = "u32"
offset = 0
doc = "First"
[[layout.field]]
name = "b"
type = "u64"
offset = 8
doc = "Second"

[[object]]
name = "Doc"
root = true
doc = "A document."
[[object.key]]
key = "name"
aliases = ["title"]
type = "string<NAME>"
field = "name"
required = true
missing = "Missing name"
map = "Color"
doc = "The name."
[[object.key]]
key = "n"
type = "u32"
field = "n"
default = 3
doc = "A count."
[[object.key]]
key = "items"
type = "each<Item>"
entry = "Item"
field = "items"
doc = "Items, streamed."

[[object]]
name = "Item"
doc = "One item."
[[object.key]]
key = "id"
type = "u64"
field = "id"
required = true
doc = "Its id."
"#;

#[test]
fn golden_tokens_of_a_small_schema() {
    let out = gen(&[("small.toml", SMALL)]).unwrap();
    let expect = [
        // capacities are plain consts of one module
        "pub mod cap { # [doc = \" Bytes of a name.\"] pub const NAME : usize = 8 ; # [doc = r\" Every capacity as a bare-metal target (the firmware profile) has it, on any\"] # [doc = r\" target: what a host says a controller needs.\"] pub mod bare_metal { # [allow (missing_docs)] pub const NAME : usize = 8 ; } }",
        // enum with exact values, lookup over every json string, value()
        "# [repr (u32)] pub enum Color {",
        "Red = 1 ,",
        "Blue = 7 ,",
        "(\"red\" , Self :: Red) , (\"r\" , Self :: Red) ,",
        "pub const fn value (self) -> u32 { self as u32 }",
        // layout with its assertions
        "# [repr (C)]",
        "pub struct Pair { # [doc = \" First (offset 0).\"] pub a : u32 , # [doc = \" Second (offset 8).\"] pub b : u64 , }",
        ":: static_assertions :: assert_eq_size ! (Pair , [u8 ; 16]) ;",
        ":: static_assertions :: const_assert_eq ! (:: core :: mem :: offset_of ! (Pair , b) , 8) ;",
        // object without const parameters, required + default fields
        "pub struct Doc {",
        "pub name : :: heapless :: String < { crate :: manifest :: cap :: NAME } > ,",
        "pub n : u32 ,",
        "n : 3 as u32 ,",
        // the key table: every name with its slot (the alias too), the keys with the runtime's
        // message, the required mask; the fields by slot
        "names : & [(\"name\" , 0) , (\"title\" , 0) , (\"n\" , 1) , (\"items\" , 2) ,]",
        "keys : & [crate :: manifest :: RequiredKey { key : \"name\" , message : \"Missing name\" } , crate :: manifest :: RequiredKey { key : \"n\" , message : \"\" } , crate :: manifest :: RequiredKey { key : \"items\" , message : \"\" }]",
        "required : 1 ,",
        "crate :: manifest :: rt :: read_object (cx , & KEYS , self)",
        "0 => :: core :: option :: Option :: Some (& mut self . name) ,",
        "names : & [\"NAME\"]",
        // a strict-less map: no check
        "strict : :: core :: option :: Option :: None",
        // the map accessor
        "pub fn name_kind (& self) -> :: core :: option :: Option < Color > { Color :: from_json (self . name . as_str ()) }",
        // the key table
        "tier : \"kelf\" , path : \"name\" , aliases : & [\"title\"] , json_type : \"string\" , required : true",
        "pub const STAGE : crate :: Stage = crate :: Stage :: Kelf ;",
        // a streamed key: one slot, and each element handed on as its Entry variant
        "pub items : :: core :: option :: Option < crate :: manifest :: rt :: Each < Item , crate :: manifest :: streamed :: Item > > ,",
        "pub mod streamed {",
        "impl crate :: manifest :: rt :: EntryOf < Item > for streamed :: Item { fn entry (value : & Item) -> Entry < '_ > { Entry :: Item (value) } }",
        "pub enum Entry < 'a > {",
        "Item (& 'a Item) ,",
        "Entry :: Item (_) => \"items\" ,",
        // the value visitor: each field by its JSON key, an object opened and closed around its
        // fields, a streamed element visited with no key
        "pub fn visit_fields < V : crate :: manifest :: fields :: FieldVisitor + ? Sized > (& self , v : & mut V) { crate :: manifest :: fields :: VisitValue :: visit_value (& self . name , :: core :: option :: Option :: Some (\"name\") , v) ; crate :: manifest :: fields :: VisitValue :: visit_value (& self . n , :: core :: option :: Option :: Some (\"n\") , v) ; crate :: manifest :: fields :: VisitValue :: visit_value (& self . items , :: core :: option :: Option :: Some (\"items\") , v) ; }",
        "impl crate :: manifest :: fields :: VisitValue for Doc { fn visit_value < V : crate :: manifest :: fields :: FieldVisitor + ? Sized > (& self , key : :: core :: option :: Option < & 'static str > , v : & mut V ,) { v . open (key , false) ; self . visit_fields (v) ; v . close () ; } }",
        "Entry :: Item (e) => crate :: manifest :: fields :: VisitValue :: visit_value (* e , :: core :: option :: Option :: None , v) ,",
    ];
    for e in expect {
        assert!(out.contains(e), "missing `{e}` in:\n{out}");
    }
}

#[test]
fn names_a_person_gives_a_variant_are_its_json_strings_then_its_other_names() {
    let named = SMALL.replacen("json = [\"blue\"]", "json = [\"blue\"]\nnames = [\"azure\", \"b2\"]", 1);
    let out = gen(&[("small.toml", &named)]).unwrap();
    let table = "pub const NAMES : & 'static [(& 'static str , Self)] = & [(\"red\" , Self :: Red) , (\"r\" , Self :: Red) , (\"blue\" , Self :: Blue) , (\"azure\" , Self :: Blue) , (\"b2\" , Self :: Blue) ,] ;";
    assert!(out.contains(table), "{out}");
    assert!(out.contains("pub fn from_name (name : & str)"), "{out}");
    // Without `names`, an enum has only its JSON strings: no name table.
    assert!(!gen(&[("small.toml", SMALL)]).unwrap().contains("NAMES"));
    // A name is one variant's, and never a JSON string's.
    let clash = SMALL.replacen("json = [\"blue\"]", "json = [\"blue\"]\nnames = [\"red\"]", 1);
    let e = gen(&[("small.toml", &clash)]).unwrap_err();
    assert!(e.starts_with("schema/small.toml:") && e.ends_with("name \"red\" is empty or names two variants"), "{e}");
}

#[test]
fn output_is_deterministic() {
    let a = gen(&[("small.toml", SMALL)]).unwrap();
    let b = gen(&[("small.toml", SMALL)]).unwrap();
    assert_eq!(a, b);
}

#[test]
fn toml_syntax_error_names_file_line_col() {
    let broken = "stage = \"Kelf\"\n[[capacity]]\nname = \"A\"\ndefault = \"eight\"\ndoc = \"\"\n";
    let e = gen(&[("broken.toml", broken)]).unwrap_err();
    assert!(e.starts_with("schema/broken.toml:4:11:"), "{e}");
    assert!(e.contains("invalid type"), "{e}");
}

#[test]
fn unknown_schema_key_is_rejected_with_the_valid_ones() {
    let broken = "[[capacity]]\nname = \"A\"\ndefualt = 3\ndoc = \"\"\n";
    let e = gen(&[("typo.toml", broken)]).unwrap_err();
    assert!(e.starts_with("schema/typo.toml:3:1:"), "{e}");
    assert!(e.contains("unknown field `defualt`"), "{e}");
}

#[test]
fn semantic_schema_errors_name_file_line_col() {
    let bad_cap = SMALL.replace("type = \"string<NAME>\"", "type = \"string<NAMES>\"");
    let e = gen(&[("small.toml", &bad_cap)]).unwrap_err();
    let line = SMALL.lines().position(|l| l.contains("type = \"string<NAME>\"")).unwrap() + 1;
    assert_eq!(e, format!("schema/small.toml:{line}:8: unknown capacity `NAMES` (declare it in a [[capacity]] table)"));

    let bad_ty = SMALL.replace("type = \"u32\"\nfield = \"n\"", "type = \"u23\"\nfield = \"n\"");
    let e = gen(&[("small.toml", &bad_ty)]).unwrap_err();
    assert!(e.contains("unknown type `u23`"), "{e}");
    assert!(e.starts_with("schema/small.toml:"), "{e}");

    let dup_value = SMALL.replace("value = 7", "value = 1");
    let e = gen(&[("small.toml", &dup_value)]).unwrap_err();
    assert!(e.contains("value 1 is used twice in `Color`"), "{e}");

    let bad_offset = SMALL.replace("offset = 8", "offset = 4");
    // Offsets are checked by the compiler through the generated assertions, not here.
    assert!(gen(&[("small.toml", &bad_offset)]).unwrap().contains("offset_of ! (Pair , b) , 4"));

    let no_entry = SMALL.replace("entry = \"Item\"\n", "");
    let e = gen(&[("small.toml", &no_entry)]).unwrap_err();
    assert!(e.contains("an each<..> or each_map<..> key needs an `entry` name"), "{e}");

    let stray_entry = SMALL.replace("default = 3\n", "default = 3\nentry = \"N\"\n");
    let e = gen(&[("small.toml", &stray_entry)]).unwrap_err();
    assert!(e.contains("`entry` applies to each<..> and each_map<..> keys"), "{e}");

    let bad_default = SMALL.replace("default = 3", "default = \"three\"");
    let e = gen(&[("small.toml", &bad_default)]).unwrap_err();
    assert!(e.contains("does not fit type unsigned integer"), "{e}");

    let not_a_tier = SMALL.replace("stage = \"Kelf\"", "stage = \"Payload\"");
    let e = gen(&[("small.toml", &not_a_tier)]).unwrap_err();
    assert_eq!(
        e,
        "schema/small.toml:2:9: unknown stage `Payload` (expected a tier's: DefJson, Engine, Kelf, NeffJson)"
    );
}

#[test]
fn the_real_schema_directory_generates() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schema");
    let files = neff_schema_codegen::model::load_dir(&dir, "schema/").unwrap();
    let out = generate(&files, &kinds()).unwrap().to_string();
    for name in ["pub struct DefJson", "pub enum UsageClass", "pub struct IoNodeInfo", "CONSUMED_KEYS"] {
        assert!(out.contains(name), "{name}");
    }
}

fn kinds_of(text: &str) -> Result<Kinds, String> {
    Kinds::parse("schema/kinds.toml", PathBuf::from("kinds.toml"), text.to_string()).map_err(|e| e.0)
}

fn real_kinds_text() -> String {
    std::fs::read_to_string(schema_dir().join("kinds.toml")).unwrap()
}

#[test]
fn every_kind_enum_of_the_real_table_generates_from_one_list() {
    let kinds = kinds();
    let files = neff_schema_codegen::model::load_dir(&schema_dir(), "schema/").unwrap();
    let out = |which| kinds.generate(which, &files).unwrap().to_string();
    let tiers = ["Neff", "Kelf", "Def", "Engine"];
    let stage = out(KindEnum::Stage);
    assert!(stage.contains("Stage :: DefJson => \"def.json\""), "{stage}");
    let kind = out(KindEnum::ManifestKind);
    for (code, tier) in tiers.iter().enumerate() {
        assert!(kind.contains(&format!("ManifestKind :: {tier} => {}", code + 1)), "{tier}: {kind}");
    }
    assert!(kind.contains("ManifestKind :: Def => crate :: error :: Stage :: DefJson"), "{kind}");
    // The tiers' documents are the root objects of the schema files of their stages.
    let scratch = out(KindEnum::Scratch);
    for doc in [
        "Neff (crate :: manifest :: NeffJson)",
        "Def (crate :: manifest :: DefJson)",
        "Engine (crate :: manifest :: EngineJson)",
    ] {
        assert!(scratch.contains(doc), "{doc}: {scratch}");
    }
    let manifest = out(KindEnum::Manifest);
    assert!(
        manifest.contains("Def (& 'a crate :: manifest :: DefJson , & 'a crate :: manifest :: def :: DefFacts)"),
        "{manifest}"
    );
    let event = out(KindEnum::Event);
    assert!(event.contains("Num (crate :: json :: Number < 'a >)"), "{event}");
    assert!(event.contains("Event :: End => crate :: error :: TokenKind :: End"), "{event}");
    assert!(out(KindEnum::JsonType).contains("JsonType :: Integer => \"negative integer\""));
    assert!(out(KindEnum::TokenKind).contains("TokenKind :: EndArray => \"']'\""));
    // The core's statuses: the runtime's numbers and names; the C ABI's own are not the core's.
    let status = out(KindEnum::Status);
    assert!(status.contains("UnsupportedNeffVersion = 10u32"), "{status}");
    assert!(status.contains("Status :: Invalid => \"NRT_INVALID\""), "{status}");
    assert!(!status.contains("BadArgument") && !status.contains("Ok ="), "{status}");
}

#[test]
fn kinds_table_errors_name_file_line_col() {
    let text = real_kinds_text();
    let swapped = text.replacen("code = 2", "code = 5", 1);
    let e = kinds_of(&swapped).unwrap_err();
    assert!(e.starts_with("schema/kinds.toml:"), "{e}");
    assert!(e.ends_with("tier codes run 1, 2, ... in order: expected 2"), "{e}");

    let twice = text.replacen("name = \"Gzip\"", "name = \"Header\"", 1);
    let e = kinds_of(&twice).unwrap_err();
    assert!(e.ends_with("`Header` is listed twice"), "{e}");

    let bad_type = text.replacen("event = \"bool\"", "event = \"bool bool\"", 1);
    let e = kinds_of(&bad_type).unwrap_err();
    assert!(e.ends_with("`bool bool` is not a Rust type"), "{e}");

    // The C ABI's numbers have one meaning each; its own stages stay clear of the data path's.
    let reused = text.replacen("value = 66", "value = 65", 1);
    let e = kinds_of(&reused).unwrap_err();
    assert!(e.ends_with("value 65 is taken (the stages take 0, 1, ... in order)"), "{e}");
    let clash = text.replacen("value = 254", "value = 3", 1);
    let e = kinds_of(&clash).unwrap_err();
    assert!(e.ends_with("value 3 is taken (the stages take 0, 1, ... in order)"), "{e}");
    let no_nrt = text.replacen("nrt = \"NRT_INVALID\"", "", 1);
    let e = kinds_of(&no_nrt).unwrap_err();
    assert!(e.ends_with("a status of the core needs its runtime enumerator (`nrt`)"), "{e}");

    let typo = text.replacen("printed = \"io\"", "printd = \"io\"", 1);
    let e = kinds_of(&typo).unwrap_err();
    assert!(e.starts_with("schema/kinds.toml:"), "{e}");
    assert!(e.contains("unknown field `printd`"), "{e}");
}

#[test]
fn a_tier_needs_one_root_object_of_its_stage() {
    let kinds = kinds();
    let mut files = neff_schema_codegen::model::load_dir(&schema_dir(), "schema/").unwrap();
    files.retain(|f| !f.display.ends_with("kelf.toml"));
    let e = kinds.generate(KindEnum::Scratch, &files).unwrap_err().0;
    assert!(e.ends_with("tier `Kelf` needs one root object in a schema file of stage `Kelf`, found 0"), "{e}");
    assert!(kinds.generate(KindEnum::Stage, &files).is_ok());
}
