//! The one interface every manifest tier shares: parse a member's JSON.

use embedded_io::BufRead;

use super::Visitor;
use crate::json::Tokenizer;
use crate::{Error, WarningSink};

/// A manifest document (`neff.json`, a KELF, a `def.json`, an engine JSON): read with its
/// generated consumed-key parser, then checked as the runtime checks it.
///
/// The value itself holds the document's scalar keys; every element of a streamed key (a var,
/// a queue set, a node, ...) is checked as it is read and handed to the visitor, never stored.
/// What the checks learned from those elements comes back as [`Document::Facts`].
pub trait Document: Default {
    /// What the tier's checks learned from the streamed elements (counts, the KELF node, ...).
    type Facts;

    /// Parses and checks a document from `src` (the body of `member`) into `self`.
    fn parse_into<R: BufRead>(
        &mut self,
        tok: &mut Tokenizer<'_>,
        src: &mut R,
        member: &str,
        sink: &mut impl WarningSink,
        visitor: &mut dyn Visitor,
    ) -> Result<Self::Facts, Error>;

    /// [`Document::parse_into`] into a fresh value.
    fn parse<R: BufRead>(
        tok: &mut Tokenizer<'_>,
        src: &mut R,
        member: &str,
        sink: &mut impl WarningSink,
        visitor: &mut dyn Visitor,
    ) -> Result<(Self, Self::Facts), Error> {
        let mut doc = Self::default();
        let facts = doc.parse_into(tok, src, member, sink, visitor)?;
        Ok((doc, facts))
    }
}
