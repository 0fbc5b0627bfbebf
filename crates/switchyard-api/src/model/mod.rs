//! Models: what one model's entry holds, the catalogue of them, and how a typed id finds its
//! entry.

pub mod catalogue;
pub mod info;
pub mod lookup;

pub use catalogue::{Catalogue, CatalogueEntry, EntrySource, ModelTable};
pub use info::{API_FORMATS, DEFAULT_CONTEXT_WINDOW, ModelInfo, PriceTier, ThinkingConfig};
