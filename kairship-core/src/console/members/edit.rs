//! The edit form of a member cluster: its labels (add, change, remove), taints (key, value,
//! effect; rows added and removed), provider, region and zone in one form. The POST sends
//! `UpdateMember` with what changed against what the form was opened with (carried in the
//! form), so a field nobody touched is never rewritten; the API's refusal is shown above the
//! form as it was sent. The labels Kairship sets on a joined member are shown, not offered.
//!
//! Rows are added without a script: **Add a label** / **Add a taint** submit the form, which
//! comes back as sent with one more empty row and nothing called.

use std::collections::{BTreeMap, HashMap};

use axum::extract::{Path, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::detail::{labels_of, may_edit, member_path};
use crate::api::members::objects::{INSTANCE_LABEL, MEMBER_LABEL};
use crate::api::{ApiError, GetClusterRequest, MemberTaint, UpdateMemberRequest, cluster_zones};
use crate::console::html::Html;
use crate::console::page::{Viewer, notice_box, page, post_form, s};
use crate::console::request::{
    Shared, SignedForm, SignedIn, error_answer, forbidden, html, see_other, status_of,
};

/// The taint effects Karmada accepts, offered in the form.
pub const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// Labels Kairship sets on the Clusters it joins; the API refuses to change them.
const MANAGED_LABELS: [&str; 2] = [MEMBER_LABEL, INSTANCE_LABEL];

/// One label row of the form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelRow {
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
    /// Its "Remove" box is ticked.
    pub remove: bool,
}

/// One taint row of the form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaintRow {
    /// Key.
    pub key: String,
    /// Value (empty: none).
    pub value: String,
    /// Effect.
    pub effect: String,
    /// Its "Remove" box is ticked.
    pub remove: bool,
}

/// What the form was opened with: the member's editable labels, taints, provider, region and
/// zones. Carried in the form as JSON, so the POST changes only what the user changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Original {
    /// Labels, without the ones Kairship manages.
    pub labels: BTreeMap<String, String>,
    /// Taints.
    pub taints: Vec<MemberTaint>,
    /// Provider (`""`: none).
    pub provider: String,
    /// Region (`""`: none).
    pub region: String,
    /// Zones, comma-separated (`""`: none).
    pub zone: String,
}

impl Original {
    /// What `cluster` holds.
    pub fn of(cluster: &Value) -> Original {
        let labels = labels_of(cluster)
            .into_iter()
            .filter(|(k, _)| !MANAGED_LABELS.contains(k))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let taints = cluster
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| MemberTaint {
                key: s(t, "/key").unwrap_or_default().to_owned(),
                value: s(t, "/value").filter(|v| !v.is_empty()).map(str::to_owned),
                effect: s(t, "/effect").unwrap_or_default().to_owned(),
            })
            .collect();
        Original {
            labels,
            taints,
            provider: s(cluster, "/spec/provider").unwrap_or_default().to_owned(),
            region: s(cluster, "/spec/region").unwrap_or_default().to_owned(),
            zone: cluster_zones(cluster).join(", "),
        }
    }
}

/// The edit form, as shown or as posted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberEdit {
    /// Label rows.
    pub labels: Vec<LabelRow>,
    /// Taint rows.
    pub taints: Vec<TaintRow>,
    /// Provider.
    pub provider: String,
    /// Region.
    pub region: String,
    /// Zone.
    pub zone: String,
    /// What the form was opened with.
    pub original: Original,
    /// The labels Kairship manages, shown and never sent.
    pub managed: Vec<(String, String)>,
}

/// The numbered fields `<prefix><n>` of a form, by `n`.
fn numbered<'a>(fields: &'a HashMap<String, String>, prefix: &str) -> BTreeMap<u32, &'a str> {
    fields
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(prefix)?.parse().ok()?, v.as_str())))
        .collect()
}

impl MemberEdit {
    /// The form filled in with what `cluster` holds.
    pub fn of(cluster: &Value) -> MemberEdit {
        let original = Original::of(cluster);
        MemberEdit {
            labels: original
                .labels
                .iter()
                .map(|(k, v)| LabelRow {
                    key: k.clone(),
                    value: v.clone(),
                    remove: false,
                })
                .collect(),
            taints: original
                .taints
                .iter()
                .map(|t| TaintRow {
                    key: t.key.clone(),
                    value: t.value.clone().unwrap_or_default(),
                    effect: t.effect.clone(),
                    remove: false,
                })
                .collect(),
            provider: original.provider.clone(),
            region: original.region.clone(),
            zone: original.zone.clone(),
            managed: labels_of(cluster)
                .into_iter()
                .filter(|(k, _)| MANAGED_LABELS.contains(k))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            original,
        }
    }

