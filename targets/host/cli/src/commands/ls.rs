//! `neff ls`: prints [`neff_host::ls`]'s rows, one member a line, or as JSON.

use std::fmt::Write as _;

use neff_host::error::{print_stdout, CliError};
use neff_host::loading::consumed_pass;
use neff_host::ls::rows;
use serde_json::json;

use crate::cli::LsArgs;

/// Runs `neff ls`.
pub fn run(args: &LsArgs) -> Result<(), CliError> {
    let (pass, consumed) = consumed_pass(&args.file, "ls")?;
    let log = pass.members.as_ref().map(|m| m.members.as_slice()).unwrap_or_default();
    let rows = rows(&pass, &consumed);
    if args.json {
        let doc = json!({"file": args.file.display().to_string(), "members": rows});
        let mut t = serde_json::to_string_pretty(&doc).map_err(|e| CliError::rejected(e.to_string()))?;
        t.push('\n');
        return print_stdout(&t);
    }
    let mut out = String::new();
    let width = log.iter().map(|m| m.size.to_string().len()).max().unwrap_or(1);
    let (mut manifests, mut placed, mut unreached) = (0, 0, 0);
    for r in &rows {
        let kind = match (r["role"].as_str(), r["usage"].as_str()) {
            (Some("manifest"), _) => {
                manifests += 1;
                "manifest".to_owned()
            }
            (_, Some(usage)) => {
                placed += 1;
                format!("{usage} {}", r["core"].as_u64().map_or_else(|| "-".to_owned(), |c| c.to_string()))
            }
            (Some(role), None) => role.to_owned(),
            (None, None) => {
                unreached += 1;
                "-".to_owned()
            }
        };
        let by = match r["reached_by"].as_array() {
            None => "  (not reached)".to_owned(),
            Some(refs) if refs.is_empty() => "  (the chain's root)".to_owned(),
            Some(refs) => format!(
                "  <- {}",
                refs.iter()
                    .map(|x| format!("{} {}", x["member"].as_str().unwrap_or(""), x["key"].as_str().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let size = r["size"].as_u64().unwrap_or(0);
        let _ = writeln!(out, "{size:>width$}  {kind:<12}  {}{by}", r["name"].as_str().unwrap_or(""));
    }
    let total: u64 = log.iter().map(|m| m.size).sum();
    let _ = writeln!(
        out,
        "{} members, {total} bytes: {manifests} manifests, {placed} payloads, {unreached} not reached",
        log.len()
    );
    print_stdout(&out)
}
