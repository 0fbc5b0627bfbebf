//! Byte-level decoders for the formats providers stream in, fed the body in whatever pieces the
//! network delivers. `decode` holds what they share and `framing` picks one for a body.
//! Spec: R4.0.

mod decode;
pub mod eventstream;
mod framing;
pub mod ndjson;
pub mod sse;

pub use decode::{DEFAULT_MAX_LINE_BYTES, WireError};
pub(crate) use framing::{Framing, JsonDocument};
