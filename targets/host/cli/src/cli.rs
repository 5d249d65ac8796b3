//! The command line: verbs, flags and their value parsers (`clap` derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

/// Inspect, check, load, unpack and pack AWS Neuron NEFF model files.
///
/// Every verb reads its FILE as a stream through a fixed-size buffer. Exit status: 0 ok,
/// 1 the input was rejected, 2 a usage error or a path that cannot be read or written.
///
/// Environment: the verbs that load read the runtime's own fp8 overrides,
/// NEURON_RT_DBG_FP8_RANGE_EXT, NEURON_RT_DBG_FP8_EMAX_E4M3, NEURON_RT_DBG_FP8_EMAX_E5M2,
/// NEURON_RT_DBG_OCP_FP8_SAT, NEURON_RT_DBG_FP8_SIS and NEURON_RT_DBG_FP8_SNS (flags 0 or 1,
/// exponents as numbers), and put each in place of every subgraph's fp8_conversion_config
/// value, as libnrt does.
#[derive(Debug, Parser)]
#[command(name = "neff", version, propagate_version = true)]
pub struct Cli {
    /// Print the runtime's debug lines (`Found KELF node: kelf-0.json`) and each subgraph's fp8
    /// conversion config as loaded (the overrides applied) on stderr, as the loader meets them.
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// The verb.
    #[command(subcommand)]
    pub command: Command,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print what a NEFF holds: header, KELF nodes, I/O tensors, subgraphs.
    ///
    /// Without FILE, shows the built-in sample NEFF.
    Info(InfoArgs),
    /// Validate a NEFF without a device: header gates, archive, every manifest, every payload.
    ///
    /// Several files are checked --threads at a time; their reports come in the order given,
    /// each refusal named by its file, then a count of the refused ones.
    Check(CheckArgs),
    /// Load a NEFF into the simulated device and print the load report.
    ///
    /// Without FILE, loads the built-in sample NEFF.
    Load(LoadArgs),
    /// Write every member of a NEFF under DIR (never outside it), plus DIR/header.json.
    Unpack(UnpackArgs),
    /// Build a NEFF from a directory (the inverse of unpack; like `neuron-packager create`).
    Pack(PackArgs),
    /// Print the manifest keys the loader consumes, as generated from schema/.
    Schema(SchemaArgs),
    /// Device memory per physical NeuronCore before loading, in the runtime's categories.
    ///
    /// Each core's figure is what the NEFF itself holds (exact: weights, instruction streams,
    /// tables, the shared scratchpad its virtual vars reach, the I/O tensors on the first
    /// core) plus the runtime's own overhead on that arch, labelled as such: constants measured
    /// from ten neuron-profile reports on a trn2.3xlarge (neuronx-cc 2.23, driver 2.26; the
    /// profile.json files of ../shared/fixtures/public/trainium-kernel-fusion). Only cayman
    /// (Trn2) has measured constants. Several files: also their sum on the same cores and the
    /// largest.
    Mem(MemArgs),
    /// What differs between two NEFFs: header, members, consumed manifest keys, I/O, payloads.
    ///
    /// Members are compared by the XXH3 digest of their bytes (debug data and producer metadata
    /// included); manifest keys by member and key path, with both values; payloads by the
    /// digest of the bytes that land. Exit status as diff(1): 0 the same, 1 different, 2 a
    /// usage error, an unreadable path or a NEFF the loader refuses.
    Diff(DiffArgs),
    /// List the members with their size and role (the key that reached each), like `tar -tv`.
    Ls(LsArgs),
    /// Write one member to stdout, streamed (--data: a .npy member's array bytes only).
    Cat(CatArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the man page (roff), of neff or of one verb.
    Man(ManArgs),
    /// Check a Neuron compile cache: each entry's state, compiler, size, device memory.
    ///
    /// libneuronxla's neuronxcc-<version>/MODULE_<hash>/ entries of every age (model.neff,
    /// model.log, compile_flags.txt or .json, model.done where it writes one, *.lock) and
    /// vllm-neuron's <hash>/graph_<hash>.neff (.compilation_complete). Every NEFF is checked,
    /// done marker or not. States: ok (check accepts the NEFF), broken (check refuses it),
    /// failed (the ERROR marker, or a log and no NEFF: the compiler's reason is shown),
    /// uncompiled (HLO and flags only, no NEFF), incomplete (a refused NEFF without the done
    /// marker its compiler writes), locked (a lock file is held); a lock nobody holds is
    /// reported as stale. `clean` removes each kind inside DIR, never following a link, never
    /// an entry whose lock is held.
    Cache(CacheArgs),
}

/// `neff info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The NEFF file (default: the built-in sample).
    pub file: Option<PathBuf>,
    /// One JSON object on stdout (keys as in the CLI contract).
    /// A refusal is `{"error": {...}}` on stdout instead (code, status, stage, member, key_path,
    /// offset, offset_base, message, hints; exit 1).
    #[arg(long)]
    pub json: bool,
    /// Compute the payload's MD5 (pkg_version 2) or SHA-256 (pkg_version 1) while streaming
    /// and compare it with the header's hash, in either byte order real compilers write
    /// (spec §2.6); print the result. A mismatch exits 1 (`MD5 mismatch!`).
    #[arg(long)]
    pub verify: bool,
    /// Inflate a big NEFF file's gzip stream in parallel chunks with N worker threads (N >= 2;
    /// default: 2 on a host with two cores or more; 1: one inflating thread). The output is the
    /// same for every N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// `neff check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The NEFF files.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[arg(long, value_enum, help = arch_help("Reject a NEFF whose KELF target does not run on this arch", ""))]
    pub arch: Option<Arch>,
    /// Accept what NEURON_RT_ALLOW_LEGACY_NEFF=1 accepts (older arch, missing carveout).
    #[arg(long)]
    pub allow_legacy: bool,
    /// Compute the payload's MD5 (pkg_version 2) or SHA-256 (pkg_version 1) while streaming
    /// and compare it with the header's hash, in either byte order real compilers write
    /// (spec §2.6); print the result. A mismatch exits 1 (`MD5 mismatch!`).
    #[arg(long)]
    pub verify: bool,
    /// Check N files at once (default: the cores available). The output is the same for
    /// every N; 1 checks them one after another on one thread. With one file, inflate its gzip
    /// stream with N worker threads when it is big (N >= 2).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Print one JSON object per FILE, a line each, in the order given: the check's report
    /// (warnings as objects), or `{"error": {...}}` for a refused file (code, status, stage,
    /// member, key_path, offset, offset_base, message, hints).
    #[arg(long)]
    pub json: bool,
}

