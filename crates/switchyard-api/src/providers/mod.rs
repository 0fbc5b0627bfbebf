//! One module per wire family (SPEC R4.1); `presets` holds every provider id as data (R4.2).

pub mod anthropic;
pub mod bedrock;
pub mod gemini;
pub mod ollama;
pub mod openai_chat;
pub mod openai_responses;
pub mod presets;
