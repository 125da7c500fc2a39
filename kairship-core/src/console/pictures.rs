//! Pictures where people look rather than read: where a workload runs across the member
//! clusters, drawn as inline SVG with the numbers in its text alternative (`<title>` of every
//! bar, `aria-label` of the whole), so a screen reader, and a test, reads what the eye sees.
//! Plain functions of what the API answered; every value is escaped by [`Html`]. Colours are
//! SVG presentation attributes, not styles, so the strict Content-Security-Policy holds.

use serde_json::Value;

use super::html::Html;
use crate::api::workloads::view::member_numbers;
use crate::api::{ClusterWorkloadStatus, Workload};

/// How one member cluster fares, as its bar shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterBar {
    /// Member cluster name.
    pub cluster: String,
    /// Replicas the cluster was given (the binding's `spec.clusters[].replicas`; for a
    /// DaemonSet, the nodes the member schedules to); `None` for an object that goes whole.
    pub scheduled: Option<i64>,
    /// Replicas ready there, as the member reports them (`None`: nothing reported).
    pub ready: Option<i64>,
    /// The member's health of the object (`aggregatedStatus[].health`).
    pub health: Health,
    /// `false` for a cluster the policy could use that got nothing: drawn empty.
    pub placed: bool,
}

/// Health as Karmada reports it per cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    /// `Healthy`.
    Healthy,
    /// `Unhealthy`.
    Unhealthy,
    /// `Unknown`, or not reported yet.
    Unknown,
}

impl Health {
    /// The health Karmada wrote (`Healthy`, `Unhealthy`, `Unknown` or nothing).
    pub fn parse(text: Option<&str>) -> Health {
        match text {
            Some("Healthy") => Health::Healthy,
            Some("Unhealthy") => Health::Unhealthy,
            _ => Health::Unknown,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::Unhealthy => "unhealthy",
            Health::Unknown => "health unknown",
        }
    }
}

/// What a bar's colour says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shade {
    /// Healthy, every scheduled replica ready.
    Ok,
    /// Healthy so far, replicas still coming up.
    Progressing,
    /// Unhealthy.
    Bad,
    /// Nothing known yet.
    Unknown,
    /// Given nothing.
    Empty,
}

impl Shade {
    /// The fill of the ready part (chosen to read on light and dark backgrounds).
    pub fn fill(self) -> &'static str {
        match self {
            Shade::Ok => "#2e7d32",
            Shade::Progressing => "#c77c02",
            Shade::Bad => "#c62828",
            Shade::Unknown | Shade::Empty => "#8a8a8a",
        }
    }

    fn class(self) -> &'static str {
        match self {
            Shade::Ok => "bar ok",
            Shade::Progressing => "bar wait",
            Shade::Bad => "bar bad",
            Shade::Unknown => "bar unknown",
            Shade::Empty => "bar empty",
        }
    }
}

impl ClusterBar {
    /// The colour of the bar: by health, and whether the ready replicas reached the scheduled.
    pub fn shade(&self) -> Shade {
        if !self.placed {
            return Shade::Empty;
        }
        match self.health {
            Health::Unhealthy => Shade::Bad,
            Health::Unknown => Shade::Unknown,
            Health::Healthy => match (self.scheduled, self.ready) {
                (Some(want), Some(ready)) if ready < want => Shade::Progressing,
                (Some(want), None) if want > 0 => Shade::Progressing,
                _ => Shade::Ok,
            },
        }
    }

    /// The bar in words: `a-east: 2 of 3 ready, healthy`.
    pub fn describe(&self) -> String {
        if !self.placed {
            return format!("{}: none scheduled", self.cluster);
        }
        let count = match (self.scheduled, self.ready) {
            (Some(want), ready) => format!("{} of {want} ready", ready.unwrap_or(0)),
            (None, Some(ready)) => format!("{ready} ready"),
            (None, None) => "placed whole".to_owned(),
        };
        format!("{}: {count}, {}", self.cluster, self.health.word())
    }
}

