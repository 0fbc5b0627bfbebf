//! A persisted task with retries, printing every event as the JSON line the CLI's `--json`
//! prints (docs/tasks.md, "JSON output").
//!
//! Against the local model server of `scripts/local-model.sh` (127.0.0.1:8089, SmolLM2):
//!
//! ```sh
//! scripts/local-model.sh start
//! cargo run -p switchyard-core --example persisted_task -- "Why is the sky blue?"
//! cargo run -p switchyard-core --example persisted_task -- --resume TASK_ID "And at sunset?"
//! ```
//!
//! Another OpenAI-compatible endpoint: `SWITCHYARD_EXAMPLE_BASE_URL` (e.g.
//! `http://127.0.0.1:11434/v1`) and `SWITCHYARD_EXAMPLE_MODEL`; a key, when the endpoint needs
//! one, from `OPENAI_API_KEY`. The task database is in `SWITCHYARD_EXAMPLE_DATA_DIR`, else
//! `switchyard-example` in the system's temporary directory.
//!
//! With no server listening, the request fails with a network error and is retried after 2 s,
//! 4 s and 8 s (`error_retry` events), then given up by policy (`api_req_failed`, then the
//! task fails). Ctrl-C cancels the turn; what streamed is kept and `--resume` continues it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use switchyard_api::{ApiConfiguration, CancellationToken, Mode};
use switchyard_core::store::StoreError;
use switchyard_core::task::{FailureDecision, FixedDecision};
use switchyard_core::{SqliteStore, Task, TaskError, TaskStatus};

const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8089/v1";
const DEFAULT_MODEL: &str = "smollm2-135m-instruct";

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(TaskStatus::Completed) => ExitCode::SUCCESS,
        Ok(TaskStatus::Cancelled) => ExitCode::from(130),
        Ok(TaskStatus::Failed) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> Result<TaskStatus, Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    let resume = match args.peek().map(String::as_str) {
        Some("--resume") => {
            args.next();
            Some(args.next().ok_or("--resume takes a task id")?)
        }
        _ => None,
    };
    let prompt = args.collect::<Vec<_>>().join(" ");

    let base_url =
        std::env::var("SWITCHYARD_EXAMPLE_BASE_URL").unwrap_or_else(|_| DEFAULT_BASE_URL.into());
    let model = std::env::var("SWITCHYARD_EXAMPLE_MODEL").unwrap_or_else(|_| DEFAULT_MODEL.into());
    let mut toml = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"{model}\"\n\
         [providers.openai]\nbase_url = \"{base_url}\"\n"
    );
    if model == DEFAULT_MODEL {
        // SmolLM2 is served with a 2048-token window: say so, so long tasks are truncated.
        toml.push_str("[act.model_info]\ncontext_window = 2048\nmax_tokens = 512\n");
    }
    let config = ApiConfiguration::from_toml(&toml, "example", |var| std::env::var(var).ok())?;

    let data_dir = std::env::var_os("SWITCHYARD_EXAMPLE_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("switchyard-example"));
    let store = Arc::new(SqliteStore::open(&data_dir)?);
    let builder = Task::builder(&config, Mode::Act, store)?
        // Three automatic retries after 2 s, 4 s and 8 s (SPEC R6.7); when they are used up,
        // give up instead of asking (a terminal program would ask the user here).
        .max_auto_retries(3)
        .failure_decider(Arc::new(FixedDecision(FailureDecision::Cancel)));
    let mut task = match &resume {
        Some(id) => match builder.resume(id).await {
            Err(TaskError::Store(StoreError::TaskNotFound { .. })) => {
                // The store's own hint names the CLI's data directory; this example keeps its own.
                return Err(format!(
                    "no task with id {id} in {dir}; `switchyard --data-dir {dir} tasks` lists this example's tasks",
                    dir = data_dir.display()
                )
                .into());
            }
            resumed => resumed?,
        },
        None if prompt.trim().is_empty() => return Err("pass a prompt".into()),
        None => builder.create(&prompt).await?,
    };
    eprintln!("task {} in {}", task.id(), data_dir.display());

    let mut print = |event: switchyard_core::TaskEvent| {
        if let Ok(line) = serde_json::to_string(&event) {
            println!("{line}");
        }
    };
    let message = resume.is_some().then_some(prompt.as_str());
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let status = match task.run_turn(message, &cancel, &mut print).await {
        Ok(outcome) => outcome.task_status(),
        Err(e) => {
            eprintln!("error: {e}");
            TaskStatus::Failed
        }
    };
    task.finish(status, &mut print).await?;
    eprintln!(
        "continue it with: cargo run -p switchyard-core --example persisted_task -- --resume {} \"PROMPT\"",
        task.id()
    );
    Ok(status)
}
