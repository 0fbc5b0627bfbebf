//! The escape codes of dimmed text on a terminal.

pub(super) const DIM: &str = "\x1b[2m";
pub(super) const RESET: &str = "\x1b[0m";
