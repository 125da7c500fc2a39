//! The propagation controllers of the emulated Karmada started together over shared
//! informers: the resource detector, the scheduler, the binding controllers, the namespace sync,
//! the execution, work status and binding status controllers. Each is queue-driven as Karmada's
//! are: a change enqueues the keys it affects (a template's binding, a Work's binding, a member
//! object's Work) and the next pass works on those keys only; a change that may affect any key
//! (a policy's, a Cluster's) and every `resync` make a pass over everything, so it recovers
//! from what the API server holds, never from memory.

use std::sync::Arc;
use std::time::Duration;

use kube::core::DynamicObject;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::informers::{Affected, Informer, Pending, Queue, run_passes};
use super::karmada::Karmada;
use super::objects::*;
use super::{binding, binding_status, detector, execution, namespace_sync, scheduler, work_status};

/// How often every controller runs without any change (as controller-runtime resyncs).
pub const RESYNC: Duration = Duration::from_secs(30);

/// How a controller learns which keys a change affects.
#[derive(Default)]
struct Watches<'a> {
    /// Whose changes enqueue the changed object's own `namespace/name`.
    keyed: Vec<&'a Informer>,
    /// Whose changes enqueue the keys found from the changed object.
    mapped: Vec<(&'a Informer, Affected)>,
    /// Whose changes may affect any key (they ask for everything).
    everything: Vec<&'a Informer>,
    /// How a change of a managed object in a member maps to keys, if it matters.
    members: Option<Affected>,
}

fn controller<F, Fut>(
    k: &Arc<Karmada>,
    name: &'static str,
    watches: Watches<'_>,
    pass: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(Arc<Karmada>, Pending) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<bool, String>> + Send,
{
    let wake = Arc::new(Notify::new());
    let queue = Arc::new(Queue::default());
    for i in watches.keyed {
        i.enqueue(&queue);
        i.wake(&wake);
    }
    for (i, affected) in watches.mapped {
        i.enqueue_mapped(&queue, affected);
        i.wake(&wake);
    }
    for i in watches.everything {
        i.enqueue_everything(&queue);
        i.wake(&wake);
    }
    if let Some(affected) = watches.members {
        k.members.enqueue_mapped(&queue, affected);
        k.members.wake(&wake);
    }
    let k = k.clone();
    tokio::spawn(async move {
        let shutdown = k.shutdown.clone();
        let taken = queue.clone();
        run_passes(name, wake, RESYNC, shutdown, queue, || {
            pass(k.clone(), taken.take())
        })
        .await;
    })
}

fn annotation_of<'a>(o: &'a DynamicObject, name: &str) -> Option<&'a str> {
    o.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(name))
        .map(String::as_str)
}

/// The binding a Work (or a member object) was made for, from its annotations.
/// A Work of no binding (a namespace's) affects none; one whose binding cannot be told,
/// any.
fn binding_of(o: &DynamicObject) -> Option<Vec<String>> {
    let labels = o.metadata.labels.as_ref();
    let of_binding =
        labels.is_some_and(|l| l.contains_key(RB_PERMANENT_ID) || l.contains_key(CRB_PERMANENT_ID));
    if let Some(name) = annotation_of(o, CRB_NAME) {
        return Some(vec![format!("/{name}")]);
    }
    match (annotation_of(o, RB_NAMESPACE), annotation_of(o, RB_NAME)) {
        (Some(ns), Some(name)) => Some(vec![format!("{ns}/{name}")]),
        _ if of_binding => None,
        _ => Some(Vec::new()),
    }
}

/// The Work a member object was applied from, from its annotations.
fn work_of(o: &DynamicObject) -> Option<Vec<String>> {
    match (
        annotation_of(o, WORK_NAMESPACE),
        annotation_of(o, WORK_NAME),
    ) {
        (Some(ns), Some(name)) => Some(vec![format!("{ns}/{name}")]),
        _ => None,
    }
}

/// The template a binding was made for.
fn template_of(o: &DynamicObject) -> Option<Vec<String>> {
    let resource = &o.data["spec"]["resource"];
    Some(vec![format!(
        "{}/{}",
        text(resource, "/namespace"),
        text(resource, "/name")
    )])
}

/// The binding a template of `kind` has (by its name, whether or not it exists yet).
fn binding_of_template(kind: &'static TemplateKind) -> Affected {
    Arc::new(move |o: &DynamicObject| {
        Some(vec![format!(
            "{}/{}",
            o.metadata.namespace.as_deref().unwrap_or_default(),
            binding_name(kind.kind, o.metadata.name.as_deref().unwrap_or_default())
        )])
    })
}

