//! Where the prompt comes from: the argument, `-` or piped standard input, or `--file`.
//!
//! There is no size limit of its own; a process's arguments are limited by the OS, so a prompt
//! of megabytes goes through stdin or a file. Piped text given with a prompt joins it as
//! context before it, as `llm` does.
//! Spec: R9.6.

use std::io::{IsTerminal, Read};
use std::path::Path;

pub const STDIN_ARG: &str = "-";

/// The prompt to send and, when piped text joined it, the prompt as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// What is sent: the piped text, a blank line and the typed prompt, or the one source.
    pub text: String,
    /// The typed prompt when piped text joined it, which `switchyard tasks` lists.
    pub typed: Option<String>,
}

/// The prompt from `arg`, `file` and piped stdin; `Ok(None)` when nothing was given.
pub fn read_prompt(arg: Option<&str>, file: Option<&Path>) -> Result<Option<Prompt>, String> {
    let alone = |text: String| Prompt { text, typed: None };
    Ok(match read_text(arg, file)? {
        Joined::Alone(text) => text.map(alone),
        Joined::Context { context, prompt } => Some(Prompt {
            text: format!("{context}\n\n{prompt}"),
            typed: Some(prompt.to_owned()),
        }),
    })
}

enum Joined<'a> {
    Alone(Option<String>),
    Context { context: String, prompt: &'a str },
}

fn read_text<'a>(arg: Option<&'a str>, file: Option<&Path>) -> Result<Joined<'a>, String> {
    let from_file = match file {
        Some(path) if path == Path::new(STDIN_ARG) => Some(read_stdin()?),
        Some(path) => Some(std::fs::read(path).map_err(|e| {
            format!(
                "cannot read the prompt file {}: {e}; check the path given to --file",
                path.display()
            )
        })?),
        None => None,
    };
    let from_file = from_file
        .map(|bytes| text(bytes, "the prompt file"))
        .transpose()?;
    match (arg, from_file) {
        (Some(_), Some(_)) if arg != Some(STDIN_ARG) => Err(
            "both a prompt and --file were given; pass one (piped text is added to a prompt as context)"
                .to_owned(),
        ),
        (Some(STDIN_ARG), Some(_)) => {
            Err("both `-` and --file were given; pass one of them".to_owned())
        }
        (_, Some(file_text)) => Ok(Joined::Alone(Some(file_text))),
        (Some(STDIN_ARG), None) => Ok(Joined::Alone(Some(text(
            read_stdin()?,
            "standard input",
        )?))),
        (Some(prompt), None) => match piped_stdin()? {
            Some(context) if !context.trim().is_empty() => Ok(Joined::Context { context, prompt }),
            _ => Ok(Joined::Alone(Some(prompt.to_owned()))),
        },
        (None, None) => Ok(Joined::Alone(piped_stdin()?)),
    }
}

/// Standard input's text when it is a pipe or a file; a terminal, `/dev/null` or a socket a
/// supervisor left open would block forever.
fn piped_stdin() -> Result<Option<String>, String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() || !is_pipe_or_file(&stdin) {
        return Ok(None);
    }
    text(read_stdin()?, "standard input").map(Some)
}

#[cfg(unix)]
fn is_pipe_or_file(stdin: &std::io::Stdin) -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let Ok(fd) = stdin.as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(fd)
        .metadata()
        .map(|m| m.file_type().is_fifo() || m.file_type().is_file())
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn is_pipe_or_file(_stdin: &std::io::Stdin) -> bool {
    true
}

fn read_stdin() -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the prompt from standard input: {e}"))?;
    Ok(bytes)
}

fn text(bytes: Vec<u8>, what: &str) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{what} is not UTF-8 text (invalid byte at offset {}); convert it first, e.g. with iconv",
            e.utf8_error().valid_up_to()
        )
    })
}
