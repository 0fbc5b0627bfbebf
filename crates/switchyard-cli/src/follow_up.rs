//! The follow-up question in a terminal, with rustyline's editing and a history kept across
//! runs in the data directory, private and scrubbed of secrets.
//!
//! The editor talks to the terminal itself, so the prompt never lands in a redirected stdout.
//! Spec: R10.5.

use std::path::PathBuf;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::signals::{Signal, next_signal};

pub const HISTORY_FILE: &str = "follow_up_history";

pub struct FollowUp {
    editor: Option<DefaultEditor>,
    history: Option<PathBuf>,
}

impl FollowUp {
    /// A follow-up asker keeping its history in `history`, if any.
    pub fn new(history: Option<PathBuf>) -> Self {
        Self {
            editor: None,
            history,
        }
    }

    /// Asks for the next message; `Ok(None)` ends the task, `Err` says a signal arrived.
    pub async fn ask(
        &mut self,
        stdout_closed: &tokio::sync::Notify,
    ) -> Result<Option<String>, Signal> {
        let Some(editor) = self.editor.take().or_else(|| self.new_editor()) else {
            return Ok(None);
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut editor = editor;
            let line = editor.readline("> ");
            let _ = tx.send((editor, line));
        });
        let (editor, line) = tokio::select! {
            answer = rx => match answer {
                Ok(answer) => answer,
                Err(_) => return Ok(None),
            },
            signal = next_signal(stdout_closed) => match signal {
                Signal::Interrupt => return Ok(None),
                other => return Err(other),
            },
        };
        self.editor = Some(editor);
        let line = match line {
            Ok(line) => line,
            Err(ReadlineError::Interrupted | ReadlineError::Eof) => return Ok(None),
            Err(e) => {
                tracing::warn!("cannot read the follow-up question: {e}");
                return Ok(None);
            }
        };
        let line = line.trim_end_matches(['\n', '\r']).to_owned();
        if line.trim().is_empty() {
            return Ok(None);
        }
        self.remember(&line);
        Ok(Some(line))
    }

    fn new_editor(&self) -> Option<DefaultEditor> {
        let config = rustyline::Config::builder()
            .behavior(rustyline::config::Behavior::PreferTerm)
            .auto_add_history(false)
            .max_history_size(1000)
            .ok()?
            .build();
        let mut editor = match DefaultEditor::with_config(config) {
            Ok(editor) => editor,
            Err(e) => {
                tracing::warn!("cannot open the terminal for the follow-up question: {e}");
                return None;
            }
        };
        if let Some(path) = self.history.as_ref().filter(|p| p.exists()) {
            let _ = editor.load_history(path);
        }
        Some(editor)
    }

    fn remember(&mut self, line: &str) {
        let Some(editor) = self.editor.as_mut() else {
            return;
        };
        let _ = editor.add_history_entry(switchyard_api::secrets::scrub(line).into_owned());
        if let Some(path) = &self.history {
            if let Err(e) = editor.append_history(path) {
                tracing::debug!("cannot write the follow-up history {}: {e}", path.display());
            }
        }
    }
}