/// Starts the propagation controllers on `karmada` until `shutdown`; the handle ends when
/// they all stopped.
pub fn spawn(karmada: kube::Client, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let k = Karmada::start(karmada, shutdown);
        k.ready().await;
        let templates: Vec<&Informer> = k.templates.iter().map(|(_, i)| i).collect();
        let binding_of: Affected = Arc::new(binding_of);
        let to_bindings = || {
            let mut mapped: Vec<(&Informer, Affected)> = k
                .templates
                .iter()
                .map(|(kind, i)| (i, binding_of_template(kind)))
                .collect();
            mapped.push((&k.works, binding_of.clone()));
            mapped
        };
        let template_of: Affected = Arc::new(template_of);
        let handles = vec![
            // A template's change enqueues it, a binding's its template; a policy's may
            // select any template.
            controller(
                &k,
                "resource-detector",
                Watches {
                    keyed: templates.clone(),
                    mapped: vec![(&k.rbs, template_of.clone()), (&k.crbs, template_of)],
                    everything: vec![&k.pps, &k.cpps],
                    members: None,
                },
                |k, pending| async move { detector::pass(&k, &pending).await },
            ),
            controller(
                &k,
                "scheduler",
                Watches {
                    keyed: vec![&k.rbs, &k.crbs],
                    everything: vec![&k.clusters],
                    ..Watches::default()
                },
                |k, pending| async move { scheduler::pass(&k, &pending).await },
            ),
            // A binding's change enqueues it, its template's and its Works' too; an override
            // policy's or a Cluster's may affect any binding.
            controller(
                &k,
                "binding-controller",
                Watches {
                    keyed: vec![&k.rbs, &k.crbs],
                    mapped: to_bindings(),
                    everything: vec![&k.ops, &k.cops, &k.clusters],
                    members: None,
                },
                |k, pending| async move { binding::pass(&k, &pending).await },
            ),
            controller(
                &k,
                "namespace-sync-controller",
                Watches {
                    everything: vec![&k.namespaces, &k.clusters, &k.works],
                    ..Watches::default()
                },
                |k, _| async move { namespace_sync::pass(&k).await },
            ),
            // A Work's change enqueues that Work; a Cluster's may affect any of its Works.
            controller(
                &k,
                "execution-controller",
                Watches {
                    keyed: vec![&k.works],
                    everything: vec![&k.clusters],
                    ..Watches::default()
                },
                |k, pending| async move { execution::pass(&k, &pending).await },
            ),
            // A Work's change enqueues it, and so does a change of what it applied.
            controller(
                &k,
                "work-status-controller",
                Watches {
                    keyed: vec![&k.works],
                    everything: vec![&k.clusters],
                    members: Some(Arc::new(work_of)),
                    ..Watches::default()
                },
                |k, pending| async move { work_status::pass(&k, &pending).await },
            ),
            controller(
                &k,
                "resource-binding-status-controller",
                Watches {
                    keyed: vec![&k.rbs, &k.crbs],
                    mapped: to_bindings(),
                    ..Watches::default()
                },
                |k, pending| async move { binding_status::pass(&k, &pending).await },
            ),
        ];
        for h in handles {
            let _ = h.await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(v: serde_json::Value) -> DynamicObject {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_change_enqueues_the_keys_it_affects() {
        let rb_work = object(serde_json::json!({"metadata": {"name": "w",
            "labels": {RB_PERMANENT_ID: "i"},
            "annotations": {RB_NAMESPACE: "ns", RB_NAME: "web-deployment"}}}));
        let crb_work = object(serde_json::json!({"metadata": {"name": "w",
            "labels": {CRB_PERMANENT_ID: "i"}, "annotations": {CRB_NAME: "r-clusterrole"}}}));
        let namespace_work = object(serde_json::json!({"metadata": {"name": "w"}}));
        let unnamed_binding_work = object(
            serde_json::json!({"metadata": {"name": "w", "labels": {RB_PERMANENT_ID: "i"}}}),
        );
        type Keys = Option<Vec<String>>;
        let cases: Vec<(&str, Keys, Keys)> = vec![
            (
                "a Work its binding",
                binding_of(&rb_work),
                Some(vec!["ns/web-deployment".into()]),
            ),
            (
                "a cluster-scoped binding's Work",
                binding_of(&crb_work),
                Some(vec!["/r-clusterrole".into()]),
            ),
            (
                "a namespace's Work no binding",
                binding_of(&namespace_work),
                Some(vec![]),
            ),
            (
                "a Work of an unnamed binding everything",
                binding_of(&unnamed_binding_work),
                None,
            ),
        ];
        for (what, got, want) in cases {
            assert_eq!(got, want, "{what}");
        }
        let member = object(
            serde_json::json!({"metadata": {"name": "web", "namespace": "ns",
            "annotations": {WORK_NAMESPACE: "karmada-es-m1", WORK_NAME: "web-123"}}}),
        );
        assert_eq!(
            work_of(&member),
            Some(vec!["karmada-es-m1/web-123".to_owned()])
        );
        assert_eq!(work_of(&namespace_work), None);
        let binding = object(
            serde_json::json!({"metadata": {"name": "web-deployment", "namespace": "ns"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "web"}}}),
        );
        assert_eq!(template_of(&binding), Some(vec!["ns/web".to_owned()]));
        let deployment = TEMPLATE_KINDS
            .iter()
            .find(|t| t.kind == "Deployment")
            .unwrap_or_else(|| panic!("no Deployment kind"));
        let template = object(serde_json::json!({"metadata": {"name": "web", "namespace": "ns"}}));
        assert_eq!(
            binding_of_template(deployment)(&template),
            Some(vec!["ns/web-deployment".to_owned()])
        );
    }
}
