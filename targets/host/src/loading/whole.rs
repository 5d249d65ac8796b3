//! Error lines with whole names: what the loader noted whole, and on a file input the
//! names a refusal keeps in part, read again from the naming manifest ([`crate::located`]).

use neff::loader::Loader;

use crate::error::CliError;
use crate::source::Again;

/// The CLI error of a load's error `e`, its line printing the names the loader noted whole
/// ([`whole_line`]).
pub(super) fn whole(loader: &Loader<'_>, e: neff::Error, again: Option<&Again>) -> CliError {
    let (line, fault) = whole_line(loader, &e, again);
    match CliError::from_core(e, line) {
        CliError::Rejected { message, hints, .. } => {
            CliError::Rejected { message, hints, fault: Some(Box::new(fault)) }
        }
        other => other,
    }
}

/// The line and fields of a load's error `e`: the member and key path the loader noted whole,
/// and, when the input can be read again ([`crate::located`]), the names its kind keeps only
/// in part: a missing member whole, with its var's name in the key path, or the string at
/// the key path whole (a library named twice).
pub(super) fn whole_line(loader: &Loader<'_>, e: &neff::Error, again: Option<&Again>) -> (String, crate::error::Fault) {
    let whole = loader.whole_names(e);
    let mut fault = crate::error::Fault::of(e, whole.member(), whole.key_path());
    let mut line = whole.to_string();
    let missing = match e.kind {
        neff::ErrorKind::Chain(neff::error::ChainError::MemberMissing { member }) => Some(member),
        _ => None,
    };
    // A text the kind keeps in part prints with a leading `…`.
    let cut = fault.reason.split_whitespace().find(|w| w.starts_with('…')).map(str::to_owned);
    let (Some(again), Some(by), Some(path)) = (again, fault.member.clone(), fault.key_path.clone()) else {
        return (line, fault);
    };
    if missing.is_none() && cut.is_none() {
        return (line, fault);
    }
    let Some(doc) = crate::located::manifest(again, &by) else { return (line, fault) };
    let found = match (missing, cut) {
        (Some(member), _) => {
            // An engine JSON's names are its definition's directory's (spec §4).
            let dirs: Vec<&str> = loader.definition_dirs_of(&by).collect();
            crate::located::locate(&doc, &by, &dirs, &path, &member).map(|s| (s.key_path, member.to_string(), s.member))
        }
        (None, Some(shown)) => {
            let tail = shown.trim_start_matches('…');
            let value = crate::located::value_at(&doc, &path).filter(|v| v.ends_with(tail) && v.len() > tail.len());
            value.map(|v| (path.clone(), shown.clone(), v))
        }
        (None, None) => None,
    };
    let Some((new_path, shown, whole)) = found else { return (line, fault) };
    let (old_at, new_at) = (format!(": {path}: "), format!(": {new_path}: "));
    if let Some(at) = line.find(&old_at) {
        // Replaced after the key path only: the member the error is about precedes it.
        let (head, tail) = line.split_at(at);
        let tail = tail.replacen(&old_at, &new_at, 1).replacen(&shown, &whole, 1);
        line = format!("{head}{tail}");
    }
    fault.reason = fault.reason.replacen(&shown, &whole, 1);
    fault.key_path = Some(new_path);
    (line, fault)
}
