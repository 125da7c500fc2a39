//! Time windows of a policy: whether an instant is inside one, and the next instant at
//! which that changes.
//!
//! Windows are read in the policy's time zone (bundled tz database, so every machine
//! agrees). A window `[start, end]` covers every minute from `start` to `end` inclusive;
//! `end < start` crosses midnight and belongs to the day it starts on (`Friday 22:00-02:00`
//! covers Saturday 01:00). The weekly pattern is flattened into sorted, merged intervals of
//! minute-of-week; DST transitions are followed explicitly so that the next change is exact
//! even when local time jumps.

use jiff::tz::{TimeZone, TimeZoneDatabase};
use jiff::{SignedDuration, Timestamp};

use crate::crd::schema::WEEKDAYS;
use crate::crd::{ResourceLeasingPolicySpec, TimeWindow};

const MINUTES_PER_DAY: u32 = 24 * 60;
const MINUTES_PER_WEEK: u32 = 7 * MINUTES_PER_DAY;
/// Upper bound on DST transitions crossed while looking for the next change.
const MAX_TRANSITION_HOPS: usize = 8;

/// Whether an instant is inside the windows, and when that changes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowState {
    /// Inside at least one window (always true for a policy without windows).
    pub in_window: bool,
    /// The next instant at which `in_window` flips; `None` if it never does.
    pub next_change: Option<Timestamp>,
}

/// The parsed time windows of a policy, ready to evaluate.
#[derive(Clone, Debug)]
pub struct Schedule {
    tz: TimeZone,
    /// `None`: no windows, always inside.
    weekly: Option<WeeklyCoverage>,
}

/// Covered minutes of a week as sorted, disjoint, non-touching half-open intervals of
/// minute-of-week (Monday 00:00 = 0). `unrolled` repeats them over two weeks and merges
/// across the week boundary, so the end of a run is found without wrap-around cases.
#[derive(Clone, Debug)]
struct WeeklyCoverage {
    intervals: Vec<(u32, u32)>,
    unrolled: Vec<(u32, u32)>,
}

