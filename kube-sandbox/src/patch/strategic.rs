//! Strategic merge patch, a port of apimachinery's strategicpatch.

use super::*;

pub(super) const DIRECTIVE: &str = "$patch";
pub(super) const RETAIN_KEYS: &str = "$retainKeys";
pub(super) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
pub(super) const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// Applies a Kubernetes strategic merge patch to `original`, an object of the built-in
/// `kind`, and returns the patched object. `null` deletes a field; `$patch: replace`
/// and `$patch: delete` work in maps and list elements; `$deleteFromPrimitiveList/<f>`,
/// `$setElementOrder/<f>` and `$retainKeys` are honoured as upstream does.
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    kind: &str,
) -> Result<Value, PatchError> {
    if !supports_strategic_merge(kind) {
        return Err(PatchError::UnsupportedKind {
            kind: kind.to_string(),
        });
    }
    let Value::Object(patch) = patch else {
        return Err(PatchError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_type_name(patch)
        )));
    };
    let original = match original {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        _ => return Err(PatchError::BadRequest("invalid JSON document".to_string())),
    };
    let merged = Smp { kind }.merge_map(original, patch.clone(), &mut Vec::new())?;
    Ok(Value::Object(merged))
}

pub(super) fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ElemKind {
    Null,
    Bool,
    Number,
    String,
    Object,
}

/// The common element type of the lists, as `sliceElementType` checks it.
pub(super) fn element_kind(lists: &[&[Value]]) -> Result<ElemKind, PatchError> {
    let mut kind = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let k = match v {
            Value::Array(_) => {
                return Err(PatchError::Unprocessable(
                    "lists of lists are not supported".to_string(),
                ));
            }
            Value::Null => ElemKind::Null,
            Value::Bool(_) => ElemKind::Bool,
            Value::Number(_) => ElemKind::Number,
            Value::String(_) => ElemKind::String,
            Value::Object(_) => ElemKind::Object,
        };
        if kind.is_some_and(|prev| prev != k) {
            let all: Vec<Value> = lists.iter().map(|l| Value::Array(l.to_vec())).collect();
            return Err(PatchError::MergeFailed(format!(
                "list element types are not identical: {}",
                Value::Array(all)
            )));
        }
        kind = Some(k);
    }
    kind.ok_or_else(|| {
        PatchError::MergeFailed("no elements in any of the given slices".to_string())
    })
}

/// The value of `key` in a list element, or the apiserver's "no merge key" error.
pub(super) fn merge_key_value<'v>(item: &'v Value, key: &str) -> Result<&'v Value, PatchError> {
    item.as_object().and_then(|m| m.get(key)).ok_or_else(|| {
        PatchError::MergeFailed(format!(
            "map: {item} does not contain declared merge key: {key}"
        ))
    })
}

/// Position of `item` in `list`, compared by merge key (maps) or by value (scalars).
pub(super) fn index_of(list: &[Value], item: &Value, key: Option<&str>) -> Option<usize> {
    match key {
        Some(k) => {
            let wanted = item.get(k)?;
            list.iter().position(|v| v.get(k) == Some(wanted))
        }
        None => list.iter().position(|v| v == item),
    }
}

pub(super) fn is_delete_element(v: &Value) -> bool {
    v.get(DIRECTIVE).and_then(Value::as_str) == Some("delete")
}

