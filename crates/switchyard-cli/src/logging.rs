//! The log lines on stderr: `warning: …` and `error: …` for people, every line scrubbed.
//! Spec: R10.5.

use tracing_subscriber::EnvFilter;

/// Sets up logging: `-v` shows info, `-vv` debug, `-vvv` trace; `SWITCHYARD_LOG` or `RUST_LOG`
/// choose finely and win. The MCP SDK's own lines are off, since failures are worded already.
pub fn init(verbose: u8) {
    let from_env = ["SWITCHYARD_LOG", "RUST_LOG"]
        .iter()
        .find_map(|var| EnvFilter::try_from_env(var).ok());
    let filter = from_env.unwrap_or_else(|| {
        EnvFilter::new(match verbose {
            0 => "warn,rmcp=off",
            1 => "info,rmcp=warn",
            2 => "debug",
            _ => "trace",
        })
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| ScrubbingWriter(Vec::new()))
        .event_format(LineFormat)
        .init();
}

struct ScrubbingWriter(Vec<u8>);

impl std::io::Write for ScrubbingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ScrubbingWriter {
    fn drop(&mut self) {
        use std::io::Write as _;
        let text = String::from_utf8_lossy(&self.0);
        let _ = std::io::stderr()
            .lock()
            .write_all(switchyard_api::secrets::scrub(&text).as_bytes());
    }
}

/// `warning: message` without timestamps: these lines are for people.
struct LineFormat;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for LineFormat
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        write!(writer, "{level}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