/// `neff load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The NEFF file (default: the built-in sample).
    pub file: Option<PathBuf>,
    #[arg(long, value_enum, help = arch_help(
        "Pins the simulated device's arch",
        "; the NEFF's KELF target must match it. Default: the NEFF's own KELF target (cayman, a Trn2, for `*`)",
    ))]
    pub arch: Option<Arch>,
    /// Size of the simulated device memory, in host memory: bytes, or with a suffix K, M, G
    /// (powers of 1024). Default 64M: room for the payloads of the real test NEFFs and their
    /// staging; host pages are touched only where payloads land.
    #[arg(long, value_name = "BYTES", value_parser = parse_byte_size, conflicts_with = "digest_only")]
    pub device_mem: Option<u64>,
    /// Keep allocation records and payload digests without storing the bytes (a 64 GiB
    /// address space, no host memory per byte).
    #[arg(long)]
    pub digest_only: bool,
    /// Print the load report as one JSON object on stdout.
    /// A refusal is `{"error": {...}}` on stdout instead (code, status, stage, member, key_path,
    /// offset, offset_base, message, hints; exit 1).
    #[arg(long)]
    pub json: bool,
    /// Compute the payload's MD5 (pkg_version 2) or SHA-256 (pkg_version 1) while streaming
    /// and compare it with the header's hash, in either byte order real compilers write
    /// (spec §2.6); print the result. A mismatch exits 1 (`MD5 mismatch!`).
    #[arg(long)]
    pub verify: bool,
    /// Inflate a big NEFF file's gzip stream in parallel chunks with N worker threads (N >= 2;
    /// default: 2 on a host with two cores or more; 1: one inflating thread). The output is the
    /// same for every N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Measure what a controller must lend to load this NEFF: the load runs on a digest-only
    /// device that lends a notebook, and the report ends with each buffer's need (arena,
    /// notebook, replay store, deferred-error slots), the arena as a bare-metal target needs it.
    #[arg(long, conflicts_with_all = ["device_mem", "digest_only"])]
    pub budget: bool,
}