impl Schedule {
    /// Parses the time zone and windows of a policy spec; every problem is reported with
    /// its field path.
    pub fn parse(spec: &ResourceLeasingPolicySpec) -> Result<Schedule, Vec<String>> {
        let mut problems = Vec::new();
        let tz = match parse_timezone(spec.timezone.as_deref()) {
            Ok(tz) => tz,
            Err(problem) => {
                problems.push(problem);
                TimeZone::UTC
            }
        };
        let mut intervals = Vec::new();
        for (i, window) in spec.time_windows.iter().enumerate() {
            match window_intervals(window, i) {
                Ok(found) => intervals.extend(found),
                Err(found) => problems.extend(found),
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let weekly = (!spec.time_windows.is_empty()).then(|| WeeklyCoverage::new(intervals));
        Ok(Schedule { tz, weekly })
    }

    /// The time zone windows are read in.
    pub fn time_zone(&self) -> &TimeZone {
        &self.tz
    }

    /// Whether `at` is inside a window.
    pub fn is_active(&self, at: Timestamp) -> bool {
        match &self.weekly {
            None => true,
            Some(weekly) => weekly.contains(self.minute_of_week(at)),
        }
    }

    /// Whether `now` is inside a window and the next instant at which that flips.
    pub fn state(&self, now: Timestamp) -> WindowState {
        let Some(weekly) = &self.weekly else {
            return WindowState {
                in_window: true,
                next_change: None,
            };
        };
        let in_window = weekly.contains(self.minute_of_week(now));
        WindowState {
            in_window,
            next_change: self.next_change(weekly, now, in_window),
        }
    }

    fn next_change(
        &self,
        weekly: &WeeklyCoverage,
        now: Timestamp,
        in_window: bool,
    ) -> Option<Timestamp> {
        let mut at = now;
        for _ in 0..MAX_TRANSITION_HOPS {
            let local = self.tz.to_datetime(at);
            let minute = minute_of_week(&local);
            // Inside one UTC offset, local minutes and real minutes advance together.
            let delta = weekly.minutes_until_change(minute)?;
            let into_minute =
                SignedDuration::new(i64::from(local.second()), local.subsec_nanosecond());
            let candidate = at
                .checked_sub(into_minute)
                .ok()?
                .checked_add(SignedDuration::from_mins(i64::from(delta)))
                .ok()?;
            match self.tz.following(at).next() {
                Some(transition) if transition.timestamp() <= candidate => {
                    let jump = transition.timestamp();
                    if weekly.contains(self.minute_of_week(jump)) != in_window {
                        return Some(jump);
                    }
                    at = jump;
                }
                _ => return Some(candidate),
            }
        }
        // Only reachable with a pathological zone; re-evaluating then is still correct.
        Some(at)
    }

    fn minute_of_week(&self, at: Timestamp) -> u32 {
        minute_of_week(&self.tz.to_datetime(at))
    }
}

/// Resolves an IANA zone name in the bundled database; empty or missing means UTC.
pub fn parse_timezone(name: Option<&str>) -> Result<TimeZone, String> {
    match name {
        None | Some("") => Ok(TimeZone::UTC),
        Some(name) => TimeZoneDatabase::bundled().get(name).map_err(|_| {
            format!(
                "spec.timezone {name:?} is not a known IANA time zone (for example Europe/Berlin)"
            )
        }),
    }
}

/// Parses `HH:MM` (00:00 to 23:59) into minutes after midnight.
pub fn parse_time_of_day(s: &str) -> Option<u32> {
    let bytes = s.as_bytes();
    let [h1, h2, b':', m1, m2] = bytes else {
        return None;
    };
    if ![h1, h2, m1, m2].iter().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours = u32::from(h1 - b'0') * 10 + u32::from(h2 - b'0');
    let minutes = u32::from(m1 - b'0') * 10 + u32::from(m2 - b'0');
    (hours < 24 && minutes < 60).then_some(hours * 60 + minutes)
}

/// Parses an English weekday name, any case, into 0 (Monday) to 6 (Sunday).
pub fn parse_weekday(s: &str) -> Option<u32> {
    WEEKDAYS
        .iter()
        .position(|day| day.eq_ignore_ascii_case(s))
        .and_then(|i| u32::try_from(i).ok())
}

/// The half-open minute-of-week intervals one window covers (end may exceed a week).
fn window_intervals(window: &TimeWindow, index: usize) -> Result<Vec<(u32, u32)>, Vec<String>> {
    let path = format_args!("spec.timeWindows[{index}]");
    let mut problems = Vec::new();
    let start = parse_time_of_day(&window.start);
    if start.is_none() {
        problems.push(format!(
            "{path}.start {:?} is not a time in HH:MM format (00:00 to 23:59)",
            window.start
        ));
    }
    let end = parse_time_of_day(&window.end);
    if end.is_none() {
        problems.push(format!(
            "{path}.end {:?} is not a time in HH:MM format (00:00 to 23:59)",
            window.end
        ));
    }
    let mut days = Vec::new();
    for (d, name) in window.days.iter().enumerate() {
        match parse_weekday(name) {
            Some(day) => days.push(day),
            None => problems.push(format!(
                "{path}.days[{d}] {name:?} is not a weekday name (Monday to Sunday)"
            )),
        }
    }
    let (Some(start), Some(end), true) = (start, end, problems.is_empty()) else {
        return Err(problems);
    };
    if days.is_empty() {
        days.extend(0..7);
    }
    // The end minute is inclusive; an overnight window ends on the next day.
    let length = if end >= start {
        end - start + 1
    } else {
        MINUTES_PER_DAY - start + end + 1
    };
    Ok(days
        .into_iter()
        .map(|day| {
            let from = day * MINUTES_PER_DAY + start;
            (from, from + length)
        })
        .collect())
}

fn minute_of_week(local: &jiff::civil::DateTime) -> u32 {
    let day = u32::try_from(local.weekday().to_monday_zero_offset()).unwrap_or(0);
    let hour = u32::try_from(local.hour()).unwrap_or(0);
    let minute = u32::try_from(local.minute()).unwrap_or(0);
    day * MINUTES_PER_DAY + hour * 60 + minute
}

impl WeeklyCoverage {
    fn new(raw: Vec<(u32, u32)>) -> WeeklyCoverage {
        // Fold runs past the end of the week back to its start.
        let mut folded = Vec::with_capacity(raw.len() + 2);
        for (from, to) in raw {
            if to > MINUTES_PER_WEEK {
                folded.push((from, MINUTES_PER_WEEK));
                folded.push((0, to - MINUTES_PER_WEEK));
            } else {
                folded.push((from, to));
            }
        }
        let intervals = merge(folded);
        let mut two_weeks = intervals.clone();
        two_weeks.extend(
            intervals
                .iter()
                .map(|&(from, to)| (from + MINUTES_PER_WEEK, to + MINUTES_PER_WEEK)),
        );
        WeeklyCoverage {
            unrolled: merge(two_weeks),
            intervals,
        }
    }

    fn contains(&self, minute: u32) -> bool {
        self.intervals
            .iter()
            .any(|&(from, to)| from <= minute && minute < to)
    }

    /// Minutes from the start of `minute` until coverage flips; `None` if it never does
    /// (the whole week is covered, or none of it).
    fn minutes_until_change(&self, minute: u32) -> Option<u32> {
        if self.intervals.is_empty() || self.intervals == [(0, MINUTES_PER_WEEK)] {
            return None;
        }
        self.unrolled.iter().find_map(|&(from, to)| {
            if minute < from {
                Some(from - minute)
            } else if minute < to {
                Some(to - minute)
            } else {
                None
            }
        })
    }
}

/// Sorts intervals and merges those that overlap or touch.
fn merge(mut intervals: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    intervals.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::with_capacity(intervals.len());
    for (from, to) in intervals {
        match merged.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => merged.push((from, to)),
        }
    }
    merged
}
