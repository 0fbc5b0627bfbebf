//! Rendering task events: streamed text on stdout, everything else on stderr; or, with
//! `--json`, one JSON object per line on stdout (README "JSON output"), every line scrubbed of
//! configured secrets (SPEC R10.5).
//!
//! [`Renderer`] (renderer.rs) holds the state and writes; events.rs says what each event shows,
//! live.rs draws the spinner and the countdowns, usage.rs sums the last line's usage.

mod events;
mod live;
mod renderer;
mod usage;

pub use renderer::Renderer;
