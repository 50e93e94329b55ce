//! The one HTML frame every page shares: document head, inline CSS, header with the
//! navigation, a responsive container; and the escaping every page uses for data.
//!
//! Pages build their body as a string of HTML in which every piece of data went through
//! [`esc`], then hand it to [`page`] (or [`page_with_head`] when the head needs more, as
//! the self-refreshing live session page does). No external assets, no script.

use axum::{
    http::StatusCode,
    response::{Html, IntoResponse, Response},
};

/// `s` escaped for HTML text and for attribute values (single or double quoted):
/// `&`, `<`, `>`, `"` and `'` become character references.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The full HTML document titled `title` (escaped here) around `body`, which must already
/// be HTML with its data escaped.
pub fn page(title: &str, body: &str) -> Html<String> {
    page_with_head(title, "", body)
}

/// As [`page`], with `head` (trusted HTML, e.g. a `<meta http-equiv="refresh">`) added to
/// the document head.
pub fn page_with_head(title: &str, head: &str, body: &str) -> Html<String> {
    let title = esc(title);
    Html(format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>{title} · TRUST</title>\n{head}<style>{CSS}</style>\n</head>\n<body>\n\
<header class=\"top\"><nav class=\"wrap\"><a class=\"brand\" href=\"/\">TRUST</a>\
<a href=\"/\">Network</a><a href=\"/blocks\">Blocks</a><a href=\"/audit\">Audit</a>\
<form class=\"search\" action=\"/search\" method=\"get\" role=\"search\">\
<input name=\"q\" type=\"search\" placeholder=\"session, block, account\" aria-label=\"Search\" maxlength=\"200\">\
</form></nav></header>\n<main class=\"wrap\">\n{body}\n</main>\n</body>\n</html>\n"
    ))
}

/// A page in the shared layout saying why there is nothing to show, with `status`
/// (404 for unknown ids, 400 for malformed ones, 500 when the node failed to read).
pub fn error_page(status: StatusCode, message: &str) -> Response {
    let title = status.canonical_reason().unwrap_or("Error");
    let body = format!(
        "<h1>{}</h1>\n<p class=\"lead\">{}</p>\n<p><a href=\"/\">Back to the network</a></p>",
        esc(title),
        esc(message)
    );
    (status, page(title, &body)).into_response()
}

