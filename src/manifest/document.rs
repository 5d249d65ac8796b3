//! The one interface every manifest tier shares: parse a member's JSON into a value.

use embedded_io::BufRead;

use crate::json::Tokenizer;
use crate::{Error, WarningSink};

/// A manifest document (`neff.json`, a KELF, a `def.json`, an engine JSON): read with its
/// generated consumed-key parser, then checked as the runtime checks it.
pub trait Document: Default {
    /// Parses and checks a document from `src` (the body of `member`) into `self`, so that
    /// a large document is built in place rather than on the stack.
    fn parse_into<R: BufRead, const S: usize, const D: u16>(
        &mut self,
        tok: &mut Tokenizer<S, D>,
        src: &mut R,
        member: &str,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error>;

    /// [`Document::parse_into`] into a fresh value.
    fn parse<R: BufRead, const S: usize, const D: u16>(
        tok: &mut Tokenizer<S, D>,
        src: &mut R,
        member: &str,
        sink: &mut impl WarningSink,
    ) -> Result<Self, Error> {
        let mut doc = Self::default();
        doc.parse_into(tok, src, member, sink)?;
        Ok(doc)
    }
}
