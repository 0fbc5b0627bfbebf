//! Reading what the system prompt needs from the machine and the workspace.
//! Spec: R6.2.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The largest rules or `.clineignore` file read; larger files are skipped.
pub const MAX_RULE_FILE_BYTES: u64 = 64 * 1024;
/// The workspace rules: a file, or a directory of `.md`/`.txt` files.
pub const CLINERULES: &str = ".clinerules";
/// The workspace's agent instructions file, by the agents.md convention.
pub const AGENTS_MD: &str = "AGENTS.md";
/// Paths the assistant must not touch, in gitignore syntax.
pub const CLINEIGNORE: &str = ".clineignore";

/// One rules file, its content trimmed and never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text.
    pub content: String,
}

/// What the machine and the workspace say about a request in one directory.
pub(super) struct Gathered {
    pub(super) os: String,
    pub(super) shell: String,
    pub(super) rules: Vec<RuleFile>,
    pub(super) clineignore: Option<String>,
}

/// Reads the machine and the rules of `cwd`; a broken rules file is skipped with a warning that
/// names it, so it never stops a task.
pub(super) fn read(cwd: &Path, global_rules_dir: Option<&Path>) -> Gathered {
    let mut rules = Vec::new();
    if let Some(dir) = global_rules_dir {
        read_rules_dir(dir, &mut rules);
    }
    let local = cwd.join(CLINERULES);
    match fs::metadata(&local) {
        Ok(meta) if meta.is_dir() => read_rules_dir(&local, &mut rules),
        Ok(_) => push_rule(local, &mut rules),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => tracing::warn!("skipping rules {}: {err}", local.display()),
    }
    push_rule(cwd.join(AGENTS_MD), &mut rules);

    let clineignore = read_small_text(&cwd.join(CLINEIGNORE))
        .map(|text| clean(&text).to_owned())
        .filter(|text| !text.is_empty());

    Gathered {
        os: os_description(),
        shell: detect_shell(),
        rules,
        clineignore,
    }
}

/// Cline's global rules directory, `~/Documents/Cline/Rules`; `None` when home is unknown.
pub fn default_global_rules_dir() -> Option<PathBuf> {
    let home_var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    let home = std::env::var_os(home_var).filter(|home| !home.is_empty())?;
    Some(
        PathBuf::from(home)
            .join("Documents")
            .join("Cline")
            .join("Rules"),
    )
}

fn read_rules_dir(dir: &Path, rules: &mut Vec<RuleFile>) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return,
        Err(err) => {
            tracing::warn!("skipping rules directory {}: {err}", dir.display());
            return;
        }
    };
    let mut files: Vec<(OsString, PathBuf)> = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => {
                let path = entry.path();
                if is_rules_file_name(&path) && path.is_file() {
                    files.push((entry.file_name(), path));
                }
            }
            Err(err) => tracing::warn!("skipping an entry of {}: {err}", dir.display()),
        }
    }
    files.sort();
    for (_, path) in files {
        push_rule(path, rules);
    }
}

fn is_rules_file_name(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| ext.eq_ignore_ascii_case("md") || ext.eq_ignore_ascii_case("txt"))
}

fn push_rule(path: PathBuf, rules: &mut Vec<RuleFile>) {
    if let Some(text) = read_small_text(&path) {
        let content = clean(&text);
        if !content.is_empty() {
            rules.push(RuleFile {
                content: content.to_owned(),
                path,
            });
        }
    }
}

fn clean(text: &str) -> &str {
    text.trim_start_matches('\u{feff}').trim()
}

fn read_small_text(path: &Path) -> Option<String> {
    // Checked first so a directory or a named pipe, which would block `open`, is skipped.
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => {
            tracing::warn!("skipping {}: not a regular file", path.display());
            return None;
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => return None,
        Err(err) => {
            tracing::warn!("skipping {}: {err}", path.display());
            return None;
        }
    }
    let file = match fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return None,
        Err(err) => {
            tracing::warn!("skipping {}: {err}", path.display());
            return None;
        }
    };
    let mut bytes = Vec::new();
    // One byte past the limit is enough to tell, so a huge file costs nothing.
    if let Err(err) = file
        .take(MAX_RULE_FILE_BYTES.saturating_add(1))
        .read_to_end(&mut bytes)
    {
        tracing::warn!("skipping {}: {err}", path.display());
        return None;
    }
    if u64::try_from(bytes.len()).map_or(true, |len| len > MAX_RULE_FILE_BYTES) {
        tracing::warn!(
            "skipping {}: larger than {} KiB",
            path.display(),
            MAX_RULE_FILE_BYTES / 1024
        );
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(text) => Some(text),
        Err(_) => {
            tracing::warn!("skipping {}: not valid UTF-8", path.display());
            None
        }
    }
}

pub(super) fn os_description() -> String {
    let raw = std::env::consts::OS;
    format!(
        "{} ({raw}, {})",
        friendly_os_name(raw),
        std::env::consts::ARCH
    )
}

pub(super) fn friendly_os_name(os: &str) -> &str {
    match os {
        "linux" => "Linux",
        "macos" => "macOS",
        "windows" => "Windows",
        "ios" => "iOS",
        "android" => "Android",
        "freebsd" => "FreeBSD",
        "netbsd" => "NetBSD",
        "openbsd" => "OpenBSD",
        "dragonfly" => "DragonFly BSD",
        "solaris" => "Solaris",
        "illumos" => "illumos",
        other => other,
    }
}

fn detect_shell() -> String {
    if cfg!(windows) {
        shell_name(std::env::var_os("COMSPEC"), "cmd.exe")
    } else {
        shell_name(std::env::var_os("SHELL"), "sh")
    }
}

pub(super) fn shell_name(var: Option<OsString>, fallback: &str) -> String {
    var.as_deref()
        .map(Path::new)
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| fallback.to_owned())
}
