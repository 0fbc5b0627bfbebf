//! The child-process transport for providers that are a local program: its NDJSON output read
//! through the provider's [`EventParser`], under the same per-request options as HTTP.
//! Spec: R4.2, R1.4, R5, R6.4.

use std::io;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdout, Command};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{ApiError, ErrorKind};
use crate::handler::{RequestOptions, ResolvedDeadlines};
use crate::retry::{RetryObserver, RetryPolicy, send_with_retry};
use crate::stream::{ApiStream, ApiStreamChunk};
use crate::transport::{
    EventParser, Origin, before, cancelled, deadline_after, first_content_timeout, idle_timeout,
};
use crate::wire::ndjson::NdjsonDecoder;

/// How much of the child's standard error is kept for the error a failed exit becomes.
const STDERR_TAIL_BYTES: usize = 8 * 1024;

/// One run of a program: pure data, built by the provider. Its argument list and standard
/// input may hold the conversation; this type has no `Debug` so they are never printed.
pub(crate) struct ProcessRequest {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    /// Variables taken out of the child's environment: keys it must not see.
    pub(crate) env_remove: Vec<String>,
    /// Variables set in the child's environment when the parent's has none.
    pub(crate) env_defaults: Vec<(String, String)>,
    /// Variables set in the child's environment whatever the parent's.
    pub(crate) env_set: Vec<(String, String)>,
    /// Written to the child's standard input, which is then closed.
    pub(crate) stdin: Vec<u8>,
    /// Files made for this run, held so that they are removed when the request is dropped.
    pub(crate) _temp_files: Vec<TempFile>,
    /// When the child's standard error holds the first text, the error says the second.
    pub(crate) stderr_hints: Vec<(&'static str, &'static str)>,
}

pub(crate) struct TempFile(pub(crate) PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl ProcessRequest {
    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // The child dies with its stream, so no orphan keeps running and spending.
            .kill_on_drop(true);
        for var in &self.env_remove {
            command.env_remove(var);
        }
        for (var, value) in &self.env_defaults {
            if std::env::var_os(var).is_none() {
                command.env(var, value);
            }
        }
        for (var, value) in &self.env_set {
            command.env(var, value);
        }
        command
    }

    fn spawn_error(&self, e: &io::Error) -> ApiError {
        let what = match e.kind() {
            io::ErrorKind::NotFound => "was not found".to_owned(),
            io::ErrorKind::PermissionDenied => "is not executable".to_owned(),
            _ => format!("could not be started ({e})"),
        };
        ApiError::new(
            ErrorKind::InvalidRequest,
            format!(
                "the program `{}` {what}; install it or name it with `command` under the provider's [providers.ID] section",
                self.program
            ),
        )
    }
}

struct Running<P> {
    child: Child,
    stdout: ChildStdout,
    stderr: JoinHandle<Vec<u8>>,
    decoder: NdjsonDecoder,
    parser: P,
    /// Items produced before the stream was handed on, held until the first content.
    pending: Vec<Result<ApiStreamChunk, ApiError>>,
    ended: bool,
}

fn keep_stderr_tail(mut stderr: tokio::process::ChildStderr) -> JoinHandle<Vec<u8>> {
    tokio::spawn(async move {
        let mut tail = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > STDERR_TAIL_BYTES {
                tail.drain(..tail.len() - STDERR_TAIL_BYTES);
            }
        }
        tail
    })
}

impl<P: EventParser<Event = String>> Running<P> {
    /// Reads the next piece of standard output into items; `Ok(false)` once it has ended.
    async fn read_more(
        &mut self,
        request: &ProcessRequest,
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    ) -> Result<bool, ApiError> {
        let mut buf = vec![0u8; 16 * 1024];
        let n = self.stdout.read(&mut buf).await.map_err(|e| {
            ApiError::new(
                ErrorKind::Network,
                format!("reading the output of `{}` failed ({e})", request.program),
            )
        })?;
        let mut lines = Vec::new();
        if n > 0 {
            self.decoder
                .feed(&buf[..n], &mut lines)
                .map_err(ApiError::from)?;
            for line in lines {
                self.parser.on_event(line, out);
            }
            return Ok(true);
        }
        self.decoder.finish(&mut lines).map_err(ApiError::from)?;
        for line in lines {
            self.parser.on_event(line, out);
        }
        self.ended = true;
        let status = self.child.wait().await.map_err(|e| {
            ApiError::new(
                ErrorKind::Network,
                format!("waiting for `{}` to exit failed ({e})", request.program),
            )
        })?;
        if status.success() || out.iter().any(Result::is_err) {
            self.parser.on_end(out);
            return Ok(false);
        }
        let tail = (&mut self.stderr).await.unwrap_or_default();
        let stderr = String::from_utf8_lossy(&tail);
        let code = status
            .code()
            .map_or_else(|| "a signal".to_owned(), |c| format!("code {c}"));
        let hint = request
            .stderr_hints
            .iter()
            .find(|(needle, _)| stderr.contains(needle))
            .map(|(_, hint)| *hint);
        let last = stderr
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or("");
        let message = match (hint, last) {
            (Some(hint), _) => format!("`{}` exited with {code}: {hint}", request.program),
            (None, "") => format!("`{}` exited with {code}", request.program),
            (None, last) => format!("`{}` exited with {code}: {last}", request.program),
        };
        out.push(Err(ApiError::new(ErrorKind::Server, message)));
        Ok(false)
    }
}

