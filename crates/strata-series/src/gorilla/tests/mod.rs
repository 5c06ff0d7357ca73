//! Cross-module tests of the block codec: property round trips of every
//! type, compression of a smooth series, corrupt inputs, and the agreement
//! of `docs/format/series-block.md` with the code's constants.

mod compression;
mod corruption;
mod format_doc;
mod roundtrip;
