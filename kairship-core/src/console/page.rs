//! The page layout every console page shares: the frame, the CSRF field, error and notice
//! boxes, the sign-in and error pages, and the small readers of JSON values pages use.

use serde_json::Value;

use super::html::Html;
use crate::api::ApiError;

/// Where the console is served.
pub const PREFIX: &str = "/ui";

/// The signed-in user as pages show them.
#[derive(Clone, Debug)]
pub struct Viewer<'a> {
    /// User name.
    pub user: &'a str,
    /// The session's CSRF token.
    pub csrf: &'a str,
}

/// A whole page around `main`.
pub fn page(title: &str, viewer: Option<&Viewer<'_>>, main: Html) -> String {
    let mut h = Html::with_capacity(main.len() + 2048);
    h.raw("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">")
        .raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        // No eval (the CSP forbids it) and error answers are swapped in like any other, so
        // the API's message is shown where the action was.
        .raw(
            "<meta name=\"htmx-config\" content='{\"allowEval\":false,\"includeIndicatorStyles\":false,\
             \"responseHandling\":[{\"code\":\"204\",\"swap\":false},{\"code\":\"...\",\"swap\":true}]}'>",
        )
        .open("title", &[])
        .text(title)
        .raw(" · Kairship</title>")
        .raw("<link rel=\"stylesheet\" href=\"/ui/assets/console.css\">")
        .raw("<script src=\"/ui/assets/htmx.min.js\"></script>")
        .raw("<script src=\"/ui/assets/console.js\" defer></script></head>");
    match viewer {
        Some(v) => {
            let headers = serde_json::json!({ "X-CSRF-Token": v.csrf }).to_string();
            h.open("body", &[("hx-headers", &headers)]);
            h.raw(SKIP_LINK)
                .raw("<header><a class=\"brand\" href=\"/ui/instances\">Kairship</a>")
                .raw("<nav><a href=\"/ui/instances\">Instances</a> <a href=\"/ui/audit\">Audit</a></nav>")
                // The fleet search box: a name, searched as Deployments (the results page
                // offers the other kinds and filters).
                .raw("<form method=\"get\" action=\"/ui/search\" class=\"inline search\" role=\"search\">")
                .raw("<input type=\"search\" name=\"name\" id=\"search-name\" aria-label=\"Search\" placeholder=\"Search every instance\">")
                .raw("<button type=\"submit\">Search</button></form>")
                .raw("<span class=\"user\">")
                .text(v.user)
                .raw("</span><form method=\"post\" action=\"/ui/signout\" class=\"inline\">");
            csrf_field(&mut h, v.csrf);
            h.raw("<button id=\"signout\" type=\"submit\">Sign out</button></form></header>");
            shortcuts_dialog(&mut h);
        }
        None => {
            h.raw("<body>")
                .raw(SKIP_LINK)
                .raw("<header><a class=\"brand\" href=\"/ui/\">Kairship</a></header>");
        }
    }
    // `tabindex=-1`: the skip link moves the keyboard focus here, not only the view.
    h.raw("<main id=\"main\" tabindex=\"-1\">")
        .append(main)
        .raw("</main></body></html>");
    h.finish()
}

/// The first thing on every page: a link past the header to the page's content (shown when
/// it has the keyboard focus).
const SKIP_LINK: &str =
    "<a class=\"skip-link\" id=\"skip-link\" href=\"#main\">Skip to content</a>";

/// The keyboard shortcuts, as `?` shows them (`assets/console.js` handles the keys).
pub const SHORTCUTS: [(&str, &str); 6] = [
    ("/", "focus the search box"),
    ("?", "show these shortcuts"),
    ("g i", "go to the instances"),
    ("g m", "go to the member clusters of this instance"),
    ("g r", "go to the resources of this instance"),
    ("Esc", "close this list"),
];

/// The list `?` opens (a native dialog: Esc closes it and it keeps the focus inside).
fn shortcuts_dialog(h: &mut Html) {
    h.raw("<dialog id=\"shortcuts\" aria-labelledby=\"shortcuts-title\"><h2 id=\"shortcuts-title\">Keyboard shortcuts</h2><dl class=\"facts\">");
    for (keys, what) in SHORTCUTS {
        h.raw("<dt>");
        for (n, key) in keys.split(' ').enumerate() {
            if n > 0 {
                h.raw(" ");
            }
            h.el("kbd", &[], key);
        }
        h.raw("</dt>").el("dd", &[], what);
    }
    h.raw("</dl><p class=\"muted\">Shortcuts are off while typing in a field. Tab and Shift-Tab move between links and controls; Enter follows a link.</p>")
        .raw("<button type=\"button\" id=\"shortcuts-close\">Close</button></dialog>");
}

/// How often a page's live part refreshes (htmx's trigger).
pub const LIVE_TRIGGER: &str = "every 5s";

/// Opens the live part of a page: an element `id` that htmx fetches again from `refresh`
/// as [`LIVE_TRIGGER`] says and replaces with the element of the same id in the answer (the
/// whole page or just that part). Forms being typed into stay outside it; `assets/console.js`
/// skips a refresh while the tab is hidden or a field inside has the focus, and keeps the
/// focus on the same link across one. Close it with `h.close(tag)`.
pub fn live_open(h: &mut Html, tag: &'static str, id: &str, refresh: &str) {
    let select = format!("#{id}");
    h.open(
        tag,
        &[
            ("id", id),
            ("class", "live"),
            ("hx-get", refresh),
            ("hx-trigger", LIVE_TRIGGER),
            ("hx-select", &select),
            ("hx-swap", "outerHTML"),
        ],
    );
}

/// The hidden CSRF field every form carries.
pub fn csrf_field(h: &mut Html, csrf: &str) {
    h.open(
        "input",
        &[("type", "hidden"), ("name", "_csrf"), ("value", csrf)],
    );
}

/// The start of a form POSTing to `action`: the API's error of the last try, if any, then the
/// form with the session's CSRF token.
pub fn post_form(h: &mut Html, err: Option<&ApiError>, action: &str, csrf: &str) {
    if let Some(err) = err {
        error_box(h, err);
    }
    h.open("form", &[("method", "post"), ("action", action)]);
    csrf_field(h, csrf);
}

/// The end of a form: a Cancel link back to `back`.
pub fn cancel_form(h: &mut Html, back: &str) {
    h.el("a", &[("href", back)], "Cancel");
    h.close("form");
}

/// An API error as a message box: the code's name and the API's own message.
pub fn error_box(h: &mut Html, err: &ApiError) {
    h.open("div", &[("class", "error"), ("role", "alert")])
        .el("strong", &[], &format!("{:?}", err.code))
        .raw(": ")
        .text(&err.message)
        .close("div");
}

/// A filtered list's link to `page`: the non-empty `filters` as query parameters of `path`.
pub fn filtered_page_link(path: &str, filters: &[(&str, &str)], page: u32) -> String {
    let mut parts: Vec<String> = filters
        .iter()
        .filter(|(_, value)| !value.is_empty())
        .map(|(key, value)| format!("{key}={}", super::html::url_segment(value)))
        .collect();
    parts.push(format!("page={page}"));
    format!("{path}?{}", parts.join("&"))
}

/// The paging line under a list: `<total> <noun> · page <p> of <n>` and the links to the
/// neighbouring pages (`link(page)`), labelled `back` and `forward`. Every paged list of the
/// console (instances, an overview's workloads, the resource browser, audit, search) uses it.
pub fn page_nav(
    h: &mut Html,
    (total, page, pages): (u64, u32, u32),
    noun: &str,
    (back, forward): (&str, &str),
    link: impl Fn(u32) -> String,
) {
    h.open("nav", &[("class", "pager"), ("aria-label", "Pages")])
        .el(
            "span",
            &[("class", "total")],
            &format!("{total} {noun} · page {page} of {}", pages.max(1)),
        );
    if page > 1 {
        h.el("a", &[("href", &link(page - 1)), ("rel", "prev")], back);
    }
    if page < pages {
        h.el("a", &[("href", &link(page + 1)), ("rel", "next")], forward);
    }
    h.close("nav");
}

/// The answer to a live part's refresh whose read failed (the object was deleted, the
/// member went away): the same part holding the API's error, still refreshing, so the page
/// says what happened and recovers when the read succeeds again.
pub fn live_error(id: &str, refresh: &str, err: &ApiError) -> String {
    let mut h = Html::new();
    live_open(&mut h, "div", id, refresh);
    error_box(&mut h, err);
    h.close("div");
    h.finish()
}

/// A page of `head` (a heading, a filter form: what stays as typed) above `part`, or the
/// API's error in its place, which refreshes itself from `refresh` as [`live_open`] says.
pub fn live_page(
    viewer: &Viewer<'_>,
    title: &str,
    mut head: Html,
    (id, refresh): (&str, &str),
    part: Result<Html, ApiError>,
) -> String {
    live_open(&mut head, "div", id, refresh);
    match part {
        Ok(part) => head.append(part),
        Err(err) => {
            error_box(&mut head, &err);
            &mut head
        }
    };
    head.close("div");
    page(title, Some(viewer), head)
}

/// The labels of [`page_nav`]'s links on most lists.
pub const PREVIOUS_NEXT: (&str, &str) = ("← Previous", "Next →");

/// A notice box.
pub fn notice_box(h: &mut Html, text: &str) {
    h.el("div", &[("class", "notice"), ("role", "status")], text);
}

/// The sign-in page, with the OpenID Connect button when an issuer is configured.
pub fn signin_page(error: Option<&str>, oidc: bool) -> String {
    let mut h = Html::new();
    h.raw("<section class=\"card narrow\"><h1>Sign in</h1>");
    if let Some(e) = error {
        h.el("div", &[("class", "error"), ("role", "alert")], e);
    }
    if oidc {
        h.raw("<p><a id=\"oidc-signin\" class=\"button\" href=\"/ui/oidc/signin\">Sign in with your identity provider</a></p>")
            .raw("<p>Or paste a token:</p>");
    }
    h.raw("<p>Paste a bearer token the Kairship API accepts (a ServiceAccount token, an OIDC token, or one from the static token file). It is kept on the server; the browser only holds a session cookie.</p>");
    h.raw("<form method=\"post\" action=\"/ui/signin\">")
        .raw("<label>Token <textarea id=\"token\" name=\"token\" rows=\"4\" required autocomplete=\"off\" spellcheck=\"false\"></textarea></label>")
        .raw("<button id=\"signin\" type=\"submit\">Sign in</button></form></section>");
    page("Sign in", None, h)
}

/// A page saying what went wrong.
pub fn error_page(viewer: Option<&Viewer<'_>>, title: &str, err: &ApiError) -> String {
    let mut h = Html::new();
    h.el("h1", &[], title);
    error_box(&mut h, err);
    h.raw("<p><a href=\"/ui/instances\">Back to instances</a></p>");
    page(title, viewer, h)
}

pub(in crate::console) fn s<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}
pub(in crate::console) fn i(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}
pub(in crate::console) fn state_badge(h: &mut Html, state: &str) {
    let class = match state {
        "RUNNING" | "Ready" | "Healthy" => "badge ok",
        "INPROCESS" | "Unknown" => "badge wait",
        "UNKNOWN" => "badge muted",
        _ => "badge bad",
    };
    h.el("span", &[("class", class)], state);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn viewer() -> Viewer<'static> {
        Viewer {
            user: "alice",
            csrf: "c0ffee",
        }
    }

    #[test]
    fn the_skip_link_comes_first_and_leads_to_the_content() {
        for out in [
            page("P", Some(&viewer()), Html::new()),
            page("P", None, Html::new()),
        ] {
            let body = &out[out.find("<body").unwrap()..];
            let first_link = body.find("<a ").unwrap();
            assert!(
                body[first_link..].starts_with(
                    "<a class=\"skip-link\" id=\"skip-link\" href=\"#main\">Skip to content</a>"
                ),
                "{out}"
            );
            assert!(out.contains("<main id=\"main\" tabindex=\"-1\">"), "{out}");
        }
    }

    #[test]
    fn signed_in_pages_load_the_shortcuts_and_list_them() {
        let out = page("P", Some(&viewer()), Html::new());
        assert!(out.contains("<script src=\"/ui/assets/console.js\" defer></script>"));
        assert!(out.contains("id=\"search-name\""), "/ has a box to focus");
        let dialog = &out[out.find("<dialog id=\"shortcuts\"").unwrap()..];
        for (keys, what) in SHORTCUTS {
            let kbd: Vec<String> = keys.split(' ').map(|k| format!("<kbd>{k}</kbd>")).collect();
            assert!(dialog.contains(&kbd.join(" ")), "{keys}: {dialog}");
            assert!(dialog.contains(what), "{what}: {dialog}");
        }
        // No inline script anywhere: the CSP allows none.
        assert_eq!(out.matches("<script").count(), 2, "{out}");
        assert!(!out.contains("onclick") && !out.contains("onkeydown"));
    }

    #[test]
    fn live_parts_refresh_within_five_seconds_and_select_themselves() {
        let mut h = Html::new();
        live_open(&mut h, "section", "objects-live", "/ui/x?q=a%20b&page=2");
        h.close("section");
        let out = h.finish();
        assert_eq!(
            out,
            "<section id=\"objects-live\" class=\"live\" hx-get=\"/ui/x?q=a%20b&amp;page=2\" \
             hx-trigger=\"every 5s\" hx-select=\"#objects-live\" hx-swap=\"outerHTML\"></section>"
        );
        let err = live_error(
            "pod-live",
            "/ui/p",
            &ApiError::not_found("pods \"x\" not found"),
        );
        assert!(err.starts_with("<div id=\"pod-live\""), "{err}");
        assert!(
            err.contains("role=\"alert\"") && err.contains("not found"),
            "{err}"
        );
    }

    #[test]
    fn pagers_link_their_neighbours_only() {
        for ((total, page, pages), prev, next) in [
            ((0, 1, 0), false, false),
            ((120, 1, 3), false, true),
            ((120, 2, 3), true, true),
            ((120, 3, 3), true, false),
        ] {
            let mut h = Html::new();
            page_nav(&mut h, (total, page, pages), "hits", PREVIOUS_NEXT, |p| {
                format!("/ui/search?page={p}")
            });
            let out = h.finish();
            assert!(
                out.contains(&format!("{total} hits · page {page} of {}", pages.max(1))),
                "{out}"
            );
            let prev_link = format!("href=\"/ui/search?page={}\" rel=\"prev\"", page.max(2) - 1);
            assert_eq!(out.contains(&prev_link), prev, "{out}");
            let next_link = format!("href=\"/ui/search?page={}\" rel=\"next\"", page + 1);
            assert_eq!(out.contains(&next_link), next, "{out}");
        }
    }
}
