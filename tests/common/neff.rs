//! Building NEFFs in tests: extract a real one, change its members, pack it again.
#![allow(dead_code)]

use std::io::{Read, Write};

/// Every regular member of a NEFF, in tar order, extracted with the `tar` and `flate2` crates
/// (independently of the code under test).
pub fn members(neff: &[u8]) -> Vec<(String, Vec<u8>)> {
    let gz = flate2::read::GzDecoder::new(&neff[1024..]);
    let mut archive = tar::Archive::new(gz);
    let mut out = Vec::new();
    for entry in archive.entries().expect("tar entries") {
        let mut entry = entry.expect("tar entry");
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path().expect("path").to_string_lossy().into_owned();
        let mut body = Vec::new();
        entry.read_to_end(&mut body).expect("body");
        out.push((name, body));
    }
    out
}

/// A NEFF with `header`'s fields (its `data_size` replaced) over a gzip'd POSIX tar of `members`
/// (a name longer than ustar holds gets a GNU long-name entry).
pub fn pack(header: &[u8], members: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, body) in members {
        let long = name.len() > 100;
        let mut h = if long { tar::Header::new_gnu() } else { tar::Header::new_ustar() };
        h.set_size(body.len() as u64);
        h.set_mode(0o664);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        if long {
            builder.append_data(&mut h, name, body.as_slice()).expect("append");
            continue;
        }
        h.set_path(name).expect("path");
        h.set_cksum();
        builder.append(&h, body.as_slice()).expect("append");
    }
    let tar_bytes = builder.into_inner().expect("tar");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar_bytes).expect("gzip");
    let payload = gz.finish().expect("gzip");
    let mut out = header[..1024].to_vec();
    out[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// The array data of a `.npy` file (what lands on the device).
pub fn npy_data(file: &[u8]) -> &[u8] {
    let header_len = if file[6] == 1 {
        u16::from_le_bytes([file[8], file[9]]) as usize + 10
    } else {
        u32::from_le_bytes([file[8], file[9], file[10], file[11]]) as usize + 12
    };
    &file[header_len..]
}