    /// The form from posted fields (`label-key-<n>`, `label-value-<n>`, `label-remove-<n>`,
    /// `taint-key-<n>`, `taint-value-<n>`, `taint-effect-<n>`, `taint-remove-<n>`,
    /// `provider`, `region`, `zone`, and `original`: the JSON of [`Original`]). Rows left
    /// entirely empty are dropped.
    pub fn from_fields(fields: &HashMap<String, String>) -> MemberEdit {
        let field = |k: &str| {
            fields
                .get(k)
                .map(|v| v.trim().to_owned())
                .unwrap_or_default()
        };
        let ticked = |k: String| fields.get(&k).is_some_and(|v| v == "true");
        let label_values = numbered(fields, "label-value-");
        let labels = numbered(fields, "label-key-")
            .into_iter()
            .map(|(n, key)| LabelRow {
                key: key.trim().to_owned(),
                value: label_values.get(&n).map_or("", |v| v.trim()).to_owned(),
                remove: ticked(format!("label-remove-{n}")),
            })
            .filter(|r| !(r.key.is_empty() && r.value.is_empty()))
            .collect();
        let taint_values = numbered(fields, "taint-value-");
        let taint_effects = numbered(fields, "taint-effect-");
        let taints = numbered(fields, "taint-key-")
            .into_iter()
            .map(|(n, key)| TaintRow {
                key: key.trim().to_owned(),
                value: taint_values.get(&n).map_or("", |v| v.trim()).to_owned(),
                effect: taint_effects.get(&n).map_or("", |v| v.trim()).to_owned(),
                remove: ticked(format!("taint-remove-{n}")),
            })
            .filter(|r| !(r.key.is_empty() && r.value.is_empty()))
            .collect();
        let managed = serde_json::from_str::<Vec<(String, String)>>(
            fields.get("managed").map_or("", String::as_str),
        )
        .unwrap_or_default();
        MemberEdit {
            labels,
            taints,
            provider: field("provider"),
            region: field("region"),
            zone: field("zone"),
            original: serde_json::from_str(fields.get("original").map_or("", String::as_str))
                .unwrap_or_default(),
            managed,
        }
    }

