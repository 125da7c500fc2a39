//! Status conditions (`metav1.Condition`): build one, set or upsert it so that
//! `lastTransitionTime` only moves when the status does and an unchanged condition causes no
//! write, remove one, find one.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// A condition with `status` `True`/`False`, transitioning at `now`.
pub fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message: message.into(),
        observed_generation,
        last_transition_time: Time(now),
    }
}

/// Inserts or updates `new` in `conditions` (by type); keeps the old transition time when the
/// status is unchanged. Returns whether anything but times changed.
pub fn upsert_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(old) => {
            let changed = old.status != new.status
                || old.reason != new.reason
                || old.message != new.message
                || old.observed_generation != new.observed_generation;
            if changed {
                let keep_time = old.status == new.status;
                let time = old.last_transition_time.clone();
                *old = new;
                if keep_time {
                    old.last_transition_time = time;
                }
            }
            changed
        }
        None => {
            conditions.push(new);
            true
        }
    }
}

/// Sets the condition `type_` in `conditions`: [`upsert_condition`] of [`condition`].
/// Returns whether anything but times changed.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> bool {
    upsert_condition(
        conditions,
        condition(type_, status, reason, message, observed_generation, now),
    )
}

/// Removes the condition `type_`; returns whether it was present.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// The condition of a type, if present.
pub fn find<'c>(conditions: &'c [Condition], type_: &str) -> Option<&'c Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn set_table() {
        let mut conditions = Vec::new();
        // (type, status, reason, message, observedGeneration, now) -> (changed, transition time)
        type Step = (
            &'static str,
            bool,
            &'static str,
            &'static str,
            Option<i64>,
            i64,
            bool,
            i64,
        );
        let steps: [Step; 7] = [
            ("Ready", true, "Ok", "fine", Some(1), 10, true, 10),
            ("Ready", true, "Ok", "fine", Some(1), 20, false, 10),
            ("Ready", true, "Ok", "better", Some(1), 30, true, 10),
            ("Ready", true, "Ok", "better", Some(2), 35, true, 10),
            ("Ready", true, "Recovered", "better", Some(2), 36, true, 10),
            ("Ready", false, "Down", "gone", Some(2), 40, true, 40),
            ("Ready", true, "Ok", "back", Some(2), 50, true, 50),
        ];
        for (i, (type_, status, reason, message, generation, now, changed, time)) in
            steps.into_iter().enumerate()
        {
            let got = set_condition(
                &mut conditions,
                type_,
                status,
                reason,
                message,
                generation,
                ts(now),
            );
            assert_eq!(got, changed, "step {i}");
            assert_eq!(conditions.len(), 1);
            let c = &conditions[0];
            assert_eq!(c.last_transition_time, Time(ts(time)), "step {i}");
            assert_eq!(c.status, if status { "True" } else { "False" }, "step {i}");
            assert_eq!((c.reason.as_str(), c.message.as_str()), (reason, message));
            assert_eq!(c.observed_generation, generation, "step {i}");
        }
    }

    #[test]
    fn upsert_add_find_remove() {
        let mut conditions = vec![condition("Valid", true, "Valid", "ok", None, ts(1))];
        assert!(upsert_condition(
            &mut conditions,
            condition("Active", false, "OutOfTimeWindow", "", None, ts(2))
        ));
        assert_eq!(conditions.len(), 2);
        assert_eq!(
            find(&conditions, "Active").map(|c| c.reason.as_str()),
            Some("OutOfTimeWindow")
        );
        assert!(find(&conditions, "Missing").is_none());
        assert!(remove_condition(&mut conditions, "Active"));
        assert!(!remove_condition(&mut conditions, "Active"));
        assert_eq!(conditions.len(), 1);
    }
}
