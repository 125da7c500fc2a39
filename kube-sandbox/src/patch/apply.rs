//! Server-side apply and update tracking.

use super::*;

/// Applies `applied`, an apply configuration of `kind`, for `manager` on top of
/// `existing` (`None` creates) and returns the object to store, with
/// `metadata.managedFields` updated. Fields of the configuration that another manager
/// owns and whose value would change are conflicts unless `force`, which moves their
/// ownership to `manager`. Fields `manager` applied before and no longer applies are
/// removed unless another manager owns them. `now` is the RFC 3339 time recorded in
/// the manager's entry when the object changes.
pub fn server_side_apply(
    existing: Option<&Value>,
    applied: &Value,
    kind: &str,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApplyError> {
    server_side_apply_subresource(existing, applied, kind, manager, "", force, now)
}

/// [`server_side_apply`] through a subresource endpoint (`subresource` is e.g. `status`;
/// empty for the main resource). Each manager has one apply entry per subresource, so
/// applying status does not prune what the same manager applied to the main resource.
/// The caller drops the fields the endpoint resets (spec for `status`, status otherwise).
pub fn server_side_apply_subresource(
    existing: Option<&Value>,
    applied: &Value,
    kind: &str,
    manager: &str,
    subresource: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApplyError> {
    if manager.is_empty() {
        return Err(ApplyError::MissingFieldManager);
    }
    let Value::Object(config) = applied else {
        return Err(ApplyError::InvalidConfig(format!(
            "an apply configuration must be an object, not {}",
            json_type_name(applied)
        )));
    };
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApplyError::InvalidConfig("apiVersion must be set in an apply configuration".into())
        })?
        .to_string();
    match config.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            return Err(ApplyError::InvalidConfig(
                "kind must be set in an apply configuration".into(),
            ));
        }
        Some(k) if k != kind => {
            return Err(ApplyError::InvalidConfig(format!(
                "the apply configuration is a {k}, but the object is a {kind}"
            )));
        }
        Some(_) => {}
    }
    let mut config = Value::Object(config.clone());
    if let Some(Value::Object(meta)) = config.get_mut("metadata") {
        for field in IGNORED_CONFIG_METADATA {
            meta.remove(*field);
        }
    }

    let strict = Walker { kind, strict: true };
    let lenient = Walker {
        kind,
        strict: false,
    };
    let mut applied_set = strict
        .field_set(&config)
        .map_err(ApplyError::InvalidConfig)?;
    strip_meta(&mut applied_set);

    let mut live = existing
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    if !live.is_object() {
        return Err(ApplyError::InvalidConfig(
            "the existing object is not a JSON object".into(),
        ));
    }
    let mut entries = parse_managed_fields(take_managed_fields(&mut live).as_ref());
    if existing.is_some() && entries.is_empty() {
        // Objects written without field tracking are owned by a stand-in updater.
        let mut set = lenient.field_set(&live).unwrap_or_default();
        strip_meta(&mut set);
        entries.push(ManagedEntry {
            manager: "before-first-apply".into(),
            operation: UPDATE.into(),
            api_version: live
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or(&api_version)
                .to_string(),
            time: None,
            subresource: String::new(),
            set,
        });
    }
    let mine = entries
        .iter()
        .position(|e| e.is_apply_by(manager, subresource));
    let mut owned_by_others = FieldSet::default();
    for (i, e) in entries.iter().enumerate() {
        if Some(i) != mine {
            owned_by_others.union_with(&e.set);
        }
    }

    let mut merged = lenient
        .merge(Some(&live), &config, &mut Vec::new())
        .map_err(ApplyError::InvalidConfig)?;

    if let Some(last) = mine.map(|i| entries[i].set.clone()) {
        let mut owned_now = applied_set.clone();
        owned_now.union_with(&owned_by_others);
        prune(&lenient, &mut merged, &last, &owned_now);
    }

    let mut cmp = Comparison::default();
    lenient.diff(
        Some(&live),
        Some(&merged),
        &mut Vec::new(),
        &mut Vec::new(),
        &mut cmp,
        false,
    );
    let mut changed = cmp.added;
    changed.union_with(&cmp.modified);

    let mut conflicts = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if Some(i) == mine {
            continue;
        }
        for path in e.set.members() {
            if changed.contains(&path) {
                conflicts.push((i, path));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        let mut list: Vec<ApplyConflict> = conflicts
            .iter()
            .map(|(i, path)| ApplyConflict {
                manager: entries[*i].manager.clone(),
                field: path_string(path),
                description: entries[*i].describe(),
            })
            .collect();
        list.sort_by(|a, b| (&a.description, &a.field).cmp(&(&b.description, &b.field)));
        return Err(ApplyError::Conflict(list));
    }
    for (i, path) in &conflicts {
        entries[*i].set.remove_member(path);
    }
    let removed = cmp.removed.members();
    for (i, e) in entries.iter_mut().enumerate() {
        if Some(i) != mine {
            for path in &removed {
                e.set.remove_subtree(path);
            }
        }
    }

    let object_changed = merged != live;
    match mine {
        Some(i) => {
            let entry = &mut entries[i];
            entry.set = applied_set;
            entry.api_version = api_version;
            if object_changed || entry.time.is_none() {
                entry.time = Some(now.to_string());
            }
        }
        None => entries.push(ManagedEntry {
            manager: manager.to_string(),
            operation: APPLY.into(),
            api_version,
            time: Some(now.to_string()),
            subresource: subresource.to_string(),
            set: applied_set,
        }),
    }
    write_managed_fields(&mut merged, entries);
    Ok(merged)
}