    /// The `UpdateMember` call of what changed against [`Original`], or `None` when nothing
    /// did. Labels: the changed and new ones are set, the removed ones sent as `null`; taints:
    /// the whole list when it changed; provider, region, zone when changed (`""` clears).
    /// A key given twice is refused here (the call takes a map); every other check is the
    /// API's.
    pub fn request(
        &self,
        instance: &str,
        cluster: &str,
    ) -> Result<Option<UpdateMemberRequest>, ApiError> {
        let mut kept = BTreeMap::new();
        for row in self.labels.iter().filter(|r| !r.remove) {
            if kept.insert(row.key.clone(), row.value.clone()).is_some() {
                return Err(ApiError::invalid_field(
                    "labels",
                    format!("label {:?} is given twice", row.key),
                ));
            }
        }
        let mut labels: BTreeMap<String, Option<String>> = kept
            .iter()
            .filter(|(k, v)| self.original.labels.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        for key in self.original.labels.keys() {
            if !kept.contains_key(key) {
                labels.insert(key.clone(), None);
            }
        }
        let taints: Vec<MemberTaint> = self
            .taints
            .iter()
            .filter(|r| !r.remove)
            .map(|r| MemberTaint {
                key: r.key.clone(),
                value: (!r.value.is_empty()).then(|| r.value.clone()),
                effect: r.effect.clone(),
            })
            .collect();
        let changed = |now: &str, was: &str| (now != was).then(|| now.to_owned());
        let req = UpdateMemberRequest {
            instance: instance.to_owned(),
            cluster: cluster.to_owned(),
            labels: (!labels.is_empty()).then_some(labels),
            taints: (taints != self.original.taints).then_some(taints),
            provider: changed(&self.provider, &self.original.provider),
            region: changed(&self.region, &self.original.region),
            zone: changed(&self.zone, &self.original.zone),
        };
        let nothing = req.labels.is_none()
            && req.taints.is_none()
            && req.provider.is_none()
            && req.region.is_none()
            && req.zone.is_none();
        Ok((!nothing).then_some(req))
    }
}

fn text_input(h: &mut Html, name: &str, label: &str, value: &str) {
    h.open(
        "input",
        &[
            ("name", name),
            ("id", name),
            ("value", value),
            ("aria-label", label),
        ],
    );
}

fn remove_box(h: &mut Html, name: &str, label: &str, ticked: bool) {
    h.raw("<label class=\"inline\">");
    let mut attrs = vec![
        ("type", "checkbox"),
        ("name", name),
        ("id", name),
        ("value", "true"),
        ("aria-label", label),
    ];
    if ticked {
        attrs.push(("checked", ""));
    }
    h.open("input", &attrs).raw(" Remove</label>");
}

fn label_rows(h: &mut Html, rows: &[LabelRow], empty: usize) {
    h.raw("<table id=\"label-rows\" class=\"list\"><thead><tr><th>Key</th><th>Value</th><th></th></tr></thead><tbody>");
    let blank = LabelRow::default();
    let all = rows.iter().chain(std::iter::repeat_n(&blank, empty));
    for (n, row) in all.enumerate() {
        let at = n + 1;
        h.raw("<tr><td>");
        text_input(
            h,
            &format!("label-key-{n}"),
            &format!("Label {at} key"),
            &row.key,
        );
        h.raw("</td><td>");
        text_input(
            h,
            &format!("label-value-{n}"),
            &format!("Label {at} value"),
            &row.value,
        );
        h.raw("</td><td>");
        remove_box(
            h,
            &format!("label-remove-{n}"),
            &format!("Remove label {at}"),
            row.remove,
        );
        h.raw("</td></tr>");
    }
    h.raw("</tbody></table>");
}

fn effect_select(h: &mut Html, name: &str, label: &str, effect: &str) {
    h.open(
        "select",
        &[("name", name), ("id", name), ("aria-label", label)],
    );
    // An effect the API refused is kept as sent, so the form comes back unchanged.
    let unknown = (!effect.is_empty() && !EFFECTS.contains(&effect)).then_some(effect);
    for option in EFFECTS.iter().copied().chain(unknown) {
        let mut attrs = vec![("value", option)];
        if option == effect || (effect.is_empty() && option == EFFECTS[0]) {
            attrs.push(("selected", ""));
        }
        h.open("option", &attrs).text(option).close("option");
    }
    h.close("select");
}

fn taint_rows(h: &mut Html, rows: &[TaintRow], empty: usize) {
    h.raw("<table id=\"taint-rows\" class=\"list\"><thead><tr><th>Key</th><th>Value</th><th>Effect</th><th></th></tr></thead><tbody>");
    let blank = TaintRow::default();
    let all = rows.iter().chain(std::iter::repeat_n(&blank, empty));
    for (n, row) in all.enumerate() {
        let at = n + 1;
        h.raw("<tr><td>");
        text_input(
            h,
            &format!("taint-key-{n}"),
            &format!("Taint {at} key"),
            &row.key,
        );
        h.raw("</td><td>");
        text_input(
            h,
            &format!("taint-value-{n}"),
            &format!("Taint {at} value"),
            &row.value,
        );
        h.raw("</td><td>");
        effect_select(
            h,
            &format!("taint-effect-{n}"),
            &format!("Taint {at} effect"),
            &row.effect,
        );
        h.raw("</td><td>");
        remove_box(
            h,
            &format!("taint-remove-{n}"),
            &format!("Remove taint {at}"),
            row.remove,
        );
        h.raw("</td></tr>");
    }
    h.raw("</tbody></table>");
}

/// Empty rows offered under the filled ones: one, and one more per **Add** press.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmptyRows {
    /// Empty label rows.
    pub labels: usize,
    /// Empty taint rows.
    pub taints: usize,
}

impl Default for EmptyRows {
    fn default() -> Self {
        EmptyRows {
            labels: 1,
            taints: 1,
        }
    }
}

