//! Helpers of the peers' conformance suites (`tests/peers.rs`, `tests/peers_gzip.rs`).

/// Decodes standard base64 (the transcribed vectors' encoding); `=` padding and whitespace
/// are skipped.
pub fn b64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("base64 {c}"),
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|&c| c != b'=' && !c.is_ascii_whitespace()) {
        acc = (acc << 6) | u32::from(val(c));
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// Prints the score and fails listing the wrong cases.
pub fn score(suite: &str, total: usize, wrong: &[String]) {
    println!("{suite}: {} of {total} right", total - wrong.len());
    assert!(wrong.is_empty(), "{suite}: {} wrong:\n{}", wrong.len(), wrong.join("\n"));
}
