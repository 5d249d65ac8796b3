//! Generated Neuron compile caches, shaped like the ones users have, for `neff cache`'s tests
//! and timings: [`CacheTree`] cycles through every state in two compiler directories and
//! vllm-neuron's layout; [`CacheReplica`] writes a cache entry kind by entry kind, as each
//! writer of each age leaves it (docs/cache.md says what each writer's code does):
//!
//! * the 2.14 age of libneuronxla (`neuronx-cc` 2.14.227, a torch-neuronx training cache on
//!   trn1, as `../shared/fixtures/training-cache/` holds seven entries of): a 0-byte root
//!   `lock`; `neuronxcc-2.14.227.0+<build>/MODULE_<hlo hash>+<flags hash>/`, one flags hash
//!   for all; every entry `compile_flags.txt` (`--model-type=cnn-training`, 25 bytes) and
//!   `model.hlo_module.pb`; no `model.done` anywhere. Good entries add `model.neff`; failed
//!   ones `model.neff` = `ERROR` and a `model.log` (a traceback ending in `BrokenPipeError`, or
//!   `[F137] neuronx-cc was forcibly killed`); the rest are HLO only, some with a stale
//!   `model.hlo_module.pb.lock`. [`CacheReplica::training_2_14`] has the real cache's counts.
//! * later libneuronxla (and optimum-neuron, which runs libneuronxla's cache and adds its
//!   `0_REGISTRY/` of JSON files and `MODULE_<hash>` folders of exported models, no NEFF file
//!   in them): `compile_flags.json` and the `model.done` marker.
//! * vllm-neuron: `<hash>/graph_<hash>.neff` and `.compilation_complete`.

use std::fs;
use std::io;
use std::path::Path;

/// A generated Neuron compile cache: `entries` entries under a root, cycling through every
/// state `neff cache` tells apart (spread over two compiler versions and both layouts), each
/// ok one holding a copy of one NEFF. `cargo run -p neff-cli --example scale-cache -- DIR N`
/// writes one; the cache tests and the timing in `docs/neff-cache.md` use it.
#[derive(Debug, Clone, Copy)]
pub struct CacheTree<'a> {
    /// How many entries.
    pub entries: usize,
    /// The NEFF of the ok entries (a truncated copy makes the broken ones).
    pub neff: &'a [u8],
}

/// The cycle of [`CacheTree`]'s entries, by position modulo its length, with the state `neff
/// cache` gives each: seven ok libneuronxla entries, an ok vllm-neuron one, a failed compile
/// (a log, no NEFF), libneuronxla's failed-compile marker (`model.neff` is `ERROR`), a broken
/// one (done, its NEFF cut in half) and an incomplete one (its NEFF cut in half and no done
/// marker, where the other entries have one).
pub const CACHE_CYCLE: [&str; 12] =
    ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "failed", "failed", "broken", "incomplete"];

/// Writes `bytes` as `name` in `root/rel`, creating the directories.
fn put(root: &Path, rel: &str, name: &str, bytes: &[u8]) -> io::Result<()> {
    let dir = root.join(rel);
    fs::create_dir_all(&dir)?;
    fs::write(dir.join(name), bytes)
}