/// The edit page: the form (with the API's refusal above it), or, for who may not change
/// members, a notice.
pub fn edit_page(
    viewer: &Viewer<'_>,
    instance: &str,
    cluster: &str,
    form: &MemberEdit,
    empty: EmptyRows,
    err: Option<&ApiError>,
    can_edit: bool,
) -> String {
    let back = member_path(instance, cluster);
    let mut h = Html::new();
    h.open("p", &[("class", "crumbs")])
        .el("a", &[("href", &back)], cluster)
        .close("p");
    h.open("h1", &[])
        .raw("Edit member cluster ")
        .text(cluster)
        .close("h1");
    if !can_edit {
        notice_box(
            &mut h,
            "You may not change member clusters of this instance: ask for the edit role.",
        );
        return page(&format!("Edit {cluster}"), Some(viewer), h);
    }
    h.raw("<p>Labels and taints decide which workloads Karmada places on this member (cluster label selectors, tolerations); provider, region and zone are matched by placements too. Only what you change is sent.</p>");
    post_form(&mut h, err, &format!("{back}/edit"), viewer.csrf);
    let original = serde_json::to_string(&form.original).unwrap_or_default();
    h.open(
        "input",
        &[
            ("type", "hidden"),
            ("name", "original"),
            ("value", &original),
        ],
    );
    // Enter in a field submits with the form's first submit button: this one, so it saves
    // rather than adding a row.
    h.raw("<p><button id=\"save-top\" type=\"submit\">Save</button></p>");
    let managed = serde_json::to_string(&form.managed).unwrap_or_default();
    h.open(
        "input",
        &[("type", "hidden"), ("name", "managed"), ("value", &managed)],
    );
    h.raw("<h2>Labels</h2>");
    if !form.managed.is_empty() {
        h.raw("<p id=\"managed-labels\" class=\"muted\">Set by Kairship: ");
        for (k, v) in &form.managed {
            h.el("span", &[("class", "chip")], &format!("{k}={v}"));
        }
        h.raw("</p>");
    }
    label_rows(&mut h, &form.labels, empty.labels);
    h.raw("<p><button id=\"add-label\" type=\"submit\" name=\"add\" value=\"label\" formnovalidate>Add a label</button></p>");
    h.raw("<h2>Taints</h2>");
    taint_rows(&mut h, &form.taints, empty.taints);
    h.raw("<p><button id=\"add-taint\" type=\"submit\" name=\"add\" value=\"taint\" formnovalidate>Add a taint</button></p>");
    h.raw("<h2>Place</h2>");
    for (label, name, value) in [
        ("Provider", "provider", &form.provider),
        ("Region", "region", &form.region),
        ("Zone", "zone", &form.zone),
    ] {
        h.raw("<label>").text(label).raw(" ");
        h.open("input", &[("name", name), ("id", name), ("value", value)])
            .raw("</label>");
    }
    h.raw("<button id=\"save\" type=\"submit\">Save</button> ");
    h.el("a", &[("href", &back)], "Cancel");
    h.close("form");
    page(&format!("Edit {cluster}"), Some(viewer), h)
}

/// `GET …/members/{cluster}/edit`.
pub(in crate::console) async fn edit_form(
    State(console): State<Shared>,
    Path((instance, cluster)): Path<(String, String)>,
    signed: SignedIn,
) -> Response {
    if !may_edit(&console, &signed, &instance).await {
        return html(
            StatusCode::OK,
            edit_page(
                &signed.viewer(),
                &instance,
                &cluster,
                &MemberEdit::default(),
                EmptyRows::default(),
                None,
                false,
            ),
        );
    }
    let req = GetClusterRequest {
        instance: instance.clone(),
        cluster: cluster.clone(),
    };
    match console.api.get_cluster(&signed.caller, req).await {
        Ok(object) => html(
            StatusCode::OK,
            edit_page(
                &signed.viewer(),
                &instance,
                &cluster,
                &MemberEdit::of(&object),
                EmptyRows::default(),
                None,
                true,
            ),
        ),
        Err(err) => error_answer(&signed, &cluster, &err),
    }
}