/// `neff unpack`.
#[derive(Debug, Args)]
pub struct UnpackArgs {
    /// The NEFF file.
    pub file: PathBuf,
    /// The directory to write into (created if missing; existing files are never overwritten).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// Inflate a big NEFF file's gzip stream in parallel chunks with N worker threads (N >= 2;
    /// default: 2 on a host with two cores or more; 1: one inflating thread). The output is the
    /// same for every N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// `neff pack`.
#[derive(Debug, Args)]
pub struct PackArgs {
    /// The directory to pack (as written by unpack, or any directory of members).
    pub dir: PathBuf,
    /// The NEFF file to write (replaced if it exists).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// 2: gzip'd tar, MD5 in the header (default, or what DIR/header.json says);
    /// 1: raw tar, SHA-256.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=2))]
    pub pkg_version: Option<u64>,
}

/// `neff schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = SchemaFormat::Markdown)]
    pub format: SchemaFormat,
}

/// `neff cat`.
#[derive(Debug, Args)]
pub struct CatArgs {
    /// The NEFF file.
    pub file: PathBuf,
    /// The members' paths in the archive (as `neff ls` prints them), written one after the
    /// other in the order given. Several members are read through a member index built in one
    /// pass (`crate::index`): each is inflated from the last checkpoint before it.
    #[arg(required = true, value_name = "MEMBER")]
    pub members: Vec<String>,
    /// Write a `.npy` member's array data only, without its header.
    #[arg(long)]
    pub data: bool,
    /// Inflate a big NEFF file's gzip stream in parallel chunks with N worker threads (N >= 2;
    /// default: 2 on a host with two cores or more; 1: one inflating thread). The output is the
    /// same for every N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// `neff diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first NEFF.
    pub a: PathBuf,
    /// The second NEFF.
    pub b: PathBuf,
    /// One JSON object on stdout.
    /// A refusal is `{"error": {...}}` on stdout instead (code, status, stage, member, key_path,
    /// offset, offset_base, message, hints; exit 1).
    #[arg(long)]
    pub json: bool,
    /// Inflate a big NEFF file's gzip stream in parallel chunks with N worker threads (N >= 2;
    /// default: 2 on a host with two cores or more; 1: one inflating thread). The output is the
    /// same for every N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// `neff ls`.
#[derive(Debug, Args)]
pub struct LsArgs {
    /// The NEFF file.
    pub file: PathBuf,
    /// One JSON object on stdout.
    /// A refusal is `{"error": {...}}` on stdout instead (code, status, stage, member, key_path,
    /// offset, offset_base, message, hints; exit 1).
    #[arg(long)]
    pub json: bool,
    /// Inflate a big NEFF file's gzip stream in parallel chunks with N worker threads (N >= 2;
    /// default: 2 on a host with two cores or more; 1: one inflating thread). The output is the
    /// same for every N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// `neff mem`.
#[derive(Debug, Args)]
pub struct MemArgs {
    /// The NEFF files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// One JSON object on stdout.
    /// A refusal is `{"error": {...}}` on stdout instead (code, status, stage, member, key_path,
    /// offset, offset_base, message, hints; exit 1).
    #[arg(long)]
    pub json: bool,
    /// Add the buffers neuron-profile allocates while it captures (Profiler Buffers).
    #[arg(long)]
    pub profiling: bool,
    /// Inflate a big NEFF file's gzip stream in parallel chunks with N worker threads (N >= 2;
    /// default: 2 on a host with two cores or more; 1: one inflating thread). The output is the
    /// same for every N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// `neff completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// `neff man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// A verb: its own page (`neff-VERB(1)`) instead of `neff(1)`.
    pub verb: Option<String>,
}

/// `neff cache`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CacheArgs {
    /// What to do besides listing.
    #[command(subcommand)]
    pub action: Option<CacheAction>,
    /// The cache root (default: the local path in NEURON_COMPILE_CACHE_URL, else
    /// /var/tmp/neuron-compile-cache).
    pub dir: Option<PathBuf>,
    /// One JSON object on stdout.
    /// A refusal is `{"error": {...}}` on stdout instead (code, status, stage, member, key_path,
    /// offset, offset_base, message, hints; exit 1).
    #[arg(long)]
    pub json: bool,
    /// Check N entries at once (default: the cores available). The output is the same for
    /// every N; 1 checks them one after another on one thread.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// `neff cache` actions.
#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Remove leftovers: failed, broken or uncompiled entries, stale locks, older compilers.
    Clean(CleanArgs),
}

/// `neff cache clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// The cache root (as for `neff cache`).
    pub dir: Option<PathBuf>,
    /// Remove entries whose compile failed (the ERROR marker, or a log and no NEFF).
    #[arg(long)]
    pub failed: bool,
    /// Remove entries whose NEFF `check` refuses.
    #[arg(long)]
    pub broken: bool,
    /// Remove entries with no NEFF and no log (HLO and flags only).
    #[arg(long)]
    pub uncompiled: bool,
    /// Remove lock files nobody holds (each while this command holds it), keeping the entries.
    #[arg(long)]
    pub stale_locks: bool,
    /// Remove entries compiled by a compiler older than VERSION (e.g. 2.23).
    #[arg(long, value_name = "VERSION")]
    pub older_than: Option<String>,
    /// Say what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Check N entries at once (as for `neff cache`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// Output formats of `neff schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaFormat {
    /// Markdown tables, one per manifest tier.
    Markdown,
    /// One JSON array of key records.
    Json,
}

