//! Switchyard's task layer: everything between the user and one `ApiHandler` — a conversation
//! that is persisted as it runs, answered one user turn at a time with truncation, retries,
//! MCP tools and cancellation (SPEC R6, R8–R11).
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
//! // Any OpenAI-compatible server (keys come from the environment; none is needed on this
//! // machine). The same TOML as the CLI's config.toml.
//! let toml = format!(
//!     "[act]\nprovider = \"openai\"\nmodel = \"my-model\"\n\
//!      [providers.openai]\nbase_url = \"{base_url}\"\n"
//! );
//! let config = ApiConfiguration::from_toml(&toml, "config.toml", |var| std::env::var(var).ok())?;
//!
//! // Every task is written to the store as it runs; it can be resumed by its id later.
//! let store = Arc::new(SqliteStore::open(data_dir)?);
//! let mut task = Task::builder(&config, Mode::Act, store)?
//!     .max_auto_retries(3)
//!     .create("Why is the sky blue?")
//!     .await?;
//!
//! // One turn: requests, recovery and tool rounds, each event stored before it is handed over.
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
//! `examples/persisted_task.rs` runs a task with retries against a local model server and
//! prints every event.
//!
//! # The pieces
//!
//! - [`Task`] (in [`task`]): built from configuration (or an `ApiHandler`), a [`TaskStore`]
//!   and an MCP hub; [`Task::run_turn`] answers one user turn; [`TaskEvent`]s report what
//!   happened, in order (their JSON is the CLI's `--json` lines). How failures that automatic
//!   recovery cannot fix are decided ([`task::FailureDecider`]) and how tool calls are
//!   approved ([`task::ToolApprover`]) is the caller's: a terminal asks, a service decides by
//!   policy.
//! - [`store`]: the [`TaskStore`] trait and [`SqliteStore`], the default (one SQLite file);
//!   with the `postgres` feature, `store::PgStore` on a PostgreSQL server a team shares.
//! - [`mcp`]: MCP servers from an `mcpServers` settings file, connected in the background.
//! - [`context`]: what the model sees of a long conversation (truncation ranges, file-read
//!   dedupe); [`prompt`]: the system prompt and tools; [`cost`]: usage and cost.

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
