//! `switchyard-bench`: the Rust half of the benchmark in `bench/` (see bench/README.md).
//!
//! - `serve`: a loopback HTTP/1.1 server (127.0.0.1) that answers every POST under
//!   `/s/NAME/...` with the pre-generated stream `DIR/NAME.sse` as `text/event-stream`, in
//!   16 KiB HTTP chunks, as fast as the socket takes it. Thousands of connections at once.
//! - `consume`: consumes one stream through Switchyard's `ApiHandler` (built by
//!   `build_api_handler` from an `ApiConfiguration`, exactly as the CLI builds it), counting
//!   the chunks, and prints one JSON line; with `--streams N`, N streams at once in one process.
//! - `load`: the gateway benchmark's load generator (`load.rs`): a closed loop of checked
//!   requests in one dialect against a gateway or the paced upstream (`paced.rs`), which
//!   `serve` answers under `/p/SPEC/...`.
//! - `transports`: issue 17's experiment: N streams at once over raw HTTP/1.1 through reqwest
//!   or through hyper's own connection with a capped read buffer, decoded by the SSE decoder
//!   only, to measure what each transport choice holds per stream.
//!
//! Like the Node and Python clients, `consume` reports its own stream time, the CPU time the
//! stream took and its peak RSS (`VmHWM`); the driver (`bench/run.py`) also measures the whole
//! process from outside (`wait4`), the same way for every client.

mod consume;
mod load;
mod open_loop;
mod paced;
mod server;
mod transports;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "switchyard-bench",
    about = "Switchyard benchmark server and client"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serves `DIR/*.sse` on 127.0.0.1; prints `listening http://127.0.0.1:PORT` when ready.
    Serve {
        /// Folder holding the generated `NAME.sse` files.
        #[arg(long)]
        dir: PathBuf,
        /// Port to listen on (0 picks a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// Consumes a stream through Switchyard's ApiHandler and prints its counts as JSON.
    Consume {
        /// Provider id: `openai` (Chat Completions) or `anthropic` (Messages).
        #[arg(long)]
        provider: String,
        /// Base URL given to the provider, e.g. `http://127.0.0.1:PORT/s/openai_full/v1`.
        #[arg(long)]
        base_url: String,
        /// Model id sent in the request.
        #[arg(long)]
        model: String,
        /// Number of streams consumed at once in this process (1 = a single stream).
        #[arg(long, default_value_t = 1)]
        streams: usize,
    },
    /// The gateway benchmark's load: a closed (or, with `--rate`, open) loop of checked
    /// requests; one JSON line.
    Load {
        /// Full URL to POST to, e.g. `http://127.0.0.1:PORT/v1/chat/completions`.
        #[arg(long)]
        url: String,
        /// The client's dialect: `chat`, `messages` or `responses`.
        #[arg(long)]
        dialect: String,
        /// Ask for a stream (else a whole answer).
        #[arg(long)]
        stream: bool,
        /// Model name sent.
        #[arg(long, default_value = "bench")]
        model: String,
        /// Requests at once (workers, one keep-alive connection each).
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// Requests in all.
        #[arg(long, default_value_t = 100)]
        requests: usize,
        /// Text chunks the paced upstream sends (its `n`).
        #[arg(long, default_value_t = 16)]
        chunks: usize,
        /// Bytes per chunk (its `size`).
        #[arg(long, default_value_t = 16)]
        size: usize,
        /// Extra header `NAME: VALUE` (repeatable).
        #[arg(long = "header")]
        headers: Vec<String>,
        /// Open loop: requests per second, each due at its own time and timed from then
        /// (`--concurrency` is then unused).
        #[arg(long)]
        rate: Option<f64>,
        /// The longest one answer may take, seconds (request to last byte).
        #[arg(long, default_value_t = 60.0)]
        timeout: f64,
    },
    /// Issue 17's experiment: N raw streams at once through one transport choice; one JSON line.
    Transports {
        /// Full URL to POST to, e.g. `http://127.0.0.1:PORT/s/openai_conc/v1/chat/completions`.
        #[arg(long)]
        url: String,
        /// Number of streams at once.
        #[arg(long, default_value_t = 1000)]
        streams: usize,
        /// `reqwest` (Switchyard's transport) or `hyper` (hyper's HTTP/1 connection).
        #[arg(long, default_value = "reqwest")]
        client: String,
        /// For `hyper`: the cap on the read buffer, bytes (hyper's `max_buf_size`, at least 8192).
        #[arg(long, default_value_t = 65536)]
        max_buf: usize,
        /// For `hyper`: read exactly this many bytes each time (`read_buf_exact_size`).
        #[arg(long)]
        exact_buf: Option<usize>,
    },
}

/// The checked parts of `load`'s arguments.
type LoadTarget = (String, paced::Dialect, Vec<(String, String)>);

fn load_plan(url: String, dialect: &str, headers: Vec<String>) -> Result<LoadTarget, String> {
    let dialect = match dialect {
        "chat" => paced::Dialect::Chat,
        "messages" => paced::Dialect::Messages,
        "responses" => paced::Dialect::Responses,
        other => {
            return Err(format!(
                "--dialect is chat, messages or responses, not {other}"
            ));
        }
    };
    let headers = (headers.iter())
        .map(|h| {
            h.split_once(':')
                .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
                .ok_or_else(|| format!("--header `{h}` is not NAME: VALUE"))
        })
        .collect::<Result<_, _>>()?;
    Ok((url, dialect, headers))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.command {
        Command::Serve { dir, port } => server::serve(&dir, port),
        Command::Consume {
            provider,
            base_url,
            model,
            streams,
        } => consume::run(&consume::Target {
            provider,
            base_url,
            model,
            streams,
        }),
        Command::Load {
            url,
            dialect,
            stream,
            model,
            concurrency,
            requests,
            chunks,
            size,
            headers,
            rate,
            timeout,
        } => load_plan(url, &dialect, headers).and_then(|(url, dialect, headers)| {
            let timeout = std::time::Duration::try_from_secs_f64(timeout)
                .map_err(|_| format!("--timeout is a number of seconds, not {timeout}"))?;
            load::run(load::Plan {
                url,
                dialect,
                stream,
                model,
                concurrency,
                requests,
                chunks,
                size,
                headers,
                rate,
                timeout,
            })
        }),
        Command::Transports {
            url,
            streams,
            client,
            max_buf,
            exact_buf,
        } => match client.as_str() {
            "reqwest" => transports::run(&url, streams, transports::Choice::Reqwest),
            "hyper" if max_buf >= 8192 => transports::run(
                &url,
                streams,
                transports::Choice::Hyper {
                    max_buf,
                    exact: exact_buf,
                },
            ),
            "hyper" => Err("--max-buf is at least 8192 (hyper's minimum)".to_owned()),
            other => Err(format!("--client is reqwest or hyper, not {other}")),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("switchyard-bench: {message}");
            ExitCode::FAILURE
        }
    }
}
