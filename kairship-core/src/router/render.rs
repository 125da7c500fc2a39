//! Kubernetes list answers rendered as JSON, from pre-rendered item bytes when the backend
//! keeps them.

use std::io::Write as _;

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;

use super::query::ObjectPage;

/// The `metadata` of a list answer for `page`: its resourceVersion and, when objects remain,
/// the `continue` token and `remainingItemCount`.
pub fn list_meta(page: &ObjectPage) -> ListMeta {
    let token = page.continue_token();
    ListMeta {
        resource_version: page.resource_version.clone(),
        remaining_item_count: token
            .as_ref()
            .map(|_| i64::try_from(page.remaining()).unwrap_or(i64::MAX)),
        continue_: token.map(|t| t.encode()),
        self_link: None,
    }
}

/// The size of the pieces [`ListChunks`] writes a list answer in: large enough that a piece
/// costs little per byte, small enough that an answer never sits whole in memory twice.
pub const LIST_CHUNK_BYTES: usize = 64 * 1024;

/// `page` as a Kubernetes `…List` (`{"kind", "apiVersion", "metadata", "items"}`, in the order
/// kube-apiserver writes them) in JSON. Items the backend rendered in advance
/// ([`ObjectPage::rendered`]) are copied as bytes; the others are serialized here.
pub fn render_list(
    page: &ObjectPage,
    api_version: &str,
    list_kind: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(rendered_len(page).unwrap_or(page.items.len() * 512) + 256);
    for chunk in ListChunks::new(page.clone(), api_version, list_kind)? {
        out.extend_from_slice(&chunk?);
    }
    Ok(out)
}

/// The bytes the items of `page` take when all of them are rendered in advance.
pub fn rendered_len(page: &ObjectPage) -> Option<usize> {
    let rendered = page
        .rendered
        .as_ref()
        .filter(|r| r.len() == page.items.len())?;
    Some(rendered.iter().map(|b| b.len() + 1).sum())
}

/// A list answer written in pieces of about [`LIST_CHUNK_BYTES`], so that it can be sent (or
/// compressed) while it is written instead of being assembled whole first.
#[derive(Debug)]
pub struct ListChunks {
    page: ObjectPage,
    head: Option<Vec<u8>>,
    next: usize,
    done: bool,
}

impl ListChunks {
    /// The pieces of `page` as a `list_kind` of `api_version`.
    pub fn new(
        page: ObjectPage,
        api_version: &str,
        list_kind: &str,
    ) -> Result<Self, serde_json::Error> {
        let mut head = Vec::with_capacity(256);
        head.extend_from_slice(b"{\"kind\":");
        serde_json::to_writer(&mut head, list_kind)?;
        head.extend_from_slice(b",\"apiVersion\":");
        serde_json::to_writer(&mut head, api_version)?;
        head.extend_from_slice(b",\"metadata\":");
        serde_json::to_writer(&mut head, &list_meta(&page))?;
        head.extend_from_slice(b",\"items\":[");
        Ok(ListChunks {
            page,
            head: Some(head),
            next: 0,
            done: false,
        })
    }

    fn write_items(&mut self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let page = &self.page;
        let rendered = page
            .rendered
            .as_ref()
            .filter(|r| r.len() == page.items.len());
        while self.next < page.items.len() && out.len() < LIST_CHUNK_BYTES {
            if self.next > 0 {
                out.push(b',');
            }
            match rendered {
                Some(rendered) => out.extend_from_slice(&rendered[self.next]),
                None => serde_json::to_writer(&mut *out, page.items[self.next].as_ref())?,
            }
            self.next += 1;
        }
        Ok(())
    }
}

impl Iterator for ListChunks {
    type Item = Result<Bytes, serde_json::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut out = self
            .head
            .take()
            .unwrap_or_else(|| Vec::with_capacity(LIST_CHUNK_BYTES + 8 * 1024));
        if let Err(err) = self.write_items(&mut out) {
            self.done = true;
            return Some(Err(err));
        }
        if self.next >= self.page.items.len() {
            // Writing into a Vec cannot fail.
            let _ = out.write_all(b"]}");
            self.done = true;
        }
        Some(Ok(Bytes::from(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::{ContinueToken, ListQuery};
    use bytes::Bytes;
    use kube::core::DynamicObject;
    use serde_json::json;
    use std::sync::Arc;

    fn objects() -> Vec<Arc<DynamicObject>> {
        ["a", "b", "c"]
            .iter()
            .map(|n| {
                Arc::new(
                    serde_json::from_value(json!({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": n, "namespace": "ns"},
                        "data": {"k": n},
                    }))
                    .unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn rendered_and_serialized_lists_are_the_same_json() {
        let query = ListQuery::default().compile().unwrap();
        let plain = query.select(None, objects());
        let pre = query.select_rendered(
            None,
            objects().into_iter().map(|o| {
                let json = Bytes::from(serde_json::to_vec(o.as_ref()).unwrap());
                (o, json)
            }),
        );
        for chunk_limit in [None, Some(2)] {
            let mut a = plain.clone().chunk(None, chunk_limit);
            let mut b = pre.clone().chunk(None, chunk_limit);
            a.resource_version = Some("42".into());
            b.resource_version = Some("42".into());
            let a: serde_json::Value =
                serde_json::from_slice(&render_list(&a, "v1", "ConfigMapList").unwrap()).unwrap();
            let b: serde_json::Value =
                serde_json::from_slice(&render_list(&b, "v1", "ConfigMapList").unwrap()).unwrap();
            assert_eq!(a, b);
            assert_eq!(a["kind"], "ConfigMapList");
            assert_eq!(a["apiVersion"], "v1");
            assert_eq!(a["metadata"]["resourceVersion"], "42");
            match chunk_limit {
                None => {
                    assert_eq!(a["items"].as_array().unwrap().len(), 3);
                    assert!(a["metadata"].get("continue").is_none());
                    assert!(a["metadata"].get("remainingItemCount").is_none());
                }
                Some(_) => {
                    assert_eq!(a["items"].as_array().unwrap().len(), 2);
                    assert_eq!(a["metadata"]["remainingItemCount"], 1);
                    let token = a["metadata"]["continue"].as_str().unwrap();
                    assert_eq!(ContinueToken::decode(token).unwrap().name, "b");
                }
            }
        }
    }

    #[test]
    fn an_empty_page_is_an_empty_list() {
        let page = ListQuery::default()
            .compile()
            .unwrap()
            .select(None, Vec::new());
        let v: serde_json::Value =
            serde_json::from_slice(&render_list(&page, "apps/v1", "DeploymentList").unwrap())
                .unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": []})
        );
        let text = render_list(&page, "apps/v1", "DeploymentList").unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            r#"{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[]}"#
        );
    }
}
