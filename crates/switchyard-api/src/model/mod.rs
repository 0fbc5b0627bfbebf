//! Models (SPEC R2.2–R2.5): [`ModelInfo`], price tiers and the model catalogue.
//!
//! What one model's entry holds is [`info`]. The catalogue is data ([`catalogue`]): the
//! reference's model tables, generated into `crates/switchyard-api/models/reference/` by
//! `scripts/gen-models.py`; the models Switchyard knows beyond them, hand-written in
//! `models/switchyard/`; and the user's own `models.toml`, which adds or overrides entries
//! without a rebuild. How a typed model id finds its entry (dated and suffixed variants, region
//! prefixes) is [`lookup`].

pub mod catalogue;
pub mod info;
pub mod lookup;

pub use catalogue::{Catalogue, CatalogueEntry, EntrySource, ModelTable};
pub use info::{API_FORMATS, DEFAULT_CONTEXT_WINDOW, ModelInfo, PriceTier, ThinkingConfig};
