//! The audit trail kept in the host cluster: a bounded queue drained by one writer task, a
//! rotation pass deleting what [`super::Retention`] no longer keeps, and queries answered by
//! listing the records.

use std::time::Duration;

use jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, Client};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    AuditQuery, AuditRecord, AuditRecordSpec, AuditSink, DOOR_LABEL, INSTANCE_LABEL, Retention,
    VERB_LABEL, expired, record_name,
};

/// Records waiting for the writer; beyond this, records are counted as dropped rather than
/// slowing the writes they describe.
const QUEUE: usize = 10_000;
/// How often the rotation pass runs.
const ROTATION_INTERVAL: Duration = Duration::from_secs(60);
/// Attempts to store one record before it is counted as dropped.
const ATTEMPTS: u32 = 3;

/// The audit trail in the host cluster. Cloning shares the queue.
#[derive(Clone)]
pub struct HostAuditLog {
    queue: mpsc::Sender<AuditRecordSpec>,
    counts: Counts,
    records: Api<AuditRecord>,
}

/// How many records were stored and dropped (queue full, or refused by the host cluster).
#[derive(Clone, Debug, Default)]
struct Counts {
    stored: Counter,
    dropped: Counter,
}

impl AuditSink for HostAuditLog {
    fn record(&self, record: AuditRecordSpec) {
        if self.queue.try_send(record).is_err() {
            self.counts.dropped.inc();
        }
    }
}

impl HostAuditLog {
    /// Starts the writer and the rotation pass on `client` (the host cluster), keeping the
    /// records in `namespace`; both stop when `shutdown` is cancelled, the writer after
    /// storing what is queued.
    pub fn start(
        client: Client,
        namespace: &str,
        retention: Retention,
        shutdown: CancellationToken,
    ) -> HostAuditLog {
        let (queue, receiver) = mpsc::channel(QUEUE);
        let counts = Counts::default();
        let api: Api<AuditRecord> = Api::namespaced(client, namespace);
        tokio::spawn(write_records(api.clone(), receiver, counts.clone()));
        tokio::spawn(rotate(api.clone(), retention, shutdown));
        HostAuditLog {
            queue,
            counts,
            records: api,
        }
    }

    /// Registers the stored and dropped counts as `kairship_audit_records_stored` and
    /// `kairship_audit_records_dropped`.
    pub fn register(&self, registry: &mut Registry) {
        let audit = registry.sub_registry_with_prefix("kairship_audit");
        audit.register(
            "records_stored",
            "Audit records stored in the host cluster",
            self.counts.stored.clone(),
        );
        audit.register(
            "records_dropped",
            "Audit records not kept: the queue was full or the host cluster refused them",
            self.counts.dropped.clone(),
        );
    }

    /// The stored records, for queries.
    pub fn records(&self) -> &Api<AuditRecord> {
        &self.records
    }

    /// Records that could not be kept (queue full or the host cluster refusing them).
    pub fn dropped(&self) -> u64 {
        self.counts.dropped.get()
    }

    /// Records stored so far.
    pub fn stored(&self) -> u64 {
        self.counts.stored.get()
    }
}

async fn write_records(
    api: Api<AuditRecord>,
    mut receiver: mpsc::Receiver<AuditRecordSpec>,
    counts: Counts,
) {
    while let Some(spec) = receiver.recv().await {
        if store(&api, spec).await {
            counts.stored.inc();
        } else {
            counts.dropped.inc();
        }
    }
}

/// Stores one record, retrying what may pass on a second try; false if it was not kept.
async fn store(api: &Api<AuditRecord>, spec: AuditRecordSpec) -> bool {
    let mut labels = std::collections::BTreeMap::new();
    for (key, value) in [
        (INSTANCE_LABEL, spec.instance.as_str()),
        (VERB_LABEL, spec.verb.as_str()),
        (DOOR_LABEL, spec.door.as_str()),
    ] {
        if !value.is_empty() && kube_kit::labels::is_label_value(value) {
            labels.insert(key.to_string(), value.to_string());
        }
    }
    let mut delay = Duration::from_millis(100);
    for attempt in 1..=ATTEMPTS {
        let record = AuditRecord {
            metadata: ObjectMeta {
                name: Some(record_name(&spec.time, random_suffix())),
                labels: Some(labels.clone()),
                ..ObjectMeta::default()
            },
            spec: spec.clone(),
        };
        match api.create(&PostParams::default(), &record).await {
            Ok(_) => return true,
            Err(kube::Error::Api(status))
                if status.code < 500 && status.code != 409 && status.code != 429 =>
            {
                tracing::warn!(code = status.code, reason = %status.reason, "the host cluster refused an audit record");
                return false;
            }
            Err(error) => {
                tracing::debug!(attempt, %error, "storing an audit record failed");
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
    }
    tracing::warn!("an audit record could not be stored after {ATTEMPTS} attempts");
    false
}

fn random_suffix() -> u32 {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 4];
    // A clock-based suffix if the system's randomness fails: names still differ in time.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        return Timestamp::now().subsec_nanosecond().unsigned_abs();
    }
    u32::from_le_bytes(bytes)
}

