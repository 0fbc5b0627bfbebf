//! The dashboard's static files, embedded so it works with no network: its stylesheet and
//! script, and uPlot 1.6.32, vendored under `ui/vendor/uplot/` with its MIT licence.
//! Spec: R14.11.

/// One embedded file: its bytes and content type.
pub(crate) struct Asset {
    pub(crate) bytes: &'static [u8],
    pub(crate) content_type: &'static str,
}

/// The stylesheet every page uses, the sign-in page too.
pub(crate) const STYLE: &str = "style.css";

/// The file `name` under `/ui/assets/`, if it is one.
pub(crate) fn asset(name: &str) -> Option<Asset> {
    let (bytes, content_type): (&'static [u8], &'static str) = match name {
        "style.css" => (
            include_bytes!("../../ui/style.css"),
            "text/css; charset=utf-8",
        ),
        "app.js" => (
            include_bytes!("../../ui/app.js"),
            "text/javascript; charset=utf-8",
        ),
        "uPlot.min.js" => (
            include_bytes!("../../ui/vendor/uplot/uPlot.iife.min.js"),
            "text/javascript; charset=utf-8",
        ),
        "uPlot.min.css" => (
            include_bytes!("../../ui/vendor/uplot/uPlot.min.css"),
            "text/css; charset=utf-8",
        ),
        "uPlot-LICENSE.txt" => (
            include_bytes!("../../ui/vendor/uplot/LICENSE"),
            "text/plain; charset=utf-8",
        ),
        _ => return None,
    };
    Some(Asset {
        bytes,
        content_type,
    })
}