/// `POST …/members/{cluster}/edit`: **Add** comes back with one more empty row; **Save**
/// calls `UpdateMember` and returns to the member's page, or shows the refusal above the
/// form as sent.
pub(in crate::console) async fn edit(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, cluster)): Path<(String, String)>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    if !may_edit(&console, &signed, &instance).await {
        return forbidden(&format!(
            "user {:?} may not change member clusters of instance {instance}",
            signed.caller.user
        ));
    }
    let form = MemberEdit::from_fields(&fields);
    let page_with = |empty: EmptyRows, err: Option<&ApiError>| {
        edit_page(
            &signed.viewer(),
            &instance,
            &cluster,
            &form,
            empty,
            err,
            true,
        )
    };
    match fields.get("add").map(String::as_str) {
        Some("label") => {
            let empty = EmptyRows {
                labels: 2,
                ..EmptyRows::default()
            };
            return html(StatusCode::OK, page_with(empty, None));
        }
        Some("taint") => {
            let empty = EmptyRows {
                taints: 2,
                ..EmptyRows::default()
            };
            return html(StatusCode::OK, page_with(empty, None));
        }
        _ => {}
    }
    let back = member_path(&instance, &cluster);
    let result = match form.request(&instance, &cluster) {
        Ok(Some(req)) => console
            .api
            .update_member(&signed.caller, req)
            .await
            .map(|_| ()),
        // Nothing changed: nothing to call.
        Ok(None) => Ok(()),
        Err(err) => Err(err),
    };
    match result {
        Ok(()) => see_other(&headers, &back),
        Err(err) => html(status_of(&err), page_with(EmptyRows::default(), Some(&err))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn viewer() -> Viewer<'static> {
        Viewer {
            user: "u",
            csrf: "c",
        }
    }

    fn cluster() -> Value {
        json!({
            "metadata": {"name": "east", "labels": {"env": "prod", "team": "blue", MEMBER_LABEL: "east"}},
            "spec": {"provider": "aws", "region": "eu", "zone": "eu-1a",
                     "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        })
    }

    fn unescape(v: &str) -> String {
        v.replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    }

    fn attr(tag: &str, name: &str) -> Option<String> {
        tag.split(&format!(" {name}=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .map(unescape)
    }

    /// The fields a browser posts from `page`'s edit form as shown: its inputs (ticked boxes
    /// only) and each select's selected option.
    fn fields_of(page: &str) -> HashMap<String, String> {
        let form = page
            .split("action=\"/ui/instances/i/members/east/edit\"")
            .nth(1)
            .unwrap();
        let mut fields = HashMap::new();
        for part in form.split("<input").skip(1) {
            let tag = part.split('>').next().unwrap();
            let Some(name) = attr(tag, "name") else {
                continue;
            };
            if attr(tag, "type").as_deref() == Some("checkbox") && !tag.contains(" checked") {
                continue;
            }
            fields.insert(name, attr(tag, "value").unwrap_or_default());
        }
        for part in form.split("<select").skip(1) {
            let name = attr(part.split('>').next().unwrap(), "name").unwrap();
            let select = part.split("</select>").next().unwrap();
            let chosen = select
                .split("<option")
                .find(|o| o.split('>').next().unwrap().contains(" selected"))
                .and_then(|o| attr(o, "value"))
                .unwrap();
            fields.insert(name, chosen);
        }
        fields
    }

    fn shown(form: &MemberEdit, err: Option<&ApiError>) -> String {
        edit_page(
            &viewer(),
            "i",
            "east",
            form,
            EmptyRows::default(),
            err,
            true,
        )
    }

    /// The fields the form of `cluster` posts as shown, with `changes` applied.
    fn posted(changes: &[(&str, &str)]) -> HashMap<String, String> {
        let mut fields = fields_of(&shown(&MemberEdit::of(&cluster()), None));
        for (k, v) in changes {
            fields.insert((*k).into(), (*v).into());
        }
        fields
    }

    #[test]
    fn the_form_shows_what_the_member_holds_but_not_kairships_labels() {
        let form = MemberEdit::of(&cluster());
        assert_eq!(
            form.labels
                .iter()
                .map(|r| r.key.as_str())
                .collect::<Vec<_>>(),
            ["env", "team"]
        );
        assert_eq!(form.zone, "eu-1a");
        assert_eq!(form.managed, [(MEMBER_LABEL.to_owned(), "east".to_owned())]);
        let page = edit_page(
            &viewer(),
            "i",
            "east",
            &form,
            EmptyRows::default(),
            None,
            true,
        );
        assert!(page.contains("id=\"label-key-2\""), "an empty row to add");
        assert!(!page.contains("id=\"label-key-3\""));
        assert!(page.contains("name=\"_csrf\" value=\"c\""));
        assert!(page.contains("kairship.io/member-cluster=east"));
        // The empty taint row offers the first effect, chosen.
        assert_eq!(fields_of(&page)["taint-effect-1"], "NoSchedule");
        assert_eq!(page.matches(" selected=\"\"").count(), 2);
    }

    #[test]
    fn only_what_changed_is_sent() {
        // The fields changed, and the call they make.
        type Case = (
            Vec<(&'static str, &'static str)>,
            Option<UpdateMemberRequest>,
        );
        let cases: Vec<Case> = vec![
            (vec![], None),
            (
                // Add tier=gold, remove env.
                vec![
                    ("label-key-2", "tier"),
                    ("label-value-2", "gold"),
                    ("label-remove-0", "true"),
                ],
                Some(UpdateMemberRequest {
                    labels: Some(BTreeMap::from([
                        ("env".to_owned(), None),
                        ("tier".to_owned(), Some("gold".to_owned())),
                    ])),
                    ..UpdateMemberRequest::default()
                }),
            ),
            (
                // A key emptied is a removal; a renamed key removes the old one.
                vec![
                    ("label-key-0", ""),
                    ("label-value-0", ""),
                    ("label-key-1", "squad"),
                ],
                Some(UpdateMemberRequest {
                    labels: Some(BTreeMap::from([
                        ("env".to_owned(), None),
                        ("squad".to_owned(), Some("blue".to_owned())),
                        ("team".to_owned(), None),
                    ])),
                    ..UpdateMemberRequest::default()
                }),
            ),
            (
                // A taint added: the whole list.
                vec![
                    ("taint-key-1", "spot"),
                    ("taint-effect-1", "PreferNoSchedule"),
                ],
                Some(UpdateMemberRequest {
                    taints: Some(vec![
                        MemberTaint {
                            key: "dedicated".into(),
                            value: Some("gpu".into()),
                            effect: "NoSchedule".into(),
                        },
                        MemberTaint {
                            key: "spot".into(),
                            value: None,
                            effect: "PreferNoSchedule".into(),
                        },
                    ]),
                    ..UpdateMemberRequest::default()
                }),
            ),
            (
                // Every taint removed: an empty list.
                vec![("taint-remove-0", "true")],
                Some(UpdateMemberRequest {
                    taints: Some(vec![]),
                    ..UpdateMemberRequest::default()
                }),
            ),
            (
                vec![("region", "us"), ("provider", "")],
                Some(UpdateMemberRequest {
                    provider: Some(String::new()),
                    region: Some("us".into()),
                    ..UpdateMemberRequest::default()
                }),
            ),
            (
                vec![("zone", "eu-1b")],
                Some(UpdateMemberRequest {
                    zone: Some("eu-1b".into()),
                    ..UpdateMemberRequest::default()
                }),
            ),
        ];
        for (changes, want) in cases {
            let form = MemberEdit::from_fields(&posted(&changes));
            let want = want.map(|w| UpdateMemberRequest {
                instance: "i".into(),
                cluster: "east".into(),
                ..w
            });
            assert_eq!(form.request("i", "east").unwrap(), want, "{changes:?}");
        }
    }

    #[test]
    fn a_key_given_twice_is_refused() {
        let form =
            MemberEdit::from_fields(&posted(&[("label-key-2", "env"), ("label-value-2", "dev")]));
        let err = form.request("i", "east").unwrap_err();
        assert!(err.message.contains("\"env\" is given twice"), "{err:?}");
    }

    #[test]
    fn a_refused_form_comes_back_as_sent() {
        let fields = posted(&[
            ("label-key-2", "bad key!"),
            ("label-value-2", "x"),
            ("taint-key-1", "t"),
            ("taint-effect-1", "Sometimes"),
        ]);
        let form = MemberEdit::from_fields(&fields);
        let err =
            ApiError::invalid_field("labels", "\"bad key!\" is not a valid label or taint key");
        let page = edit_page(
            &viewer(),
            "i",
            "east",
            &form,
            EmptyRows::default(),
            Some(&err),
            true,
        );
        let error_at = page.find("role=\"alert\"").unwrap();
        assert!(
            error_at
                < page
                    .find("action=\"/ui/instances/i/members/east/edit\"")
                    .unwrap()
        );
        assert!(page.contains("value=\"bad key!\""));
        assert!(page.contains("<option value=\"Sometimes\" selected=\"\">"));
        // Sent again as shown, it is the same form.
        assert_eq!(MemberEdit::from_fields(&fields_of(&page)), form);
    }

    #[test]
    fn who_may_not_edit_gets_a_notice_and_no_form() {
        let page = edit_page(
            &viewer(),
            "i",
            "east",
            &MemberEdit::default(),
            EmptyRows::default(),
            None,
            false,
        );
        assert!(page.contains("may not change member clusters"));
        assert!(!page.contains("<form method=\"post\" action=\"/ui/instances/i/members"));
    }
}
