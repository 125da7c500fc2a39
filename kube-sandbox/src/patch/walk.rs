//! Walking objects with the apply schema: the field set an object or a change covers.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::Value;

use super::fieldset::{FieldPath, FieldSet, item_key, names_of, path_string, pe_field, pe_value};
use super::strategy::{SsaList, in_zero_value, is_atomic_object, list_rule};

#[derive(Default)]
pub(super) struct Comparison {
    pub(super) added: FieldSet,
    pub(super) modified: FieldSet,
    pub(super) removed: FieldSet,
}

pub(super) struct Walker<'a> {
    pub(super) kind: &'a str,
    /// Apply configurations must be well formed; live objects are read leniently.
    pub(super) strict: bool,
}

impl Walker<'_> {
    pub(super) fn list(&self, names: &[String]) -> SsaList {
        list_rule(self.kind, names).ssa
    }

    pub(super) fn atomic_object(&self, names: &[String]) -> bool {
        is_atomic_object(self.kind, names)
    }

    pub(super) fn field_set(&self, v: &Value) -> Result<FieldSet, String> {
        let mut set = FieldSet::default();
        self.walk(v, &mut Vec::new(), &mut Vec::new(), &mut set)?;
        Ok(set)
    }

    /// Adds the members of `v` (at `elems`) to `set`: leaves, empty objects, list items.
    pub(super) fn walk(
        &self,
        v: &Value,
        names: &mut Vec<String>,
        elems: &mut FieldPath,
        set: &mut FieldSet,
    ) -> Result<(), String> {
        match v {
            Value::Object(m) if !self.atomic_object(names) => {
                for (k, child) in m {
                    if child.is_null() && !self.strict {
                        continue;
                    }
                    names.push(k.clone());
                    elems.push(pe_field(k));
                    match child {
                        Value::Object(cm) if cm.is_empty() => set.insert(elems),
                        Value::Object(_) | Value::Array(_) => {
                            self.walk(child, names, elems, set)?
                        }
                        _ => set.insert(elems),
                    }
                    names.pop();
                    elems.pop();
                }
                Ok(())
            }
            Value::Array(items) => self.walk_list(items, names, elems, set),
            _ => {
                set.insert(elems);
                Ok(())
            }
        }
    }

    pub(super) fn walk_list(
        &self,
        items: &[Value],
        names: &mut Vec<String>,
        elems: &mut FieldPath,
        set: &mut FieldSet,
    ) -> Result<(), String> {
        match self.list(names) {
            SsaList::Atomic => set.insert(elems),
            SsaList::Set => {
                if items.iter().any(|v| v.is_object() || v.is_array()) {
                    if self.strict {
                        return Err(format!(
                            "{}: expected a list of scalars",
                            path_string(elems)
                        ));
                    }
                    set.insert(elems);
                    return Ok(());
                }
                for item in items {
                    elems.push(pe_value(item));
                    set.insert(elems);
                    elems.pop();
                }
            }
            SsaList::Map(keys) => {
                let mut seen = HashSet::new();
                for item in items {
                    let pe = match item_key(item, keys) {
                        Ok(pe) => pe,
                        Err(e) if self.strict => {
                            return Err(format!("{}: {e}", path_string(elems)));
                        }
                        Err(_) => continue,
                    };
                    if !seen.insert(pe.clone()) {
                        if self.strict {
                            let mut dup = elems.clone();
                            dup.push(pe);
                            return Err(format!("duplicate entries for key {}", path_string(&dup)));
                        }
                        continue;
                    }
                    elems.push(pe);
                    set.insert(elems);
                    self.walk(item, names, elems, set)?;
                    elems.pop();
                }
            }
        }
        Ok(())
    }

    /// The path element of a list item under the list at `names`.
    pub(super) fn element_pe(
        &self,
        item: &Value,
        index: usize,
        names: &[String],
    ) -> Option<String> {
        match self.list(names) {
            SsaList::Set => Some(pe_value(item)),
            SsaList::Map(keys) => item_key(item, keys).ok(),
            SsaList::Atomic => Some(format!("i:{index}")),
        }
    }

    pub(super) fn find_item(&self, items: &[Value], names: &[String], pe: &str) -> Option<usize> {
        (0..items.len()).find(|&i| self.element_pe(&items[i], i, names).as_deref() == Some(pe))
    }

    pub(super) fn get<'v>(&self, v: &'v Value, path: &[String]) -> Option<&'v Value> {
        let mut cur = v;
        for (i, pe) in path.iter().enumerate() {
            cur = match cur {
                Value::Object(m) => m.get(pe.strip_prefix("f:")?)?,
                Value::Array(items) => &items[self.find_item(items, &names_of(&path[..i]), pe)?],
                _ => return None,
            };
        }
        Some(cur)
    }

    pub(super) fn get_mut<'v>(&self, v: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
        let mut cur = v;
        for (i, pe) in path.iter().enumerate() {
            cur = match cur {
                Value::Object(m) => m.get_mut(pe.strip_prefix("f:")?)?,
                Value::Array(items) => {
                    let idx = self.find_item(items, &names_of(&path[..i]), pe)?;
                    items.get_mut(idx)?
                }
                _ => return None,
            };
        }
        Some(cur)
    }

    pub(super) fn remove(&self, v: &mut Value, path: &[String]) -> bool {
        let Some((last, parent_path)) = path.split_last() else {
            return false;
        };
        match self.get_mut(v, parent_path) {
            Some(Value::Object(m)) => last
                .strip_prefix("f:")
                .is_some_and(|f| m.remove(f).is_some()),
            Some(Value::Array(items)) => {
                match self.find_item(items, &names_of(parent_path), last) {
                    Some(idx) => {
                        items.remove(idx);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }

    /// Compares two versions of an object field by field. `null` counts as absent.
    /// With `mark_new_nodes`, newly created lists, maps and objects (all but the structs of
    /// the kind's zero value) are recorded as members.
    pub(super) fn diff(
        &self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        names: &mut Vec<String>,
        elems: &mut FieldPath,
        cmp: &mut Comparison,
        mark_new_nodes: bool,
    ) {
        let lhs = lhs.filter(|v| !v.is_null());
        let rhs = rhs.filter(|v| !v.is_null());
        match (lhs, rhs) {
            (None, None) => {}
            // Equal subtrees add, change and remove nothing; comparing them is much cheaper
            // than walking them (most writes change a small part of an object).
            (Some(l), Some(r)) if l == r => {}
            (Some(_), None) => cmp.removed.insert(elems),
            (None, Some(r)) => self.added(r, names, elems, cmp, mark_new_nodes),
            (Some(Value::Object(l)), Some(Value::Object(r))) if !self.atomic_object(names) => {
                for k in l.keys().chain(r.keys().filter(|k| !l.contains_key(*k))) {
                    names.push(k.clone());
                    elems.push(pe_field(k));
                    self.diff(l.get(k), r.get(k), names, elems, cmp, mark_new_nodes);
                    names.pop();
                    elems.pop();
                }
            }
            (Some(Value::Array(l)), Some(Value::Array(r))) => {
                self.diff_list(l, r, names, elems, cmp, mark_new_nodes);
            }
            (Some(l), Some(r)) => {
                if l != r {
                    cmp.modified.insert(elems);
                }
            }
        }
    }

    /// Records everything in a value that is new, as members of `cmp.added`.
    pub(super) fn added(
        &self,
        r: &Value,
        names: &mut Vec<String>,
        elems: &mut FieldPath,
        cmp: &mut Comparison,
        mark_new_nodes: bool,
    ) {
        cmp.added
            .graft(elems, self.added_tree(r, names, mark_new_nodes));
    }

    /// The members a new value adds, as a tree rooted at the value: built bottom-up, so
    /// that a whole new object costs one pass instead of one walk from the root per field.
    pub(super) fn added_tree(
        &self,
        r: &Value,
        names: &mut Vec<String>,
        mark_new_nodes: bool,
    ) -> FieldSet {
        let mut set = FieldSet::default();
        match r {
            Value::Null => {}
            // An empty struct the zero value holds already is no change.
            Value::Object(m) if m.is_empty() => {
                set.member = !(mark_new_nodes && in_zero_value(self.kind, names));
            }
            Value::Object(m) if !self.atomic_object(names) => {
                set.member = mark_new_nodes && !in_zero_value(self.kind, names);
                for (k, child) in m {
                    names.push(k.clone());
                    let sub = self.added_tree(child, names, mark_new_nodes);
                    names.pop();
                    if !sub.is_empty() {
                        set.children.insert(pe_field(k), sub);
                    }
                }
            }
            Value::Array(items) => match self.index_items(items, names) {
                None => set.member = true,
                Some(indexed) => {
                    set.member = mark_new_nodes && !in_zero_value(self.kind, names);
                    for (pe, item) in indexed {
                        let mut sub = match item.is_object() {
                            true => self.added_tree(item, names, mark_new_nodes),
                            false => FieldSet::default(),
                        };
                        sub.member = true;
                        set.children.entry(pe).or_default().union_with(&sub);
                    }
                }
            },
            _ => set.member = true,
        }
        set
    }

    pub(super) fn diff_list(
        &self,
        l: &[Value],
        r: &[Value],
        names: &mut Vec<String>,
        elems: &mut FieldPath,
        cmp: &mut Comparison,
        mark_new_nodes: bool,
    ) {
        let (Some(left), Some(right)) = (self.index_items(l, names), self.index_items(r, names))
        else {
            if l != r {
                cmp.modified.insert(elems);
            }
            return;
        };
        let left_by_pe: HashMap<&str, &Value> =
            left.iter().map(|(pe, v)| (pe.as_str(), *v)).collect();
        let right_pes: HashSet<&str> = right.iter().map(|(pe, _)| pe.as_str()).collect();
        for (pe, item) in &right {
            elems.push(pe.clone());
            match left_by_pe.get(pe.as_str()) {
                Some(old) => self.diff(Some(old), Some(item), names, elems, cmp, mark_new_nodes),
                None => {
                    cmp.added.insert(elems);
                    if item.is_object() {
                        self.added(item, names, elems, cmp, mark_new_nodes);
                    }
                }
            }
            elems.pop();
        }
        for (pe, _) in &left {
            if !right_pes.contains(pe.as_str()) {
                elems.push(pe.clone());
                cmp.removed.insert(elems);
                elems.pop();
            }
        }
    }

    /// Items of a set or list-map keyed by path element (first of duplicates wins);
    /// `None` for atomic lists and lists whose items cannot be keyed.
    pub(super) fn index_items<'v>(
        &self,
        items: &'v [Value],
        names: &[String],
    ) -> Option<Vec<(String, &'v Value)>> {
        let list = self.list(names);
        if list == SsaList::Atomic {
            return None;
        }
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            if list == SsaList::Set && (item.is_object() || item.is_array()) {
                return None;
            }
            let pe = self.element_pe(item, i, names)?;
            if seen.insert(pe.clone()) {
                out.push((pe, item));
            }
        }
        Some(out)
    }

    /// Merges an apply configuration into the live object: objects merge deeply,
    /// sets and list-maps merge per item, everything else is replaced.
    pub(super) fn merge(
        &self,
        lhs: Option<&Value>,
        rhs: &Value,
        names: &mut Vec<String>,
    ) -> Result<Value, String> {
        match (lhs, rhs) {
            (Some(Value::Object(l)), Value::Object(r)) if !self.atomic_object(names) => {
                let mut out = l.clone();
                for (k, rv) in r {
                    names.push(k.clone());
                    let merged = self.merge(l.get(k).filter(|v| !v.is_null()), rv, names)?;
                    names.pop();
                    if merged.is_null() {
                        out.remove(k);
                    } else {
                        out.insert(k.clone(), merged);
                    }
                }
                Ok(Value::Object(out))
            }
            (Some(Value::Array(l)), Value::Array(r)) => match self.list(names) {
                SsaList::Atomic => Ok(without_nulls(rhs)),
                SsaList::Set => self.merge_items(l, r, names, |v, _| Ok(pe_value(v))),
                SsaList::Map(keys) => self.merge_items(l, r, names, |v, _| item_key(v, keys)),
            },
            (_, r) => Ok(without_nulls(r)),
        }
    }

    /// Merges associative lists keeping both orders where possible (a port of
    /// structured-merge-diff's list merge): live-only items stay where they were,
    /// applied items follow the configuration's order.
    pub(super) fn merge_items(
        &self,
        l: &[Value],
        r: &[Value],
        names: &mut Vec<String>,
        pe_of: impl Fn(&Value, usize) -> Result<String, String>,
    ) -> Result<Value, String> {
        let rhs_pes: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, v)| pe_of(v, i))
            .collect::<Result<_, _>>()?;
        let lhs_pes: Vec<Option<String>> = l
            .iter()
            .enumerate()
            .map(|(i, v)| pe_of(v, i).ok())
            .collect();
        let mut observed_lhs: HashMap<&str, usize> = HashMap::new();
        for (i, pe) in lhs_pes.iter().enumerate() {
            if let Some(pe) = pe {
                observed_lhs.entry(pe.as_str()).or_insert(i);
            }
        }
        let observed_rhs: HashSet<&str> = rhs_pes.iter().map(String::as_str).collect();
        let mut shared: VecDeque<&str> = rhs_pes
            .iter()
            .map(String::as_str)
            .filter(|pe| observed_lhs.contains_key(pe))
            .collect();
        let mut next_shared = shared.pop_front();
        let mut merged_rhs: HashSet<&str> = HashSet::new();
        let mut out = Vec::with_capacity(l.len() + r.len());
        let (mut li, mut ri) = (0, 0);
        while li < l.len() || ri < r.len() {
            let lpe = lhs_pes.get(li).and_then(|p| p.as_deref());
            if li < l.len() && ri < r.len() {
                if lpe == Some(rhs_pes[ri].as_str()) {
                    merged_rhs.insert(rhs_pes[ri].as_str());
                    push_non_null(&mut out, self.merge(Some(&l[li]), &r[ri], names)?);
                    li += 1;
                    ri += 1;
                    next_shared = shared.pop_front();
                    continue;
                }
                if let Some(pe) = lpe
                    && observed_rhs.contains(pe)
                    && next_shared.is_some_and(|s| s != pe)
                {
                    li += 1;
                    continue;
                }
            }
            if li < l.len() {
                match lpe {
                    Some(pe) if observed_rhs.contains(pe) => {
                        if merged_rhs.contains(pe) {
                            li += 1;
                            continue;
                        }
                    }
                    _ => {
                        out.push(l[li].clone());
                        li += 1;
                        continue;
                    }
                }
            }
            if ri < r.len() {
                let pe = rhs_pes[ri].as_str();
                merged_rhs.insert(pe);
                let live = observed_lhs.get(pe).map(|&i| &l[i]);
                push_non_null(&mut out, self.merge(live, &r[ri], names)?);
                ri += 1;
                if next_shared == Some(pe) {
                    next_shared = shared.pop_front();
                }
            }
        }
        Ok(Value::Array(out))
    }
}

pub(super) fn push_non_null(out: &mut Vec<Value>, v: Value) {
    if !v.is_null() {
        out.push(v);
    }
}

/// A copy of `v` without `null` object fields.
pub(super) fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}
