//! Byte-level decoders for the wire formats providers stream in (SPEC R4.0).
//!
//! These are Switchyard's own: exact to their specs, fast, and independent of HTTP.
//! Each decoder is fed the body's bytes in whatever pieces the network delivers and hands back
//! complete items; a UTF-8 character or a line end split across reads is reassembled.
//!
//! [`sse`], [`ndjson`] and [`eventstream`] are the decoders; `decode` holds what they share
//! (the line cap, [`WireError`]); `framing` is how the transport picks one for a body.

mod decode;
pub mod eventstream;
mod framing;
pub mod ndjson;
pub mod sse;

pub use decode::{DEFAULT_MAX_LINE_BYTES, WireError};
pub(crate) use framing::{Framing, JsonDocument};
