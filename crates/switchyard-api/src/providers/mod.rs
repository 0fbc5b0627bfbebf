//! One module per wire family (SPEC R4.1); `presets` holds every provider id as data (R4.2).
//!
//! Every handler holds its `ResolvedMode` as `mode`; [`handler_plumbing`] writes the
//! `ApiHandler` methods that only read it. Nothing per-request is stored on a handler: each
//! request's cancellation, retry observer, headers and deadlines come in its `RequestOptions`.

/// The `ApiHandler` methods shared by every provider: model and provider id, from the
/// handler's `mode` field.
macro_rules! handler_plumbing {
    () => {
        fn get_model(&self) -> crate::handler::ApiHandlerModel {
            self.mode.handler_model()
        }

        fn provider_id(&self) -> &str {
            &self.mode.provider_id
        }
    };
}

pub mod anthropic;
pub mod bedrock;
mod fast_json;
pub mod gemini;
pub mod ollama;
pub mod openai_chat;
pub mod openai_responses;
pub mod presets;
pub mod vertex;