/// The shared style sheet: a max-width container, tables that scroll sideways on narrow
/// screens (wrap them in `<div class="scroll">`), monospace ids that break anywhere, and
/// one colour per verdict (`v-valid`, `v-invalid`, `v-ungrounded`, `v-propagated`,
/// `v-undecided`, `v-none`) for text badges and SVG nodes alike.
const CSS: &str = r#"
:root{--fg:#1d2330;--muted:#5b6475;--bg:#f6f7f9;--card:#fff;--line:#dde1e7;--accent:#1f5fbf;
--valid:#2e8540;--invalid:#c62828;--ungrounded:#e07b00;--propagated:#8e44ad;--undecided:#9aa3b0;--none:#e4e7ec}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent);text-decoration:none}a:hover,a:focus{text-decoration:underline}
.wrap{max-width:1100px;margin:0 auto;padding:0 16px}
header.top{background:#14233c;color:#fff}
header.top nav{display:flex;flex-wrap:wrap;align-items:center;gap:4px 18px;min-height:52px;padding-top:6px;padding-bottom:6px}
header.top a{color:#dbe6ff;font-weight:500}header.top a.brand{color:#fff;font-weight:700;letter-spacing:.08em}
form.search{margin-left:auto;flex:1 1 200px;max-width:340px}
form.search input{width:100%;padding:6px 10px;border-radius:6px;border:1px solid #3b4d6b;background:#0f1a2e;color:#fff}
main{padding-top:20px;padding-bottom:40px}
h1{font-size:1.5rem;margin:.2em 0 .6em}h2{font-size:1.15rem;margin:1.6em 0 .5em}
.lead{font-size:1.05rem;color:var(--muted)}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 16px;margin:12px 0}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(170px,1fr));gap:12px}
.stat{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.stat .k{font-size:.8rem;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.stat .v{font-size:1.25rem;font-weight:600;overflow-wrap:anywhere}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;background:var(--card);border:1px solid var(--line);border-radius:8px}
table{border-collapse:collapse;width:100%;font-size:.93rem}
th,td{text-align:left;padding:7px 12px;border-bottom:1px solid var(--line);vertical-align:top;white-space:nowrap}
th{background:#eef1f5;font-weight:600}tr:last-child td{border-bottom:0}
td.wrapok{white-space:normal;min-width:16em}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;overflow-wrap:anywhere}
.mono,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;overflow-wrap:anywhere}
.muted{color:var(--muted)}
.pager{display:flex;gap:16px;margin:12px 0}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:.85em;font-weight:600;color:#fff;background:var(--undecided)}
.badge.pass,.v-valid.badge{background:var(--valid)}.badge.fail,.v-invalid.badge{background:var(--invalid)}
.badge.inconclusive{background:var(--ungrounded)}.v-ungrounded.badge{background:var(--ungrounded)}
.v-propagated.badge{background:var(--propagated)}.v-none.badge{background:var(--none);color:var(--fg)}
svg .node rect{stroke:#1d2330;stroke-width:1}
svg .node:focus{outline:none}svg .node:focus rect,svg .node:hover rect{stroke-width:3;stroke:var(--accent)}
svg .v-valid rect{fill:var(--valid)}svg .v-invalid rect{fill:var(--invalid)}svg .v-ungrounded rect{fill:var(--ungrounded)}
svg .v-propagated rect{fill:var(--propagated)}svg .v-undecided rect{fill:var(--undecided)}svg .v-none rect{fill:var(--none)}
svg .node text{font:11px system-ui,sans-serif;fill:#fff;pointer-events:none}svg .v-none text{fill:var(--fg)}
svg .e-dep{stroke:#5b6475;stroke-width:1.5;fill:none}svg .e-dec{stroke:#5b6475;stroke-width:1.2;stroke-dasharray:5 4;fill:none}
svg .lvl{font:11px system-ui,sans-serif;fill:var(--muted)}
.plot svg{max-width:100%;height:auto;background:#fff}
.legend{display:flex;flex-wrap:wrap;gap:6px 14px;margin:8px 0;font-size:.9rem}
.legend .sw{display:inline-block;width:12px;height:12px;border-radius:3px;vertical-align:-1px;margin-right:5px;border:1px solid #0003}
.sw.v-valid{background:var(--valid)}.sw.v-invalid{background:var(--invalid)}.sw.v-ungrounded{background:var(--ungrounded)}
.sw.v-propagated{background:var(--propagated)}.sw.v-undecided{background:var(--undecided)}.sw.v-none{background:var(--none)}
.hint{font-size:.85rem;color:var(--muted)}
@media (max-width:600px){body{font-size:14px}h1{font-size:1.25rem}th,td{padding:6px 8px}}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_special_character() {
        assert_eq!(
            esc(r#"<script>alert('x' & "y")</script>"#),
            "&lt;script&gt;alert(&#39;x&#39; &amp; &quot;y&quot;)&lt;/script&gt;"
        );
        assert_eq!(esc("plain ü"), "plain ü");
    }

    #[test]
    fn a_page_is_a_whole_document_with_the_navigation_and_an_escaped_title() {
        let Html(html) = page("<b>x</b>", "<p>body</p>");
        assert!(html.starts_with("<!doctype html>"));
        assert!(html.contains("<meta charset=\"utf-8\">"));
        assert!(html.contains("name=\"viewport\""));
        for link in ["href=\"/\"", "href=\"/blocks\"", "href=\"/audit\""] {
            assert!(html.contains(link), "{link}");
        }
        assert!(html.contains("<title>&lt;b&gt;x&lt;/b&gt; · TRUST</title>"));
        assert!(!html.contains("<b>x</b>"));
        assert!(html.contains("<main class=\"wrap\">\n<p>body</p>"));
    }
}
