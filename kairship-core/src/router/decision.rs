//! The routing decision, as a pure function of the operation and what is known about the cache.

use std::time::Duration;

use kube::core::DynamicObject;

/// What a request does to a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Read one object.
    Get,
    /// List objects.
    List,
    /// Watch objects; `from_version` when the client asks to resume from a resourceVersion
    /// (the cache keeps no event history, so such watches are served directly).
    Watch {
        /// A resourceVersion other than `""`/`"0"` was given.
        from_version: bool,
    },
    /// POST.
    Create,
    /// PUT.
    Replace,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
}

impl Operation {
    /// The operation of an HTTP request: `watch` when the query asks for a watch, `named` when
    /// the path names one object. `None` for methods the router does not handle.
    pub fn from_http(
        method: &http::Method,
        named: bool,
        watch: bool,
        from_version: bool,
    ) -> Option<Operation> {
        Some(match *method {
            http::Method::GET if watch => Operation::Watch { from_version },
            http::Method::GET if named => Operation::Get,
            http::Method::GET => Operation::List,
            http::Method::POST => Operation::Create,
            http::Method::PUT => Operation::Replace,
            http::Method::PATCH => Operation::Patch,
            http::Method::DELETE => Operation::Delete,
            _ => return None,
        })
    }

    /// Whether the operation changes state.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Operation::Create | Operation::Replace | Operation::Patch | Operation::Delete
        )
    }
}

/// How fresh the cache is relative to the newest write made through the router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// No write through the router is awaiting the cache.
    NoPendingWrite,
    /// The cache has seen the newest write's resourceVersion.
    Seen,
    /// The cache has not yet seen it; `waited` so far out of the `bound`.
    Behind {
        /// Time spent waiting for the cache so far.
        waited: Duration,
        /// The most to wait before reading directly.
        bound: Duration,
    },
    /// The versions cannot be compared (not numeric), so the cache cannot prove it is fresh.
    Incomparable,
}

/// What is known about the cache for the request's resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheState {
    /// Its initial list completed and its watch is healthy.
    pub synced: bool,
    /// A read from it failed during this request.
    pub failed: bool,
    /// Read-your-writes status.
    pub freshness: Freshness,
}

/// Why a read is served directly by the instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FallbackReason {
    /// The cache has not completed its initial list or its watch is failing.
    Unsynced,
    /// The cache failed to answer.
    CacheError,
    /// The cache did not see the client's own write within the bound.
    StaleAfterWrite,
    /// The write's resourceVersion cannot be compared with the cache's.
    IncomparableVersion,
    /// A watch resuming from a resourceVersion.
    WatchFromVersion,
}

impl FallbackReason {
    /// Every reason, in a fixed order (metrics index by it).
    pub const ALL: [FallbackReason; 5] = [
        FallbackReason::Unsynced,
        FallbackReason::CacheError,
        FallbackReason::StaleAfterWrite,
        FallbackReason::IncomparableVersion,
        FallbackReason::WatchFromVersion,
    ];

    /// A label for metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            FallbackReason::Unsynced => "unsynced",
            FallbackReason::CacheError => "cache_error",
            FallbackReason::StaleAfterWrite => "stale_after_write",
            FallbackReason::IncomparableVersion => "incomparable_version",
            FallbackReason::WatchFromVersion => "watch_from_version",
        }
    }
}

/// Where a request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// To the write backend (the instance apiserver).
    Write,
    /// To the read backend (the cache).
    Cache,
    /// Wait for the cache to see the pending write, then decide again.
    WaitForCache,
    /// To the instance apiserver directly, for the given reason.
    Direct(FallbackReason),
}

/// Decides where `op` goes given the cache's `state`.
pub fn decide(op: Operation, state: CacheState) -> Route {
    if op.is_write() {
        return Route::Write;
    }
    if op == (Operation::Watch { from_version: true }) {
        return Route::Direct(FallbackReason::WatchFromVersion);
    }
    if state.failed {
        return Route::Direct(FallbackReason::CacheError);
    }
    if !state.synced {
        return Route::Direct(FallbackReason::Unsynced);
    }
    match state.freshness {
        Freshness::NoPendingWrite | Freshness::Seen => Route::Cache,
        Freshness::Incomparable => Route::Direct(FallbackReason::IncomparableVersion),
        Freshness::Behind { waited, bound } if waited < bound => Route::WaitForCache,
        Freshness::Behind { .. } => Route::Direct(FallbackReason::StaleAfterWrite),
    }
}

/// Parses a resourceVersion as the number etcd-backed apiservers use; `None` when it is not one.
pub fn parse_version(rv: &str) -> Option<u64> {
    rv.parse().ok()
}

