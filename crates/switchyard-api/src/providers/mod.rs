//! One module per wire family (SPEC R4.1); `presets` holds every provider id as data (R4.2).
//!
//! Every handler holds its `ResolvedMode` as `mode` and its `RequestControls` as `controls`;
//! [`handler_plumbing`] writes the `ApiHandler` methods that only read those.

/// The `ApiHandler` methods shared by every provider: model, provider id, retry observer and
/// abort, from the handler's `mode` and `controls` fields.
macro_rules! handler_plumbing {
    () => {
        fn get_model(&self) -> crate::handler::ApiHandlerModel {
            self.mode.handler_model()
        }

        fn provider_id(&self) -> &str {
            &self.mode.provider_id
        }

        fn set_retry_observer(&self, observer: Option<crate::handler::RetryObserver>) {
            self.controls.set_retry_observer(observer);
        }

        fn abort(&self) {
            self.controls.abort();
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
