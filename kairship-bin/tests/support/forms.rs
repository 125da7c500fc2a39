//! Console forms sent without the browser: a POST with a session cookie, as a forger (or a
//! user without htmx) would send it, and the pieces of a form body.

use reqwest::StatusCode;

/// POSTs `form` (an `application/x-www-form-urlencoded` body) to the console page `url` with
/// the session cookie `cookie`: the answer's status and page.
pub async fn post_form(url: &str, cookie: &str, form: &str) -> (StatusCode, String) {
    let resp = reqwest::Client::new()
        .post(url)
        .header("cookie", format!("kairship_session={cookie}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.to_owned())
        .send()
        .await
        .unwrap();
    let status = resp.status();
    (status, resp.text().await.unwrap())
}

/// `s` percent-encoded as a form value (every byte but ASCII letters and digits).
pub fn form_value(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The value of the hidden `_csrf` field of a console page's HTML.
pub fn csrf_in(page: &str) -> String {
    let start = page
        .find("name=\"_csrf\" value=\"")
        .map(|i| i + "name=\"_csrf\" value=\"".len())
        .unwrap_or_else(|| panic!("no CSRF field in {page}"));
    let len = page[start..].find('"').unwrap();
    page[start..start + len].to_owned()
}