/// The resourceVersion of `object` as a number; 0 when it has none or not a numeric one.
pub(super) fn version_of(object: &DynamicObject) -> u64 {
    object
        .metadata
        .resource_version
        .as_deref()
        .and_then(parse_version)
        .unwrap_or(0)
}

/// The freshness of a cache that has seen up to `seen` given a pending write at `written`.
pub fn freshness(
    written: Option<&str>,
    seen: Option<u64>,
    waited: Duration,
    bound: Duration,
) -> Freshness {
    let Some(written) = written else {
        return Freshness::NoPendingWrite;
    };
    match parse_version(written) {
        None => Freshness::Incomparable,
        Some(w) if seen.is_some_and(|s| s >= w) => Freshness::Seen,
        Some(_) => Freshness::Behind { waited, bound },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn decide_table() {
        use FallbackReason::*;
        use Freshness::*;
        let ok = CacheState {
            synced: true,
            failed: false,
            freshness: NoPendingWrite,
        };
        let behind = |waited: u32| Behind {
            waited: MS * waited,
            bound: MS * 1000,
        };
        let cases = [
            (Operation::Get, ok, Route::Cache),
            (Operation::List, ok, Route::Cache),
            (
                Operation::Watch {
                    from_version: false,
                },
                ok,
                Route::Cache,
            ),
            (
                Operation::Watch { from_version: true },
                ok,
                Route::Direct(WatchFromVersion),
            ),
            (Operation::Create, ok, Route::Write),
            (Operation::Replace, ok, Route::Write),
            (Operation::Patch, ok, Route::Write),
            (Operation::Delete, ok, Route::Write),
            (
                Operation::Delete,
                CacheState {
                    synced: false,
                    ..ok
                },
                Route::Write,
            ),
            (
                Operation::List,
                CacheState {
                    synced: false,
                    ..ok
                },
                Route::Direct(Unsynced),
            ),
            (
                Operation::Get,
                CacheState { failed: true, ..ok },
                Route::Direct(CacheError),
            ),
            (
                Operation::List,
                CacheState {
                    freshness: Seen,
                    ..ok
                },
                Route::Cache,
            ),
            (
                Operation::List,
                CacheState {
                    freshness: behind(0),
                    ..ok
                },
                Route::WaitForCache,
            ),
            (
                Operation::Get,
                CacheState {
                    freshness: behind(999),
                    ..ok
                },
                Route::WaitForCache,
            ),
            (
                Operation::Get,
                CacheState {
                    freshness: behind(1000),
                    ..ok
                },
                Route::Direct(StaleAfterWrite),
            ),
            (
                Operation::List,
                CacheState {
                    freshness: Incomparable,
                    ..ok
                },
                Route::Direct(IncomparableVersion),
            ),
            (
                Operation::List,
                CacheState {
                    synced: false,
                    freshness: behind(0),
                    ..ok
                },
                Route::Direct(Unsynced),
            ),
        ];
        for (op, state, want) in cases {
            assert_eq!(decide(op, state), want, "{op:?} {state:?}");
        }
    }

    #[test]
    fn operation_from_http_table() {
        use http::Method;
        for (method, named, watch, from, want) in [
            (Method::GET, true, false, false, Some(Operation::Get)),
            (Method::GET, false, false, false, Some(Operation::List)),
            (
                Method::GET,
                false,
                true,
                true,
                Some(Operation::Watch { from_version: true }),
            ),
            (Method::POST, false, false, false, Some(Operation::Create)),
            (Method::PUT, true, false, false, Some(Operation::Replace)),
            (Method::PATCH, true, false, false, Some(Operation::Patch)),
            (Method::DELETE, true, false, false, Some(Operation::Delete)),
            (Method::OPTIONS, false, false, false, None),
        ] {
            assert_eq!(
                Operation::from_http(&method, named, watch, from),
                want,
                "{method}"
            );
        }
    }

    #[test]
    fn freshness_table() {
        let bound = MS * 10;
        for (written, seen, want) in [
            (None, None, Freshness::NoPendingWrite),
            (Some("5"), Some(5), Freshness::Seen),
            (Some("5"), Some(9), Freshness::Seen),
            (Some("5"), Some(4), Freshness::Behind { waited: MS, bound }),
            (Some("5"), None, Freshness::Behind { waited: MS, bound }),
            (Some("abc"), Some(9), Freshness::Incomparable),
        ] {
            assert_eq!(
                freshness(written, seen, MS, bound),
                want,
                "{written:?} {seen:?}"
            );
        }
    }
}