/// Sorts `(path, state)` pairs as `neff cache` lists them: by path, component by component.
fn in_cache_order(out: &mut [(String, &'static str)]) {
    out.sort_by(|a, b| Path::new(&a.0).cmp(Path::new(&b.0)));
}

impl CacheTree<'_> {
    /// Writes the entries under `root` (created if missing) and returns each one's path
    /// relative to it and the state it should get, in `neff cache`'s order.
    pub fn write(&self, root: &Path) -> io::Result<Vec<(String, &'static str)>> {
        let mut out = Vec::with_capacity(self.entries);
        for i in 0..self.entries {
            let state = CACHE_CYCLE[i % CACHE_CYCLE.len()];
            let version = if i % 3 == 0 { "neuronxcc-2.22.1.0+0a1b2c3d" } else { "neuronxcc-2.23.6484.0+3b612583" };
            // A hash-like spread of names, so the sorted order is not the writing order.
            let hash = (i as u32).wrapping_mul(0x9e37_79b1);
            let rel = format!("{version}/MODULE_{i:06}{hash:08x}+4fa1");
            match i % CACHE_CYCLE.len() {
                7 => {
                    let rel = format!("vllm/{hash:08x}{i:06}");
                    put(root, &rel, &format!("graph_{hash:08x}{i:06}.neff"), self.neff)?;
                    put(root, &rel, ".compilation_complete", b"")?;
                    out.push((rel, state));
                    continue;
                }
                8 => put(root, &rel, "model.log", b"ERROR: compilation failed\n")?,
                9 => {
                    put(root, &rel, "model.neff", b"ERROR")?;
                    put(root, &rel, "model.done", b"")?;
                }
                10 => {
                    put(root, &rel, "model.neff", &self.neff[..self.neff.len() / 2])?;
                    put(root, &rel, "model.done", b"")?;
                }
                11 => put(root, &rel, "model.neff", &self.neff[..self.neff.len() / 2])?,
                _ => {
                    put(root, &rel, "model.neff", self.neff)?;
                    put(root, &rel, "model.done", b"")?;
                    put(root, &rel, "compile_flags.json", br#"["--target=trn2"]"#)?;
                }
            }
            out.push((rel, state));
        }
        in_cache_order(&mut out);
        Ok(out)
    }
}

/// One kind of cache entry, as a writer of one age leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// 2.14 age: flags, HLO and a good NEFF, no done marker. `ok`.
    Ok214,
    /// 2.14 age: `model.neff` = `ERROR`, and a log of a traceback ending in `BrokenPipeError`.
    /// `failed`.
    FailedBrokenPipe214,
    /// 2.14 age: `model.neff` = `ERROR`, and a log saying `[F137] neuronx-cc was forcibly
    /// killed`. `failed`.
    FailedKilled214,
    /// 2.14 age: flags and HLO only. `uncompiled`.
    Uncompiled214,
    /// 2.14 age: flags and HLO, and a `model.hlo_module.pb.lock` nobody holds. `uncompiled`,
    /// with a stale lock.
    StaleLock214,
    /// 2.14 age: a NEFF cut short, no done marker (none in that age). `broken`.
    Truncated214,
    /// Later libneuronxla (optimum-neuron's too): `compile_flags.json`, HLO, NEFF, `model.done`.
    /// `ok`.
    OkDone,
    /// Later age: done, but the NEFF cut in half. `broken`.
    BrokenDone,
    /// Later age: a NEFF cut in half and no `model.done`. `incomplete`.
    IncompleteDone,
    /// Later age: a `model.log` and no NEFF (what optimum-neuron's cleanup calls failed).
    /// `failed`.
    FailedLog,
    /// Later age: a `model.hlo_module.pb.lock` (the test holds it) beside the HLO. `locked`.
    Locked,
    /// vllm-neuron: `graph_<hash>.neff` and `.compilation_complete`. `ok`.
    Vllm,
}

impl EntryKind {
    /// The state `neff cache` gives it.
    pub fn state(self) -> &'static str {
        match self {
            EntryKind::Ok214 | EntryKind::OkDone | EntryKind::Vllm => "ok",
            EntryKind::FailedBrokenPipe214 | EntryKind::FailedKilled214 | EntryKind::FailedLog => "failed",
            EntryKind::Uncompiled214 | EntryKind::StaleLock214 => "uncompiled",
            EntryKind::Truncated214 | EntryKind::BrokenDone => "broken",
            EntryKind::IncompleteDone => "incomplete",
            EntryKind::Locked => "locked",
        }
    }

    /// The reason `neff cache` gives a failed one (the compiler's line in its log).
    pub fn reason(self) -> Option<&'static str> {
        match self {
            EntryKind::FailedBrokenPipe214 => Some("BrokenPipeError: [Errno 32] Broken pipe"),
            EntryKind::FailedKilled214 => Some(F137),
            EntryKind::FailedLog => Some("[NCC_INLA001] Unhandled exception in checkDMATranspose"),
            _ => None,
        }
    }
}

