//! Switchyard's task layer: a conversation with one `ApiHandler`, persisted as it runs and
//! answered one user turn at a time with truncation, retries, MCP tools and cancellation.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use switchyard_testkit::{HttpResponse, MockServer, Reply};
//! # let server = MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
//! # let base_url = format!("{}/v1", server.url());
//! # let data = tempfile::tempdir()?;
//! # let data_dir = data.path();
//! use std::sync::Arc;
//!
//! use switchyard_api::{ApiConfiguration, CancellationToken, Mode};
//! use switchyard_core::{SqliteStore, Task, TaskEvent};
//!
//! // Any OpenAI-compatible server; keys come from the environment.
//! let toml = format!(
//!     "[act]\nprovider = \"openai\"\nmodel = \"my-model\"\n\
//!      [providers.openai]\nbase_url = \"{base_url}\"\n"
//! );
//! let config = ApiConfiguration::from_toml(&toml, "config.toml", |var| std::env::var(var).ok())?;
//!
//! let store = Arc::new(SqliteStore::open(data_dir)?);
//! let mut task = Task::builder(&config, Mode::Act, store)?
//!     .max_auto_retries(3)
//!     .create("Why is the sky blue?")
//!     .await?;
//!
//! let outcome = task
//!     .run_turn(None, &CancellationToken::new(), &mut |event| {
//!         if let TaskEvent::Text { text } = event {
//!             print!("{text}");
//!         }
//!     })
//!     .await?;
//! match outcome.cost_usd {
//!     Some(usd) => println!("\n{} tokens in, ${usd:.6}", outcome.usage.input_tokens),
//!     None => println!("\n{} tokens in, cost unknown", outcome.usage.input_tokens),
//! }
//! # assert!(task.messages().len() == 2);
//! # Ok(())
//! # }
//! ```
//!
//! `examples/persisted_task.rs` runs a task with retries against a local model server.
//! Spec: R6, R8, R9, R10, R11.

#![warn(missing_docs)]

pub mod context;
pub mod cost;
pub mod limits;
pub mod mcp;
pub mod prompt;
pub mod store;
pub mod task;

pub use limits::LimitsStore;
pub use store::{SqliteStore, TaskStore};
pub use task::{Task, TaskBuilder, TaskError, TaskEvent, TaskStatus};