/// An accelerator architecture as `--arch` names it: codename, version or instance family
/// (`cayman`, `v3`, `trn2`), the names of the core's table ([`neff::manifest::Arch::NAMES`],
/// from `schema/maps.toml`); clap lists the codenames and takes the others as aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arch(pub neff::manifest::Arch);

impl Arch {
    /// The help line of each arch in `--help`'s possible values: what a person knows it by.
    fn help(self) -> &'static str {
        match self.0 {
            neff::manifest::Arch::Sunda => {
                "Trn1 / Inf2 (`al_hal_tpb_arch_type` 2); also named by its instance families"
            }
            neff::manifest::Arch::Cayman => "Trn2 (3)",
            neff::manifest::Arch::Mariana => "Trn3 (4)",
        }
    }
}

impl ValueEnum for Arch {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::OnceLock<Vec<Arch>> = std::sync::OnceLock::new();
        ALL.get_or_init(|| neff::manifest::Arch::ALL.iter().map(|&a| Arch(a)).collect())
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let mut names = neff::manifest::Arch::NAMES.iter().filter(|(_, a)| *a == self.0).map(|(n, _)| *n);
        let first = names.next()?;
        Some(clap::builder::PossibleValue::new(first).aliases(names).help(self.help()))
    }
}

impl From<Arch> for neff::manifest::Arch {
    /// The core's arch of a command-line `--arch`.
    fn from(arch: Arch) -> Self {
        arch.0
    }
}

/// The `--arch` flag's help: `what`, the names it takes (`sunda|v2|trn1|inf2, ...`, from the
/// core's table) in brackets, then `more`.
fn arch_help(what: &str, more: &str) -> String {
    format!("{what} ({}){more}", neff_host::loading::arch_name_groups().join(", "))
}