/// The compiler directory of the 2.14 age (the fixture's).
pub const DIR_214: &str = "neuronxcc-2.14.227.0+2d4f85be";
/// A later compiler directory, one that writes `model.done`.
pub const DIR_LATER: &str = "neuronxcc-2.21.33363.0+82f8dd4d";
/// The flags of the 2.14 training cache (`compile_flags.txt`, 25 bytes).
pub const FLAGS_214: &str = "--model-type=cnn-training";
/// The line of the F137 failure (`[F137]` onward), as the compiler logs it.
pub const F137: &str = "[F137] neuronx-cc was forcibly killed - This most commonly occurs due to insufficient system memory. Using a smaller data type, dimensions, batch size, or a larger instance type may help.";

/// A generated cache: so many entries of each kind, their names spread by a hash so that the
/// kinds interleave in `neff cache`'s order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheReplica {
    /// How many entries of each kind.
    pub kinds: Vec<(EntryKind, usize)>,
    /// Whether the root holds libneuronxla's 0-byte `lock`.
    pub root_lock: bool,
    /// Whether to add optimum-neuron's `0_REGISTRY/` and an exported-model `MODULE_<hash>`
    /// folder (neither is an entry).
    pub optimum: bool,
}

impl CacheReplica {
    /// The presets [`CacheReplica::preset`] knows.
    pub const PRESETS: [&'static str; 3] = ["training-2.14", "training-2.14-small", "mixed"];

    /// The 2.14 training cache at its real counts: 1,604 entries, 923 with a good NEFF, 25
    /// failed (24 `BrokenPipeError`, one `[F137]`), 656 HLO only of which 4 hold a stale lock.
    pub fn training_2_14() -> Self {
        CacheReplica {
            kinds: vec![
                (EntryKind::Ok214, 923),
                (EntryKind::FailedBrokenPipe214, 24),
                (EntryKind::FailedKilled214, 1),
                (EntryKind::Uncompiled214, 652),
                (EntryKind::StaleLock214, 4),
            ],
            root_lock: true,
            optimum: false,
        }
    }

    /// The same kinds at about a fiftieth of the counts (every kind kept).
    pub fn training_2_14_small() -> Self {
        CacheReplica {
            kinds: vec![
                (EntryKind::Ok214, 18),
                (EntryKind::FailedBrokenPipe214, 2),
                (EntryKind::FailedKilled214, 1),
                (EntryKind::Uncompiled214, 11),
                (EntryKind::StaleLock214, 2),
            ],
            root_lock: true,
            optimum: false,
        }
    }

    /// Every layout and age in one cache: the 2.14 kinds (and a truncated 2.14 NEFF), the
    /// later libneuronxla kinds, a held lock, vllm-neuron, optimum-neuron's extra folders.
    pub fn mixed() -> Self {
        CacheReplica {
            kinds: vec![
                (EntryKind::Ok214, 3),
                (EntryKind::FailedBrokenPipe214, 1),
                (EntryKind::FailedKilled214, 1),
                (EntryKind::Uncompiled214, 2),
                (EntryKind::StaleLock214, 1),
                (EntryKind::Truncated214, 1),
                (EntryKind::OkDone, 3),
                (EntryKind::BrokenDone, 1),
                (EntryKind::IncompleteDone, 1),
                (EntryKind::FailedLog, 1),
                (EntryKind::Locked, 1),
                (EntryKind::Vllm, 2),
            ],
            root_lock: true,
            optimum: true,
        }
    }

    /// A preset by name.
    pub fn preset(name: &str) -> Option<Self> {
        match name {
            "training-2.14" => Some(Self::training_2_14()),
            "training-2.14-small" => Some(Self::training_2_14_small()),
            "mixed" => Some(Self::mixed()),
            _ => None,
        }
    }

    /// Writes the cache under `root` (created if missing), the good NEFFs being `neff`, and
    /// returns each entry's path relative to it, its kind, in `neff cache`'s order.
    pub fn write(&self, root: &Path, neff: &[u8]) -> io::Result<Vec<(String, EntryKind)>> {
        fs::create_dir_all(root)?;
        if self.root_lock {
            fs::write(root.join("lock"), b"")?;
        }
        let mut out = Vec::new();
        let mut n: u64 = 0;
        for &(kind, count) in &self.kinds {
            for _ in 0..count {
                n += 1;
                // A u64 of the hash's shape, so the kinds interleave in path order.
                let hlo_hash = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 1;
                out.push((write_entry(root, kind, n, hlo_hash, neff)?, kind));
            }
        }
        if self.optimum {
            put(
                root,
                "0_REGISTRY/0.3.0/4f2a9c/llama",
                "2f6c1e9a.json",
                br#"{"model_type": "llama", "task": "text-generation"}"#,
            )?;
            put(root, &format!("{DIR_LATER}/MODULE_5c7d0e3b9f1a2c4d"), "config.json", br#"{"model_type": "bert"}"#)?;
            put(root, &format!("{DIR_LATER}/MODULE_5c7d0e3b9f1a2c4d"), "model.neuron", &[0x50, 0x4b, 3, 4])?;
        }
        out.sort_by(|a, b| Path::new(&a.0).cmp(Path::new(&b.0)));
        Ok(out)
    }
}

/// The HLO's size for entry `n`: hundreds of bytes to tens of kilobytes (the real ones run
/// from 367 bytes to 2.4 MB).
fn hlo_bytes(n: u64) -> Vec<u8> {
    let size = 367 + (n.wrapping_mul(7919) % 24_000) as usize;
    (0..size).map(|i| (i as u64 ^ n) as u8).collect()
}

/// The log of a compile whose compiler process lost its pipe: the command line, then a
/// Python traceback, as libneuronxla of the 2.14 age keeps it.
fn broken_pipe_log(rel: &str) -> String {
    let work = "/tmp/ubuntu/neuroncc_compile_workdir/0f3c9d7e-5b1a-4e2c-9a61-7d2b8c4e1f00";
    format!(
        "Failed compilation with ['neuronx-cc', 'compile', '--target=trn1', '--framework=XLA', '{work}/model.{rel}.hlo_module.pb', \
         '--output', '{work}/model.{rel}.neff', '{FLAGS_214}', '--verbose=35']: Process Process-1:1:\n\
         Traceback (most recent call last):\n  \
         File \"/usr/lib/python3.10/multiprocessing/process.py\", line 314, in _bootstrap\n    self.run()\n  \
         File \"/usr/lib/python3.10/multiprocessing/process.py\", line 108, in run\n    self._target(*self._args, **self._kwargs)\n  \
         File \"neuronxcc/driver/commands/CompileCommand.py\", line 1215, in neuronxcc.driver.commands.CompileCommand.CompileCommand.runPipeline.print_dots\n\
         BrokenPipeError: [Errno 32] Broken pipe\n\
         2024-08-28T22:46:59Z [Errno 32] Broken pipe\n\n"
    )
}

/// The log of a compile the kernel killed: the compiler's banner around the `[F137]` line.
fn killed_log() -> String {
    let bar = "*".repeat(79);
    format!(
        "Failed compilation with ['neuronx-cc', 'compile', '--target=trn1', '--framework=XLA', '{FLAGS_214}', '--verbose=35']: \
         2024-08-28T21:12:40Z ERROR 5512 [neuronx-cc]: {bar}\n\
         2024-08-28T21:12:40Z ERROR 5512 [neuronx-cc]:  An Internal Compiler Error has occurred\n\
         2024-08-28T21:12:40Z ERROR 5512 [neuronx-cc]: {bar}\n\
         2024-08-28T21:12:40Z ERROR 5512 [neuronx-cc]: \n\
         2024-08-28T21:12:40Z ERROR 5512 [neuronx-cc]: {F137}\n\
         2024-08-28T21:12:40Z ERROR 5512 [neuronx-cc]: \n"
    )
}

/// Writes one entry of `kind`; returns its path relative to `root`.
fn write_entry(root: &Path, kind: EntryKind, n: u64, hlo_hash: u64, neff: &[u8]) -> io::Result<String> {
    let module = |flags: &str| format!("MODULE_{hlo_hash}+{flags}");
    let later = |rel: &str| -> io::Result<()> {
        put(root, rel, "model.hlo_module.pb", &hlo_bytes(n))?;
        put(root, rel, "compile_flags.json", br#"["--target=trn2", "--model-type=transformer", "-O1"]"#)
    };
    let rel = match kind {
        EntryKind::Vllm => {
            let rel = format!("vllm/{hlo_hash:016x}");
            put(root, &rel, &format!("graph_{hlo_hash:016x}.neff"), neff)?;
            put(root, &rel, ".compilation_complete", b"")?;
            return Ok(rel);
        }
        EntryKind::OkDone
        | EntryKind::BrokenDone
        | EntryKind::IncompleteDone
        | EntryKind::FailedLog
        | EntryKind::Locked => {
            format!("{DIR_LATER}/{}", module("d41d8cd9"))
        }
        _ => format!("{DIR_214}/{}", module("6b2c5a1e")),
    };
    if rel.starts_with(DIR_214) {
        put(root, &rel, "compile_flags.txt", FLAGS_214.as_bytes())?;
        put(root, &rel, "model.hlo_module.pb", &hlo_bytes(n))?;
    } else {
        later(&rel)?;
    }
    let half = &neff[..neff.len() / 2];
    match kind {
        EntryKind::Ok214 => put(root, &rel, "model.neff", neff)?,
        EntryKind::FailedBrokenPipe214 => {
            put(root, &rel, "model.neff", b"ERROR")?;
            let name = rel.rsplit('/').next().unwrap_or(&rel);
            put(root, &rel, "model.log", broken_pipe_log(name).as_bytes())?;
        }
        EntryKind::FailedKilled214 => {
            put(root, &rel, "model.neff", b"ERROR")?;
            put(root, &rel, "model.log", killed_log().as_bytes())?;
        }
        EntryKind::Uncompiled214 => {}
        EntryKind::StaleLock214 | EntryKind::Locked => put(root, &rel, "model.hlo_module.pb.lock", b"")?,
        EntryKind::Truncated214 | EntryKind::IncompleteDone => put(root, &rel, "model.neff", half)?,
        EntryKind::OkDone => {
            put(root, &rel, "model.neff", neff)?;
            put(root, &rel, "model.done", b"")?;
        }
        EntryKind::BrokenDone => {
            put(root, &rel, "model.neff", half)?;
            put(root, &rel, "model.done", b"")?;
        }
        EntryKind::FailedLog => put(
            root,
            &rel,
            "model.log",
            b"2026-07-29T22:37:54Z ERROR 881 [neuronx-cc]: [NCC_INLA001] Unhandled exception in checkDMATranspose\n",
        )?,
        EntryKind::Vllm => {}
    }
    Ok(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_replica_has_the_real_counts() {
        let r = CacheReplica::training_2_14();
        let count = |state: &str| r.kinds.iter().filter(|(k, _)| k.state() == state).map(|(_, n)| n).sum::<usize>();
        assert_eq!(r.kinds.iter().map(|(_, n)| n).sum::<usize>(), 1604);
        assert_eq!((count("ok"), count("failed"), count("uncompiled")), (923, 25, 656));
        assert_eq!(FLAGS_214.len(), 25);
        for name in CacheReplica::PRESETS {
            assert!(CacheReplica::preset(name).is_some(), "{name}");
        }
    }
}
