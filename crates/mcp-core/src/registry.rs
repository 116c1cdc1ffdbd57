//! The versioned, copy-on-write table each server keeps per component kind (tools,
//! resources, resource templates, prompts).
//!
//! Every kind follows the same rules: a key (name or URI) holds one or more versions, highest
//! first; a key is either always versioned or never on one server; the same key and
//! version cannot be registered twice; listing keeps registration order.

use std::{
    collections::{BTreeSet, HashMap},
    sync::Arc,
};

use ferrymcp_types::{JsonObject, MetaObject, meta};
use serde_json::Value;

use crate::{ServerError, version::Version};

/// Stamps `_meta.fastmcp.version` on a listing entry's meta, as FastMCP does.
pub(crate) fn stamp_version(target: &mut Option<MetaObject>, version: Option<&Version>) {
    let Some(version) = version else { return };
    let fastmcp = target
        .get_or_insert_with(MetaObject::new)
        .entry(meta::FASTMCP)
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Some(fastmcp) = fastmcp.as_object_mut() {
        fastmcp.insert(meta::VERSION.into(), Value::String(version.to_string()));
    }
}

/// What the registry needs to know about a registered component.
pub(crate) trait Registered: Send + Sync + 'static {
    /// "tool", "resource", "resource template" or "prompt", for error messages.
    const KIND: &'static str;
    /// The key lookups use: the name, or the URI (template) for resources.
    fn key(&self) -> &Arc<str>;
    fn version(&self) -> Option<&Version>;
    fn tags(&self) -> &BTreeSet<String>;
}

/// One server's components of one kind.
pub(crate) struct Registry<C> {
    /// Every version of a key, highest first.
    by_key: HashMap<Arc<str>, Vec<Arc<C>>>,
    /// Registration order, for listing.
    order: Vec<Arc<C>>,
}

impl<C> Default for Registry<C> {
    fn default() -> Self {
        Self {
            by_key: HashMap::new(),
            order: Vec::new(),
        }
    }
}

impl<C> Clone for Registry<C> {
    fn clone(&self) -> Self {
        Self {
            by_key: self.by_key.clone(),
            order: self.order.clone(),
        }
    }
}

impl<C: Registered> Registry<C> {
    /// Adds `component`, enforcing that a key is always or never versioned, and uniqueness of
    /// key + version on `server`.
    pub(crate) fn insert(&mut self, component: Arc<C>, server: &str) -> Result<(), ServerError> {
        let versions = self.by_key.entry(Arc::clone(component.key())).or_default();
        if let Some(existing) = versions.first()
            && existing.version().is_some() != component.version().is_some()
        {
            return Err(ServerError::MixedVersioning {
                kind: C::KIND,
                name: component.key().to_string(),
                server: server.to_owned(),
            });
        }
        if versions.iter().any(|c| c.version() == component.version()) {
            return Err(ServerError::Duplicate {
                kind: C::KIND,
                name: component.key().to_string(),
                version: component.version().map(ToString::to_string),
                server: server.to_owned(),
            });
        }
        versions.push(Arc::clone(&component));
        versions.sort_by(|a, b| b.version().cmp(&a.version()));
        self.order.push(component);
        Ok(())
    }

    /// Removes every version of `key`; whether there was one.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        if self.by_key.remove(key).is_none() {
            return false;
        }
        self.order.retain(|c| &**c.key() != key);
        true
    }

    /// The versions of `key`, highest first.
    pub(crate) fn versions(&self, key: &str) -> &[Arc<C>] {
        self.by_key.get(key).map_or(&[], Vec::as_slice)
    }

    /// Everything, in registration order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<C>> {
        self.order.iter()
    }
}