/// Bars of a workload joined with its binding (the API's [`Workload`]): one per cluster it
/// was scheduled to or reports from, then one empty bar per name of `unplaced`.
pub fn workload_bars(w: &Workload, unplaced: &[String]) -> Vec<ClusterBar> {
    let daemonset = w.deployment.pointer("/kind").and_then(Value::as_str) == Some("DaemonSet");
    let mut bars: Vec<ClusterBar> = w
        .clusters
        .iter()
        .map(|c: &ClusterWorkloadStatus| ClusterBar {
            cluster: c.cluster.clone(),
            // A DaemonSet is not divided: each member wants its own nodes.
            scheduled: if daemonset {
                c.replicas.map(i64::from)
            } else {
                c.scheduled_replicas.map(i64::from)
            },
            ready: c.ready_replicas.map(i64::from),
            health: Health::parse(c.health.as_deref()),
            placed: true,
        })
        .collect();
    add_unplaced(&mut bars, unplaced);
    bars
}

/// Bars of any object's binding (a ResourceBinding or ClusterResourceBinding as JSON): the
/// clusters of `spec.clusters` and `status.aggregatedStatus`, the ready replicas read from
/// each member's status as the workload kind reports them; then the `unplaced` ones.
pub fn binding_bars(binding: &Value, unplaced: &[String]) -> Vec<ClusterBar> {
    let kind = binding
        .pointer("/spec/resource/kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let scheduled: Vec<&Value> = binding
        .pointer("/spec/clusters")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let aggregated: Vec<&Value> = binding
        .pointer("/status/aggregatedStatus")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let mut names: Vec<&str> = Vec::new();
    for name in scheduled
        .iter()
        .filter_map(|c| c["name"].as_str())
        .chain(aggregated.iter().filter_map(|a| a["clusterName"].as_str()))
    {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let workload = matches!(kind, "Deployment" | "StatefulSet" | "DaemonSet" | "Job");
    let mut bars: Vec<ClusterBar> = names
        .into_iter()
        .map(|name| {
            let spec = scheduled.iter().find(|c| c["name"] == name);
            let status = aggregated.iter().find(|a| a["clusterName"] == name);
            let [replicas, ready, _, _] = status
                .filter(|_| workload)
                .map(|s| member_numbers(kind, &s["status"]))
                .unwrap_or_default();
            let scheduled = match kind {
                "DaemonSet" => replicas.map(i64::from),
                _ => spec.and_then(|c| c["replicas"].as_i64()),
            };
            ClusterBar {
                cluster: name.to_owned(),
                scheduled,
                ready: ready.map(i64::from),
                health: Health::parse(status.and_then(|s| s["health"].as_str())),
                placed: true,
            }
        })
        .collect();
    add_unplaced(&mut bars, unplaced);
    bars
}

fn add_unplaced(bars: &mut Vec<ClusterBar>, unplaced: &[String]) {
    for name in unplaced {
        if !bars.iter().any(|b| &b.cluster == name) {
            bars.push(ClusterBar {
                cluster: name.clone(),
                scheduled: None,
                ready: None,
                health: Health::Unknown,
                placed: false,
            });
        }
    }
}

/// Width of the drawing, in SVG units (it scales to its box).
const WIDTH: i64 = 480;
/// Room for the cluster names, left of the bars.
const LABEL: i64 = 130;
/// Room for the numbers, right of the bars.
const NUMBERS: i64 = 70;
/// Height of one bar's row.
const ROW: i64 = 24;

/// The placement picture (`<figure id="{id}">`): one bar per member cluster, its length the
/// replicas scheduled there (the longest bar the most), the filled part the replicas ready,
/// coloured by health; a cluster given nothing is an empty outline. Each bar carries its
/// numbers as `data-` attributes and `<title>`, the figure sums them up in `aria-label`.
pub fn placement_picture(id: &str, bars: &[ClusterBar]) -> Html {
    let mut h = Html::with_capacity(512 + bars.len() * 512);
    let summary = if bars.is_empty() {
        "Placement: not propagated to any member cluster".to_owned()
    } else {
        format!(
            "Placement: {}",
            bars.iter()
                .map(ClusterBar::describe)
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    h.open("figure", &[("id", id), ("class", "placement-picture")]);
    if bars.is_empty() {
        h.el(
            "p",
            &[("class", "muted")],
            "Not propagated to any member cluster.",
        )
        .close("figure");
        return h;
    }
    let height = (ROW * i64::try_from(bars.len()).unwrap_or(i64::MAX / ROW)).max(ROW);
    let view_box = format!("0 0 {WIDTH} {height}");
    let pixels_high = height.to_string();
    h.open(
        "svg",
        &[
            ("xmlns", "http://www.w3.org/2000/svg"),
            ("role", "img"),
            ("aria-label", &summary),
            ("viewBox", &view_box),
            ("width", "100%"),
            ("height", &pixels_high),
            ("preserveAspectRatio", "xMinYMin meet"),
        ],
    );
    h.el("title", &[], &summary);
    // Bars are as long as their share of the most replicas any cluster got; an object that
    // goes whole, or a cluster that reported nothing, gets a full-length track.
    let most = bars
        .iter()
        .filter_map(|b| b.scheduled.or(b.ready))
        .max()
        .unwrap_or(0)
        .max(1);
    let track_max = WIDTH - LABEL - NUMBERS;
    for (row, bar) in bars.iter().enumerate() {
        let y = ROW * i64::try_from(row).unwrap_or(0);
        let units = bar.scheduled.or(bar.ready);
        let track = match units {
            Some(n) if bar.placed => (track_max * n.clamp(0, most) / most).max(2),
            _ => track_max,
        };
        let filled = match (units, bar.ready) {
            (Some(_), Some(ready)) => track_max * ready.clamp(0, most) / most,
            (None, _) if bar.placed && bar.health == Health::Healthy => track,
            _ => 0,
        }
        .min(track);
        let scheduled = bar.scheduled.map(|n| n.to_string()).unwrap_or_default();
        let ready = bar.ready.map(|n| n.to_string()).unwrap_or_default();
        let shade = bar.shade();
        h.open(
            "g",
            &[
                ("class", shade.class()),
                ("data-cluster", &bar.cluster),
                ("data-scheduled", &scheduled),
                ("data-ready", &ready),
                ("data-placed", if bar.placed { "true" } else { "false" }),
            ],
        );
        h.el("title", &[], &bar.describe());
        let text_y = (y + ROW * 2 / 3).to_string();
        h.open(
            "text",
            &[
                ("x", "0"),
                ("y", &text_y),
                ("font-size", "12"),
                ("fill", "currentColor"),
            ],
        )
        .text(&short(&bar.cluster))
        .close("text");
        let (bar_y, bar_h) = ((y + 4).to_string(), (ROW - 8).to_string());
        let (label, track_w) = (LABEL.to_string(), track.to_string());
        let mut outline = vec![
            ("x", label.as_str()),
            ("y", bar_y.as_str()),
            ("width", track_w.as_str()),
            ("height", bar_h.as_str()),
            ("rx", "3"),
            ("fill", "none"),
            ("stroke", "#8a8a8a"),
        ];
        if !bar.placed {
            outline.push(("stroke-dasharray", "4 3"));
        }
        h.open("rect", &outline).close("rect");
        if filled > 0 {
            let filled_w = filled.to_string();
            h.open(
                "rect",
                &[
                    ("x", &label),
                    ("y", &bar_y),
                    ("width", &filled_w),
                    ("height", &bar_h),
                    ("rx", "3"),
                    ("fill", shade.fill()),
                ],
            )
            .close("rect");
        }
        let numbers = match (bar.placed, bar.scheduled, bar.ready) {
            (false, _, _) => "none".to_owned(),
            (true, Some(want), ready) => format!("{}/{want}", ready.unwrap_or(0)),
            (true, None, Some(ready)) => ready.to_string(),
            (true, None, None) => "whole".to_owned(),
        };
        let numbers_x = (WIDTH - NUMBERS + 8).to_string();
        h.open(
            "text",
            &[
                ("x", &numbers_x),
                ("y", &text_y),
                ("font-size", "12"),
                ("fill", "currentColor"),
            ],
        )
        .text(&numbers)
        .close("text");
        h.close("g");
    }
    h.close("svg");
    h.el("figcaption", &[("class", "muted")], &legend(bars));
    h.close("figure");
    h
}

/// A cluster's name as the picture labels it: at most 18 characters (the `<title>` has it
/// whole).
fn short(name: &str) -> String {
    const MAX: usize = 18;
    if name.chars().count() <= MAX {
        name.to_owned()
    } else {
        name.chars().take(MAX - 1).collect::<String>() + "…"
    }
}

/// The caption: ready and scheduled replicas over all clusters.
fn legend(bars: &[ClusterBar]) -> String {
    let placed: Vec<&ClusterBar> = bars.iter().filter(|b| b.placed).collect();
    let want: i64 = placed.iter().filter_map(|b| b.scheduled).sum();
    let ready: i64 = placed.iter().filter_map(|b| b.ready).sum();
    let empty = bars.len() - placed.len();
    let mut text = format!(
        "{} member cluster{}",
        placed.len(),
        if placed.len() == 1 { "" } else { "s" }
    );
    if placed.iter().any(|b| b.scheduled.is_some()) {
        text.push_str(&format!(", {ready} of {want} ready"));
    }
    if empty > 0 {
        text.push_str(&format!(
            "; {empty} more the policy could use got none (dashed)"
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bar(
        cluster: &str,
        scheduled: Option<i64>,
        ready: Option<i64>,
        health: Health,
    ) -> ClusterBar {
        ClusterBar {
            cluster: cluster.into(),
            scheduled,
            ready,
            health,
            placed: true,
        }
    }

    #[test]
    fn shade_and_words_table() {
        let empty = ClusterBar {
            placed: false,
            ..bar("spare", None, None, Health::Unknown)
        };
        for (b, shade, words) in [
            (
                bar("a", Some(2), Some(2), Health::Healthy),
                Shade::Ok,
                "a: 2 of 2 ready, healthy",
            ),
            (
                bar("a", Some(3), Some(1), Health::Healthy),
                Shade::Progressing,
                "a: 1 of 3 ready, healthy",
            ),
            (
                bar("a", Some(3), None, Health::Healthy),
                Shade::Progressing,
                "a: 0 of 3 ready, healthy",
            ),
            (
                bar("a", Some(1), Some(1), Health::Unhealthy),
                Shade::Bad,
                "a: 1 of 1 ready, unhealthy",
            ),
            (
                bar("a", None, None, Health::Unknown),
                Shade::Unknown,
                "a: placed whole, health unknown",
            ),
            (
                bar("a", None, Some(3), Health::Healthy),
                Shade::Ok,
                "a: 3 ready, healthy",
            ),
            (empty, Shade::Empty, "spare: none scheduled"),
        ] {
            assert_eq!(b.shade(), shade, "{b:?}");
            assert_eq!(b.describe(), words, "{b:?}");
        }
        assert_eq!(Health::parse(Some("Healthy")), Health::Healthy);
        assert_eq!(Health::parse(Some("Unhealthy")), Health::Unhealthy);
        assert_eq!(Health::parse(None), Health::Unknown);
    }

    #[test]
    fn the_picture_draws_each_cluster_to_scale_with_its_numbers() {
        let bars = vec![
            bar("a-east", Some(2), Some(2), Health::Healthy),
            bar("a-west", Some(1), Some(0), Health::Healthy),
            ClusterBar {
                placed: false,
                ..bar("spare", None, None, Health::Unknown)
            },
        ];
        let out = placement_picture("placement-picture", &bars).finish();
        for want in [
            "role=\"img\"",
            "aria-label=\"Placement: a-east: 2 of 2 ready, healthy; a-west: 0 of 1 ready, healthy; spare: none scheduled\"",
            "<title>a-east: 2 of 2 ready, healthy</title>",
            "data-cluster=\"a-west\" data-scheduled=\"1\" data-ready=\"0\"",
            "data-cluster=\"spare\" data-scheduled=\"\" data-ready=\"\" data-placed=\"false\"",
            "stroke-dasharray",
            ">2/2</text>",
            ">0/1</text>",
            ">none</text>",
        ] {
            assert!(out.contains(want), "{want} in {out}");
        }
        // a-east's track (2 replicas, the most) is the full length; a-west's half of it.
        let full = (WIDTH - LABEL - NUMBERS).to_string();
        let half = ((WIDTH - LABEL - NUMBERS) / 2).to_string();
        assert!(out.contains(&format!("width=\"{full}\"")), "{out}");
        assert!(out.contains(&format!("width=\"{half}\"")), "{out}");
        assert!(
            out.contains("2 member clusters, 2 of 3 ready; 1 more"),
            "{out}"
        );
        let none = placement_picture("p", &[]).finish();
        assert!(
            none.contains("Not propagated") && !none.contains("<svg"),
            "{none}"
        );
    }

    #[test]
    fn names_and_messages_never_become_markup() {
        let evil = "<script>alert(1)</script>";
        let out = placement_picture("p", &[bar(evil, Some(1), Some(1), Health::Healthy)]).finish();
        assert!(!out.contains("<script"), "{out}");
        assert!(out.contains("&lt;script&gt;"), "{out}");
    }

    #[test]
    fn bars_of_a_binding_follow_the_kind() {
        let binding = json!({"spec": {"resource": {"kind": "StatefulSet", "name": "db"},
            "clusters": [{"name": "a-east", "replicas": 2}, {"name": "a-west", "replicas": 1}]},
            "status": {"aggregatedStatus": [
                {"clusterName": "a-east", "health": "Healthy", "status": {"replicas": 2, "readyReplicas": 2}},
                {"clusterName": "a-west", "health": "Unhealthy", "status": {"replicas": 1, "readyReplicas": 0}}]}});
        let bars = binding_bars(&binding, &["a-west".into(), "spare".into()]);
        assert_eq!(
            bars,
            vec![
                bar("a-east", Some(2), Some(2), Health::Healthy),
                bar("a-west", Some(1), Some(0), Health::Unhealthy),
                ClusterBar {
                    placed: false,
                    ..bar("spare", None, None, Health::Unknown)
                },
            ]
        );
        let daemonset = json!({"spec": {"resource": {"kind": "DaemonSet", "name": "agent"},
            "clusters": [{"name": "a-east"}]},
            "status": {"aggregatedStatus": [{"clusterName": "a-east", "health": "Healthy",
                "status": {"desiredNumberScheduled": 3, "numberReady": 2}}]}});
        assert_eq!(
            binding_bars(&daemonset, &[]),
            vec![bar("a-east", Some(3), Some(2), Health::Healthy)]
        );
        let config_map = json!({"spec": {"resource": {"kind": "ConfigMap", "name": "c"},
            "clusters": [{"name": "a-east"}]},
            "status": {"aggregatedStatus": [{"clusterName": "a-east", "health": "Healthy",
                "status": {"replicas": 9}}]}});
        assert_eq!(
            binding_bars(&config_map, &[]),
            vec![bar("a-east", None, None, Health::Healthy)]
        );
    }

    #[test]
    fn bars_of_a_workload_use_the_joined_status() {
        let w = Workload {
            clusters: vec![ClusterWorkloadStatus {
                cluster: "a-east".into(),
                scheduled_replicas: Some(3),
                replicas: Some(3),
                ready_replicas: Some(1),
                health: Some("Healthy".into()),
                ..Default::default()
            }],
            deployment: json!({"kind": "StatefulSet"}),
            ..Default::default()
        };
        assert_eq!(
            workload_bars(&w, &["a-east".into(), "a-west".into()]),
            vec![
                bar("a-east", Some(3), Some(1), Health::Healthy),
                ClusterBar {
                    placed: false,
                    ..bar("a-west", None, None, Health::Unknown)
                },
            ]
        );
        let ds = Workload {
            clusters: vec![ClusterWorkloadStatus {
                cluster: "a-east".into(),
                replicas: Some(3),
                ready_replicas: Some(3),
                health: Some("Healthy".into()),
                ..Default::default()
            }],
            deployment: json!({"kind": "DaemonSet"}),
            ..Default::default()
        };
        assert_eq!(
            workload_bars(&ds, &[]),
            vec![bar("a-east", Some(3), Some(3), Health::Healthy)]
        );
    }
}