/// Starts `request`'s program and reads until its first content, error or end of output. An
/// error before any content is returned, so the retry can start the program again.
async fn start<P: EventParser<Event = String>>(
    request: &ProcessRequest,
    parser: P,
) -> Result<Running<P>, ApiError> {
    let mut child = request
        .command()
        .spawn()
        .map_err(|e| request.spawn_error(&e))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ApiError::new(
            ErrorKind::Network,
            format!("`{}` started without its pipes", request.program),
        ));
    };
    // Standard input is written while the output is read, so a child that answers before it
    // has read everything cannot block on a full pipe. A child that exits without reading it
    // all is no error here: its exit status says what happened.
    let input = request.stdin.clone();
    tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
        let _ = stdin.shutdown().await;
    });
    let mut running = Running {
        child,
        stdout,
        stderr: keep_stderr_tail(stderr),
        decoder: NdjsonDecoder::new(),
        parser,
        pending: Vec::new(),
        ended: false,
    };
    let mut out = Vec::new();
    loop {
        let more = running.read_more(request, &mut out).await?;
        let first_content = out
            .iter()
            .position(|i| matches!(i, Ok(c) if c.is_content()));
        let first_error = out.iter().position(Result::is_err);
        match (first_error, first_content) {
            (Some(e), c) if c.is_none_or(|c| e < c) => {
                return Err(out.swap_remove(e).err().unwrap_or_else(|| {
                    ApiError::new(ErrorKind::Server, "the program reported an error")
                }));
            }
            (_, Some(_)) => break,
            _ if !more => break,
            _ => {}
        }
    }
    running.pending = out;
    Ok(running)
}

/// The stream of one run of `request`; `new_parser` makes each attempt's mapper.
pub(crate) fn stream<P, F>(
    origin: Origin,
    policy: RetryPolicy,
    deadlines: ResolvedDeadlines,
    request: Arc<ProcessRequest>,
    new_parser: F,
    options: RequestOptions,
) -> ApiStream
where
    P: EventParser<Event = String>,
    F: Fn() -> P + Send + Sync + 'static,
{
    let RequestOptions {
        cancel,
        on_retry,
        deadlines: overrides,
        bounds,
        ..
    } = options;
    let named = Some((origin.provider_id.clone(), origin.model_id.clone()));
    let run = Run {
        origin,
        deadlines: deadlines.with(overrides),
        cancel,
        request,
    };
    // Secrets are scrubbed across chunks and the answer bounded, as for HTTP.
    crate::stream_guard::guard_stream_of(
        Box::pin(async_stream::stream! {
            let mut deadline = deadline_after(run.deadlines.first_content);
            let opened = run.open(policy, on_retry.as_ref(), &new_parser, &mut deadline).await;
            let mut running = match opened {
                Ok(r) => r,
                Err(e) => {
                    yield Err(run.finish(e));
                    return;
                }
            };
            let mut out = std::mem::take(&mut running.pending);
            let mut content_seen = false;
            loop {
                for item in out.drain(..) {
                    if run.cancel.is_cancelled() {
                        yield Err(cancelled(&run.origin));
                        return;
                    }
                    match item {
                        Ok(chunk) => {
                            content_seen |= chunk.is_content();
                            yield Ok(chunk);
                        }
                        Err(e) => {
                            yield Err(run.finish(e));
                            return;
                        }
                    }
                }
                if running.ended {
                    return;
                }
                if content_seen {
                    deadline = deadline_after(run.deadlines.idle);
                }
                if let Err(e) = run.read(&mut running, deadline, content_seen, &mut out).await {
                    // Dropping `running` kills the child.
                    yield Err(run.finish(e));
                    return;
                }
            }
        }),
        bounds,
        named,
        false,
    )
}

struct Run {
    origin: Origin,
    deadlines: ResolvedDeadlines,
    cancel: CancellationToken,
    request: Arc<ProcessRequest>,
}

impl Run {
    fn finish(&self, e: ApiError) -> ApiError {
        e.with_origin(&self.origin.provider_id, &self.origin.model_id)
    }

    /// Starts the program under the provider-level retry until its first content or error.
    async fn open<P, F>(
        &self,
        policy: RetryPolicy,
        on_retry: Option<&RetryObserver>,
        new_parser: &F,
        deadline: &mut Option<Instant>,
    ) -> Result<Running<P>, ApiError>
    where
        P: EventParser<Event = String>,
        F: Fn() -> P,
    {
        let open = send_with_retry(policy, on_retry, deadline, |at| {
            let parser = new_parser();
            async move {
                match before(at, start(&self.request, parser)).await {
                    Some(started) => started,
                    None => Err(first_content_timeout(
                        self.deadlines.first_content,
                        &self.origin,
                    )),
                }
            }
        });
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(cancelled(&self.origin)),
            r = open => r,
        }
    }

    /// Reads the next piece of output into `out` before `deadline`, unless cancelled.
    async fn read<P: EventParser<Event = String>>(
        &self,
        running: &mut Running<P>,
        deadline: Option<Instant>,
        content_seen: bool,
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    ) -> Result<(), ApiError> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(cancelled(&self.origin)),
            r = before(deadline, running.read_more(&self.request, out)) => match r {
                Some(r) => r.map(|_| ()),
                None if content_seen => Err(idle_timeout(self.deadlines.idle, &self.origin)),
                None => Err(first_content_timeout(self.deadlines.first_content, &self.origin)),
            },
        }
    }
}
