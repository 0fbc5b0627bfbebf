//! Credentials for the providers that do not take a plain API key: AWS, Google Cloud, SAP AI
//! Core, and the sign-ins other tools keep in files. They load on the first request, never at
//! construction, and no secret reaches an error or a log line.
//! Spec: R3.5, R3.6, R4.2.

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