async fn rotate(api: Api<AuditRecord>, retention: Retention, shutdown: CancellationToken) {
    loop {
        if let Err(error) = rotate_once(&api, retention).await {
            tracing::debug!(%error, "audit rotation pass failed; next pass retries");
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(ROTATION_INTERVAL) => {}
        }
    }
}

/// One rotation pass: deletes every record [`expired`] names. Several API server replicas may
/// run it at once; a record already gone is not an error.
pub async fn rotate_once(
    api: &Api<AuditRecord>,
    retention: Retention,
) -> Result<usize, kube::Error> {
    let records = api.list(&ListParams::default()).await?;
    let pairs: Vec<(&str, &str)> = records
        .items
        .iter()
        .filter_map(|r| Some((r.metadata.name.as_deref()?, r.spec.time.as_str())))
        .collect();
    let doomed = expired(&pairs, retention, Timestamp::now());
    for name in &doomed {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    Ok(doomed.len())
}

/// A page of records, newest first.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditPage {
    /// The records of this page.
    pub records: Vec<AuditRecordSpec>,
    /// Pass as `continue_after` for the next page; absent on the last page.
    pub continue_after: Option<String>,
}

/// The records answering `query`, newest first: at most `limit`, after the record named
/// `continue_after` (a previous page's token).
pub async fn query(
    api: &Api<AuditRecord>,
    query: &AuditQuery,
    limit: usize,
    continue_after: Option<&str>,
) -> Result<AuditPage, kube::Error> {
    Ok(page(matching(api, query).await?, limit, continue_after))
}

/// Every stored record answering `query`, newest first, with its object name. The labels
/// narrow the list the host answers; [`AuditQuery::matches`] decides.
pub async fn matching(
    api: &Api<AuditRecord>,
    query: &AuditQuery,
) -> Result<Vec<(String, AuditRecordSpec)>, kube::Error> {
    let mut params = ListParams::default();
    let mut selector = Vec::new();
    if let Some(verb) = &query.verb
        && kube_kit::labels::is_label_value(verb)
    {
        selector.push(format!("{VERB_LABEL}={verb}"));
    }
    if let Some([instance]) = query.instances.as_deref()
        && kube_kit::labels::is_label_value(instance)
    {
        selector.push(format!("{INSTANCE_LABEL}={instance}"));
    }
    if let Some(door) = &query.door
        && kube_kit::labels::is_label_value(door)
    {
        selector.push(format!("{DOOR_LABEL}={door}"));
    }
    if !selector.is_empty() {
        params = params.labels(&selector.join(","));
    }
    let mut records: Vec<(String, AuditRecordSpec)> = api
        .list(&params)
        .await?
        .items
        .into_iter()
        .filter(|r| query.matches(&r.spec))
        .filter_map(|r| Some((r.metadata.name?, r.spec)))
        .collect();
    records.sort_by(|a, b| b.1.time.cmp(&a.1.time).then(b.0.cmp(&a.0)));
    Ok(records)
}

/// Cuts one page out of records sorted newest first.
fn page(
    records: Vec<(String, AuditRecordSpec)>,
    limit: usize,
    continue_after: Option<&str>,
) -> AuditPage {
    let start = match continue_after {
        Some(token) => records
            .iter()
            .position(|(name, _)| name.as_str() < token)
            .unwrap_or(records.len()),
        None => 0,
    };
    let limit = limit.max(1);
    let rest = records.len() - start;
    let mut taken: Vec<_> = records.into_iter().skip(start).take(limit).collect();
    let continue_after = if rest > limit {
        taken.last().map(|(name, _)| name.clone())
    } else {
        None
    };
    AuditPage {
        records: taken.drain(..).map(|(_, spec)| spec).collect(),
        continue_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditObject;

    fn named(name: &str) -> (String, AuditRecordSpec) {
        let spec = AuditRecordSpec {
            time: name.into(),
            user: "u".into(),
            groups: vec![],
            acting_as: "u".into(),
            instance: "k1".into(),
            door: "rest".into(),
            verb: "create".into(),
            object: AuditObject::default(),
            code: 201,
            message: None,
        };
        (name.to_string(), spec)
    }

    #[test]
    fn pages_walk_newest_first_without_gaps() {
        let records: Vec<_> = ["5", "4", "3", "2", "1"].into_iter().map(named).collect();
        let first = page(records.clone(), 2, None);
        assert_eq!(
            first
                .records
                .iter()
                .map(|r| r.time.as_str())
                .collect::<Vec<_>>(),
            ["5", "4"]
        );
        assert_eq!(first.continue_after.as_deref(), Some("4"));
        let second = page(records.clone(), 2, Some("4"));
        assert_eq!(
            second
                .records
                .iter()
                .map(|r| r.time.as_str())
                .collect::<Vec<_>>(),
            ["3", "2"]
        );
        let last = page(records.clone(), 2, Some("2"));
        assert_eq!(
            last.records
                .iter()
                .map(|r| r.time.as_str())
                .collect::<Vec<_>>(),
            ["1"]
        );
        assert_eq!(last.continue_after, None);
        assert_eq!(page(records, 10, None).continue_after, None);
    }
}