/// Parses a byte count: `4096`, `64K`, `64M`, `2G`, `1T` (powers of 1024; an optional
/// trailing `B` or `iB` is accepted, case-insensitive).
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!("{text:?} is not a byte count (expected e.g. 4096, 64M, 2G)"));
    }
    let value: u64 = digits.parse().map_err(|_| format!("{text:?} is too large"))?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("{text:?}: unknown suffix {suffix:?} (use K, M, G or T)")),
    };
    value.checked_mul(1u64 << shift).ok_or_else(|| format!("{text:?} does not fit in 64 bits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_take_binary_suffixes() {
        assert_eq!(parse_byte_size("4096"), Ok(4096));
        assert_eq!(parse_byte_size("64M"), Ok(64 << 20));
        assert_eq!(parse_byte_size("2G"), Ok(2 << 30));
        assert_eq!(parse_byte_size("2gib"), Ok(2 << 30));
        assert_eq!(parse_byte_size("1k"), Ok(1024));
    }

    #[test]
    fn byte_sizes_reject_junk_and_overflow() {
        let not_a_count = |t: &str| Err(format!("{t:?} is not a byte count (expected e.g. 4096, 64M, 2G)"));
        assert_eq!(parse_byte_size(""), not_a_count(""));
        assert_eq!(parse_byte_size("M"), not_a_count("M"));
        assert_eq!(parse_byte_size("-5"), not_a_count("-5"));
        assert_eq!(parse_byte_size("12Q"), Err(r#""12Q": unknown suffix "Q" (use K, M, G or T)"#.to_owned()));
        assert_eq!(
            parse_byte_size("64 MB x"),
            Err(r#""64 MB x": unknown suffix " MB x" (use K, M, G or T)"#.to_owned())
        );
        // Digits past u64, and a product past u64.
        assert_eq!(parse_byte_size("99999999999999999999"), Err(r#""99999999999999999999" is too large"#.to_owned()));
        assert_eq!(parse_byte_size("20000000000G"), Err(r#""20000000000G" does not fit in 64 bits"#.to_owned()));
        assert_eq!(parse_byte_size("16777216T"), Err(r#""16777216T" does not fit in 64 bits"#.to_owned()));
        assert_eq!(parse_byte_size("16777215T"), Ok(16_777_215 << 40));
    }

    #[test]
    fn arch_accepts_codenames_versions_and_instance_families() {
        use neff::manifest::Arch::{Cayman, Mariana, Sunda};
        for (text, arch) in [
            ("sunda", Sunda),
            ("v2", Sunda),
            ("cayman", Cayman),
            ("v3", Cayman),
            ("mariana", Mariana),
            ("v4", Mariana),
            // Instance families, as people name the machines.
            ("trn1", Sunda),
            ("inf2", Sunda),
            ("trn2", Cayman),
            ("trn3", Mariana),
        ] {
            assert_eq!(Arch::from_str(text, false), Ok(Arch(arch)), "{text}");
            assert_eq!(neff::manifest::Arch::from_name(text), Some(arch), "{text}: the core's table");
        }
        // clap's own refusal names the text; the command line prints the possible values.
        assert_eq!(Arch::from_str("v5", false), Err("invalid variant: v5".to_owned()));
        assert_eq!(Arch::from_str("Cayman", false), Err("invalid variant: Cayman".to_owned()));
        assert_eq!(Arch::from_str("Cayman", true), Ok(Arch(Cayman)));
        // `""` reads as sunda in a KELF's `target`, but names nothing on a command line.
        assert_eq!(Arch::from_str("", false), Err("invalid variant: ".to_owned()));
        assert_eq!(neff::manifest::Arch::from_name(""), None);
        assert_eq!(neff::manifest::Arch::from_json(""), Some(Sunda));
        let listed: Vec<String> =
            Arch::value_variants().iter().filter_map(|a| Some(a.to_possible_value()?.get_name().to_owned())).collect();
        assert_eq!(listed, ["sunda", "cayman", "mariana"]);
        assert_eq!(
            arch_help("Pins", "."),
            "Pins (sunda|v2|trn1|inf2, cayman|v3|trn2, mariana|v4|trn3).",
            "the flag's help lists the names of the core's table"
        );
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
