//! Rendering task events: streamed text on stdout, everything else on stderr; or, with
//! `--json`, one JSON object per line on stdout (README "JSON output").

use std::io::{IsTerminal, Write};

use switchyard_core::task::{TaskEvent, TaskStatus};

const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Writes task events for a person (text mode) or a program (`--json`).
pub struct Renderer {
    json: bool,
    quiet: bool,
    color: bool,
    text_open: bool,
    reasoning_open: bool,
    usage: Option<TaskEvent>,
}

impl Renderer {
    /// A renderer; `quiet` hides reasoning in text mode.
    pub fn new(json: bool, quiet: bool) -> Self {
        Self {
            json,
            quiet,
            color: std::io::stderr().is_terminal(),
            text_open: false,
            reasoning_open: false,
            usage: None,
        }
    }

    /// Renders one event. Output errors (a closed pipe) are ignored: the task still ends cleanly.
    pub fn event(&mut self, event: &TaskEvent) {
        if self.json {
            let mut out = std::io::stdout().lock();
            if let Ok(line) = serde_json::to_string(event) {
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            return;
        }
        match event {
            TaskEvent::TaskStarted {
                provider,
                model,
                mode,
                ..
            } => {
                self.note(&format!("{provider} · {model} · {mode} mode"));
            }
            TaskEvent::Text { text } => {
                self.close_reasoning();
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
                self.text_open = !text.ends_with('\n');
            }
            TaskEvent::Reasoning { text } => {
                if self.quiet {
                    return;
                }
                let mut err = std::io::stderr().lock();
                if !self.reasoning_open && self.color {
                    let _ = err.write_all(DIM.as_bytes());
                }
                self.reasoning_open = true;
                let _ = err.write_all(text.as_bytes());
                let _ = err.flush();
            }
            TaskEvent::ToolCall {
                name, arguments, ..
            } => {
                self.close_reasoning();
                self.close_text();
                self.note(&format!("tool call: {name} {arguments}"));
            }
            TaskEvent::Usage { .. } => self.usage = Some(event.clone()),
            TaskEvent::Error { message, .. } => {
                self.close_reasoning();
                self.close_text();
                eprintln!("error: {message}");
            }
            TaskEvent::TaskFinished {
                status,
                first_token_ms,
                duration_ms,
            } => {
                self.close_reasoning();
                self.close_text();
                let mut line = match &self.usage {
                    Some(TaskEvent::Usage {
                        input_tokens,
                        output_tokens,
                        cache_read_tokens,
                        cache_write_tokens,
                        cost_usd,
                        estimated,
                    }) => {
                        let approx = if *estimated { "~" } else { "" };
                        let mut s = format!(
                            "{approx}{input_tokens} in · {approx}{output_tokens} out tokens"
                        );
                        if *estimated {
                            s.push_str(" (estimated: the provider reported no usage)");
                        }
                        if *cache_read_tokens > 0 || *cache_write_tokens > 0 {
                            s.push_str(&format!(
                                " · cache {cache_read_tokens} read / {cache_write_tokens} written"
                            ));
                        }
                        s.push_str(&format!(" · ${cost_usd:.6}"));
                        s
                    }
                    _ => "no usage reported".to_owned(),
                };
                if let Some(ms) = first_token_ms {
                    line.push_str(&format!(" · first token {ms} ms"));
                }
                line.push_str(&format!(" · {:.1} s", *duration_ms as f64 / 1000.0));
                match status {
                    TaskStatus::Completed => {}
                    TaskStatus::Failed => line.push_str(" · failed"),
                    TaskStatus::Cancelled => line.push_str(" · cancelled"),
                }
                self.note(&line);
            }
        }
    }

    fn note(&self, text: &str) {
        if self.color {
            eprintln!("{DIM}{text}{RESET}");
        } else {
            eprintln!("{text}");
        }
    }

    fn close_reasoning(&mut self) {
        if self.reasoning_open {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(if self.color { b"\x1b[0m\n" } else { b"\n" });
            self.reasoning_open = false;
        }
    }

    fn close_text(&mut self) {
        if self.text_open {
            let _ = writeln!(std::io::stdout().lock());
            self.text_open = false;
        }
    }
}
