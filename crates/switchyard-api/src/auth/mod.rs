//! Credentials (SPEC R3.5, R3.6, R4.2) for the providers that do not take a plain API key: AWS
//! (Bedrock), Google Cloud (Vertex), SAP AI Core's service key, and the sign-ins other tools
//! keep in files (the Qwen CLI's for `qwen-code`, the Codex CLI's for `openai-codex`).
//! Credentials are loaded on the first request, never at construction (R3.5), and no secret
//! ever reaches an error message or a log line (R3.6).
//!
//! `aws` needs the `bedrock` feature and `google` the `vertex` feature; `check` (what
//! `switchyard config check` says about them, from files and the environment only) is always
//! there.

#[cfg(feature = "bedrock")]
pub(crate) mod aws;
pub mod check;
pub(crate) mod codex;
#[cfg(feature = "vertex")]
pub(crate) mod google;
pub(crate) mod oauth;
pub(crate) mod qwen;
pub(crate) mod sap;
pub(crate) mod signin_file;