/// Removes from `merged` what the applier owned (`last`) and nobody owns now.
pub(super) fn prune(
    walker: &Walker<'_>,
    merged: &mut Value,
    last: &FieldSet,
    owned_now: &FieldSet,
) {
    for path in last.members() {
        if owned_now.covers(&path) {
            continue;
        }
        walker.remove(merged, &path);
        // Drop objects and lists the removal emptied, unless someone owns inside them.
        let mut ancestor = path;
        while ancestor.len() > 1 {
            ancestor.pop();
            if !ancestor.last().is_some_and(|pe| pe.starts_with("f:"))
                || owned_now.covers(&ancestor)
            {
                break;
            }
            let empty = match walker.get(merged, &ancestor) {
                Some(Value::Object(m)) => m.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if !empty {
                break;
            }
            walker.remove(merged, &ancestor);
        }
    }
}

/// Records in `new.metadata.managedFields` the fields an ordinary write (create,
/// update, non-apply patch) by `manager` set or changed, as an `Update` entry for
/// `operation_api_version` (the request's `group/version`); other managers lose
/// ownership of those fields, and of fields the write removed. A request object whose
/// `managedFields` is `[]` or `[{}]` clears them. `old` is `None` on create.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation_api_version: &str,
    now: &str,
) {
    record_update_subresource(old, new, manager, "", operation_api_version, now);
}

/// [`record_update`] for a write through a subresource endpoint (e.g. `status`), which
/// gets its own entry per manager.
pub fn record_update_subresource(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: &str,
    operation_api_version: &str,
    now: &str,
) {
    if !new.is_object() {
        return;
    }
    // Taken out for the comparison below and written back at the end.
    let requested = take_managed_fields(new);
    if let Some(Value::Array(list)) = &requested
        && (list.is_empty() || (list.len() == 1 && list[0] == Value::Object(Map::new())))
    {
        return;
    }
    // The entries as written: the request's when it carries valid ones, else the old
    // object's.
    let mut raw: Vec<Value> = match requested {
        Some(Value::Array(list)) => list.into_iter().filter(ManagedEntry::is_valid).collect(),
        _ => Vec::new(),
    };
    if raw.is_empty()
        && let Some(Value::Array(list)) = old.and_then(|o| o.pointer("/metadata/managedFields"))
    {
        raw = list
            .iter()
            .filter(|v| ManagedEntry::is_valid(v))
            .cloned()
            .collect();
    }
    let kind = new
        .get("kind")
        .or_else(|| old.and_then(|o| o.get("kind")))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    // The old object is compared as it is, not copied without its managedFields on every
    // write: their removal shows as one removed path that no entry owns.
    let empty = Value::Object(Map::new());
    let before = old.unwrap_or(&empty);

    let walker = Walker {
        kind: &kind,
        strict: false,
    };
    let mut cmp = Comparison::default();
    walker.diff(
        Some(before),
        Some(new),
        &mut Vec::new(),
        &mut Vec::new(),
        &mut cmp,
        true,
    );
    let mut current = cmp.added;
    current.union_with(&cmp.modified);
    strip_meta(&mut current);

    // Every entry in `raw` is valid: its header alone tells which one is this writer's.
    let mine = raw
        .iter()
        .position(|v| EntryHeader::of(v).is_update_by(manager, operation_api_version, subresource));
    // Paths are listed only when another entry may lose them (never on a create).
    let others = raw.len() - usize::from(mine.is_some());
    let changed = match others {
        0 => Vec::new(),
        _ => current.members(),
    };
    let removed = match raw.is_empty() {
        true => Vec::new(),
        false => cmp.removed.members(),
    };
    let mut entries = Vec::with_capacity(raw.len() + 1);
    for (i, v) in raw.into_iter().enumerate() {
        let is_mine = Some(i) == mine;
        let fields = v.get("fieldsV1").unwrap_or(&Value::Null);
        let touched = (is_mine && !current.is_empty())
            || removed.iter().any(|p| fields_node(fields, p).is_some())
            || (!is_mine
                && changed
                    .iter()
                    .any(|p| fields_node(fields, p).is_some_and(fields_member)));
        if !touched {
            entries.push(Entry::Kept(v));
            continue;
        }
        let Some(mut e) = ManagedEntry::parse(&v) else {
            continue;
        };
        for path in &removed {
            e.set.remove_subtree(path);
        }
        if is_mine {
            e.set.union_with(&current);
            if !current.is_empty() {
                e.time = Some(now.to_string());
            }
        } else {
            for path in &changed {
                e.set.remove_member(path);
            }
        }
        entries.push(Entry::Parsed(e));
    }
    if mine.is_none() && !current.is_empty() {
        entries.push(Entry::Parsed(ManagedEntry {
            manager: manager.to_string(),
            operation: UPDATE.into(),
            api_version: operation_api_version.to_string(),
            time: Some(now.to_string()),
            subresource: subresource.to_string(),
            set: current,
        }));
    }
    write_entries(new, entries);
}
