//! Cloud credentials for the providers that do not take a plain API key: AWS (Bedrock) and
//! Google Cloud (Vertex). Credentials are loaded on the first request, never at construction
//! (SPEC R3.5), and no secret ever reaches an error message or a log line (R3.6).

pub mod aws;
pub mod check;
pub mod google;
