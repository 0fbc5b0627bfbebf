//! Rendering task events: streamed text on stdout and everything else on stderr, or one JSON
//! object per line on stdout with `--json`; every line scrubbed of configured secrets.
//! Spec: R10.5.

mod events;
mod live;
mod renderer;
mod style;
mod usage;

pub use renderer::Renderer;