/// Splits `merged` into the items present in `by` and the server-only rest.
pub(super) fn partition(
    merged: Vec<Value>,
    by: &[Value],
    key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut in_patch = Vec::new();
    let mut server_only = Vec::new();
    for v in merged {
        let present = match key {
            Some(k) => {
                let kv = merge_key_value(&v, k)?;
                by.iter().any(|b| b.get(k) == Some(kv))
            }
            None => by.contains(&v),
        };
        if present {
            in_patch.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((in_patch, server_only))
}

/// Sorts `items` by their position in `order`, keeping `$patch: delete` items last.
pub(super) fn normalize_slice_order(
    items: Vec<Value>,
    order: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    let mut deletes = Vec::new();
    let mut keep = Vec::new();
    if let Some(k) = key {
        for v in items.iter().chain(order) {
            merge_key_value(v, k)?;
        }
        for v in items {
            if is_delete_element(&v) {
                deletes.push(v);
            } else {
                keep.push(v);
            }
        }
    } else {
        keep = items;
    }
    let mut indexed: Vec<(usize, Value)> = keep
        .into_iter()
        .map(|v| (index_of(order, &v, key).unwrap_or(usize::MAX), v))
        .collect();
    indexed.sort_by_key(|(i, _)| *i);
    let mut out: Vec<Value> = indexed.into_iter().map(|(_, v)| v).collect();
    out.extend(deletes);
    Ok(out)
}

/// Interleaves server-only items (`left`) with patch items (`right`): a server-only
/// item goes first only when both are in `server_order` and it comes earlier there,
/// so items new to the server come before the server-only items that follow them.
pub(super) fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (index_of(server_order, l, key), index_of(server_order, r, key)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

pub(super) fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    let patch_items = normalize_slice_order(patch_items, patch_order, key)?;
    let server_only = normalize_slice_order(server_only, server_order, key)?;
    Ok(merge_sorted_slice(
        server_only,
        patch_items,
        server_order,
        key,
    ))
}

/// The field a `$directive/<field>` key names.
pub(super) fn extract_directive_field(
    key: &str,
    prefix: &str,
    err: &str,
) -> Result<String, PatchError> {
    match key.split_once('/') {
        Some((p, field)) if p == prefix => Ok(field.to_string()),
        _ => Err(PatchError::BadRequest(err.to_string())),
    }
}

/// Checks that a patch list follows the relative order of its `$setElementOrder` list.
pub(super) fn validate_set_element_order(
    patch: &[Value],
    order: &[Value],
    key: Option<&str>,
) -> Result<(), PatchError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = match key {
        Some(_) => patch.iter().filter(|v| !is_delete_element(v)).collect(),
        None => patch.iter().collect(),
    };
    let (mut pi, mut si) = (0, 0);
    while pi < items.len() && si < order.len() {
        if items[pi].get(DIRECTIVE).is_some() {
            pi += 1;
            continue;
        }
        let equal = match key {
            Some(k) => merge_key_value(items[pi], k)? == merge_key_value(&order[si], k)?,
            None => items[pi] == &order[si],
        };
        if equal {
            pi += 1;
        }
        si += 1;
    }
    if pi < items.len() && si >= order.len() {
        return Err(PatchError::MergeFailed(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            Value::Array(patch.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

pub(super) struct Smp<'a> {
    pub(super) kind: &'a str,
}

impl Smp<'_> {
    pub(super) fn rule(&self, path: &[String]) -> ListRule {
        list_rule(self.kind, path)
    }

    pub(super) fn merge_map(
        &self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<Map<String, Value>, PatchError> {
        if let Some(directive) = patch.get(DIRECTIVE).cloned() {
            return match directive.as_str() {
                Some("replace") => {
                    patch.remove(DIRECTIVE);
                    self.merge_map(Map::new(), patch, path)
                }
                Some("delete") => Ok(Map::new()),
                _ => Err(PatchError::MergeFailed(format!(
                    "unknown patch type: {} in map: {}",
                    directive
                        .as_str()
                        .map_or_else(|| directive.to_string(), str::to_string),
                    Value::Object(patch)
                ))),
            };
        }

        if let Some(retain) = patch.remove(RETAIN_KEYS) {
            let bad = || PatchError::BadRequest("invalid patch format of retainKeys".to_string());
            let Value::Array(retain) = retain else {
                return Err(bad());
            };
            let retained = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
            for (k, v) in &patch {
                let exempt = v.is_null()
                    || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
                    || k.starts_with(SET_ELEMENT_ORDER);
                if !exempt && !retained(k) {
                    return Err(bad());
                }
            }
            original.retain(|k, _| retained(k));
        }

        let order_keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
            .cloned()
            .collect();
        for order_key in order_keys {
            let order = patch.remove(&order_key).unwrap_or(Value::Null);
            self.apply_set_element_order(&mut original, &mut patch, &order_key, order, path)?;
        }

        for (k, patch_v) in patch {
            if k.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
                let field = extract_directive_field(
                    &k,
                    DELETE_FROM_PRIMITIVE_LIST,
                    "invalid patch format of primitive list",
                )?;
                let Value::Array(to_delete) = patch_v else {
                    return Err(PatchError::BadRequest(
                        "invalid patch format of primitive list".to_string(),
                    ));
                };
                if let Some(Value::Array(list)) = original.get_mut(&field) {
                    list.retain(|v| !to_delete.contains(v));
                }
                continue;
            }
            if patch_v.is_null() {
                original.remove(&k);
                continue;
            }
            path.push(k.clone());
            let merged = match (original.remove(&k), patch_v) {
                (Some(Value::Object(o)), Value::Object(p)) => {
                    Value::Object(self.merge_map(o, p, path)?)
                }
                (Some(Value::Array(o)), Value::Array(p)) => {
                    Value::Array(self.merge_list(o, p, path)?)
                }
                (_, p) => self.materialize(p, path)?,
            };
            path.pop();
            original.insert(k, merged);
        }
        Ok(original)
    }

    /// Merges the list a `$setElementOrder/<field>` directive names and orders it.
    pub(super) fn apply_set_element_order(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        order_key: &str,
        order: Value,
        path: &mut Vec<String>,
    ) -> Result<(), PatchError> {
        let field = extract_directive_field(
            order_key,
            SET_ELEMENT_ORDER,
            "invalid patch format of setElementOrder list",
        )?;
        let Value::Array(order) = order else {
            return Err(PatchError::BadRequest(
                "invalid patch format of setElementOrder list".to_string(),
            ));
        };
        let original_list = match original.get(&field) {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => {
                return Err(PatchError::MergeFailed(format!(
                    "expected a list at {field}, but received a {}",
                    json_type_name(other)
                )));
            }
        };
        let patch_list = match patch.remove(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a),
            Some(other) => {
                return Err(PatchError::MergeFailed(format!(
                    "expected a list at {field}, but received a {}",
                    json_type_name(&other)
                )));
            }
        };
        path.push(field.clone());
        let rule = self.rule(path);
        let key = match rule.smp {
            SmpList::MergeByKey(k) => Some(k),
            _ => None,
        };
        if let Some(p) = &patch_list {
            validate_set_element_order(p, &order, key)?;
        }
        let merged = match (original_list.clone(), patch_list) {
            (Some(o), None) => o,
            (None, Some(p)) => self.materialize_list(p, path)?,
            (Some(o), Some(p)) => self.merge_list(o, p, path)?,
            (None, None) => {
                path.pop();
                return Ok(());
            }
        };
        let merged = if rule.smp == SmpList::Replace {
            merged
        } else {
            let (in_order, server_only) = partition(merged, &order, key)?;
            let server_order = original_list.unwrap_or_default();
            normalize_element_order(in_order, server_only, &order, &server_order, key)?
        };
        path.pop();
        original.insert(field, Value::Array(merged));
        Ok(())
    }

    pub(super) fn merge_list(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        match self.rule(path).smp {
            SmpList::Replace => self.materialize_atomic_list(patch, path),
            SmpList::MergePrimitives => self.merge_slice(original, patch, None, path),
            SmpList::MergeByKey(k) => self.merge_slice(original, patch, Some(k), path),
        }
    }

    pub(super) fn merge_slice(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        key: Option<&str>,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        if element_kind(&[&original, &patch])? != ElemKind::Object {
            let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
            for v in original.iter().chain(&patch) {
                if !merged.contains(v) {
                    merged.push(v.clone());
                }
            }
            let (in_patch, server_only) = partition(merged, &patch, None)?;
            return normalize_element_order(in_patch, server_only, &patch, &original, None);
        }
        let Some(key) = key else {
            return Err(PatchError::MergeFailed(format!(
                "cannot merge lists without merge key for {}",
                path.join(".")
            )));
        };
        let (original, patch) = self.apply_special_elements(original, patch, key, path)?;
        let mut merged = original.clone();
        for item in &patch {
            let wanted = merge_key_value(item, key)?;
            let mut found = None;
            for (i, v) in merged.iter().enumerate() {
                let Value::Object(m) = v else {
                    return Err(PatchError::MergeFailed(format!(
                        "value for key {i} is not a map."
                    )));
                };
                if m.get(key) == Some(wanted) {
                    found = Some(i);
                    break;
                }
            }
            let Value::Object(patch_map) = item else {
                return Err(PatchError::MergeFailed(format!(
                    "patch element {item} is not a map"
                )));
            };
            match found {
                Some(i) => {
                    let current = match merged[i].take() {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    merged[i] = Value::Object(self.merge_map(current, patch_map.clone(), path)?);
                }
                None => merged.push(Value::Object(self.merge_map(
                    Map::new(),
                    patch_map.clone(),
                    path,
                )?)),
            }
        }
        let (in_patch, server_only) = partition(merged, &patch, Some(key))?;
        normalize_element_order(in_patch, server_only, &patch, &original, Some(key))
    }

    /// Handles `$patch` elements of a keyed list: deletions apply to `original`, a
    /// `replace` element makes the rest of the patch the whole list.
    pub(super) fn apply_special_elements(
        &self,
        mut original: Vec<Value>,
        patch: Vec<Value>,
        key: &str,
        path: &mut Vec<String>,
    ) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
        let mut plain = Vec::new();
        let mut replace = false;
        for item in patch {
            let Some(directive) = item.get(DIRECTIVE) else {
                plain.push(item);
                continue;
            };
            match directive.as_str() {
                Some("delete") => {
                    let wanted = merge_key_value(&item, key)?.clone();
                    original.retain(|v| v.get(key) != Some(&wanted));
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(PatchError::MergeFailed(
                        "merging lists cannot yet be specified in the patch".to_string(),
                    ));
                }
                _ => {
                    return Err(PatchError::MergeFailed(format!(
                        "unknown patch type: {directive} in map: {item}"
                    )));
                }
            }
        }
        if replace {
            let items = self.materialize_atomic_list(plain, path)?;
            return Ok((items, Vec::new()));
        }
        Ok((original, plain))
    }

    /// A patch value placed where the original has nothing: merged into emptiness,
    /// which drops `null`s and directives.
    pub(super) fn materialize(
        &self,
        v: Value,
        path: &mut Vec<String>,
    ) -> Result<Value, PatchError> {
        Ok(match v {
            Value::Object(m) => Value::Object(self.merge_map(Map::new(), m, path)?),
            Value::Array(items) => Value::Array(self.materialize_list(items, path)?),
            other => other,
        })
    }

    pub(super) fn materialize_list(
        &self,
        items: Vec<Value>,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        match self.rule(path).smp {
            SmpList::Replace => self.materialize_atomic_list(items, path),
            SmpList::MergePrimitives => self.merge_slice(Vec::new(), items, None, path),
            SmpList::MergeByKey(k) => self.merge_slice(Vec::new(), items, Some(k), path),
        }
    }

    pub(super) fn materialize_atomic_list(
        &self,
        items: Vec<Value>,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        items
            .into_iter()
            .map(|v| match v {
                Value::Object(m) => Ok(Value::Object(self.merge_map(Map::new(), m, path)?)),
                other => Ok(other),
            })
            .collect()
    }
}
