//! Writing an Instance's status: each controller changes only its own fields through a
//! read-modify-write guarded by `resourceVersion`, and nothing is written when the result is
//! what is stored already.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::Api;
use kube::api::PostParams;
use kube_kit::client::is_not_found;

use super::Error;
use crate::instance::{Instance, InstanceStatus};

/// Attempts before a status write that keeps conflicting gives up.
const MAX_CONFLICT_RETRIES: usize = 5;

/// Sets the condition `type_` in `conditions`, keeping its `lastTransitionTime` when the
/// status did not change. Returns whether anything changed.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
    now: jiff::Timestamp,
) -> bool {
    let status_text = if status { "True" } else { "False" };
    if let Some(existing) = conditions.iter_mut().find(|c| c.type_ == type_) {
        let same = existing.status == status_text
            && existing.reason == reason
            && existing.message == message
            && existing.observed_generation == observed_generation;
        if same {
            return false;
        }
        if existing.status != status_text {
            existing.last_transition_time = Time(now);
        }
        existing.status = status_text.to_owned();
        existing.reason = reason.to_owned();
        existing.message = message.to_owned();
        existing.observed_generation = observed_generation;
        return true;
    }
    conditions.push(Condition {
        type_: type_.to_owned(),
        status: status_text.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        observed_generation,
        last_transition_time: Time(now),
    });
    true
}

/// Removes the condition `type_`; returns whether it was present.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// Reads the Instance `name`, applies `mutate` to a copy of its status and writes it back if it
/// changed, retrying on conflicts. Returns `Ok(true)` when a write was issued, `Ok(false)` when
/// the status already matched or the Instance is gone.
pub async fn update_status(
    api: &Api<Instance>,
    name: &str,
    mutate: impl Fn(&Instance, &mut InstanceStatus),
) -> Result<bool, Error> {
    for _ in 0..MAX_CONFLICT_RETRIES {
        let Some(mut instance) = api
            .get_opt(name)
            .await
            .map_err(Error::kube("read Instance", name))?
        else {
            return Ok(false);
        };
        let mut status = instance.status.clone().unwrap_or_default();
        mutate(&instance, &mut status);
        if instance.status.as_ref() == Some(&status) {
            return Ok(false);
        }
        instance.status = Some(status);
        match api
            .replace_status(name, &PostParams::default(), &instance)
            .await
        {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(err) if is_not_found(&err) => return Ok(false),
            Err(source) => {
                return Err(Error::Kube {
                    action: "write status of Instance",
                    object: name.to_owned(),
                    source,
                });
            }
        }
    }
    Err(Error::Kube {
        action: "write status of Instance (conflicts persisted)",
        object: name.to_owned(),
        source: kube::Error::Api(Box::new(
            kube::core::Status::failure("the object keeps changing", "Conflict").with_code(409),
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn conditions_keep_transition_time_unless_status_flips() {
        let mut conds = Vec::new();
        assert!(set_condition(
            &mut conds,
            "Ready",
            true,
            "Ok",
            "fine",
            Some(1),
            ts(10)
        ));
        assert!(!set_condition(
            &mut conds,
            "Ready",
            true,
            "Ok",
            "fine",
            Some(1),
            ts(20)
        ));
        assert_eq!(conds[0].last_transition_time.0, ts(10));
        assert!(set_condition(
            &mut conds,
            "Ready",
            true,
            "Ok",
            "better",
            Some(1),
            ts(30)
        ));
        assert_eq!(
            conds[0].last_transition_time.0,
            ts(10),
            "message change keeps time"
        );
        assert!(set_condition(
            &mut conds,
            "Ready",
            false,
            "Down",
            "gone",
            Some(1),
            ts(40)
        ));
        assert_eq!(conds[0].last_transition_time.0, ts(40));
        assert_eq!(conds[0].status, "False");
        assert!(set_condition(
            &mut conds,
            "Other",
            true,
            "X",
            "",
            None,
            ts(50)
        ));
        assert_eq!(conds.len(), 2);
        assert!(remove_condition(&mut conds, "Other"));
        assert!(!remove_condition(&mut conds, "Other"));
        assert_eq!(conds.len(), 1);
    }
}
