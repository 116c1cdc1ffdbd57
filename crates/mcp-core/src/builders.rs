//! The builder methods every component definition and every in-process request share,
//! written once: `title`, `description`, `tag`, `tags`, `icons`, `meta`, `version` and
//! `requires` for
//! [`ToolDef`](crate::ToolDef), [`ResourceDef`](crate::ResourceDef) and
//! [`PromptDef`](crate::PromptDef); `version`, `version_spec`, `scope` and
//! `without_middleware` for [`ToolCall`](crate::ToolCall),
//! [`ResourceRead`](crate::ResourceRead) and [`PromptGet`](crate::PromptGet).

/// Metadata builders for a definition with `title`, `description`, `tags`, `icons`, `meta`,
/// `version` and `requirement` fields. `$new` is an expression building one, for the doc examples.
macro_rules! metadata_builders {
    ($ty:ident, $new:literal) => {
        impl $ty {
            /// A human-readable title.
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".title(\"Title\");\n```")]
            pub fn title(mut self, title: impl Into<String>) -> Self {
                self.title = Some(title.into());
                self
            }

            /// The description clients and models read.
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".description(\"What it does\");\n```")]
            pub fn description(mut self, description: impl Into<String>) -> Self {
                self.description = Some(description.into());
                self
            }

            /// Adds one tag (used by visibility rules and middleware).
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".tag(\"admin\");\n```")]
            pub fn tag(mut self, tag: impl Into<String>) -> Self {
                self.tags.insert(tag.into());
                self
            }

            /// Adds several tags.
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".tags([\"a\", \"b\"]);\n```")]
            pub fn tags<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> Self {
                self.tags.extend(tags.into_iter().map(Into::into));
                self
            }

            /// Icons clients may show.
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".icons(vec![]);\n```")]
            pub fn icons(mut self, icons: Vec<ferrymcp_types::Icon>) -> Self {
                self.icons = Some(icons);
                self
            }

            /// Extra `_meta` on the listing entry.
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".meta(Default::default());\n```")]
            pub fn meta(mut self, meta: ferrymcp_types::MetaObject) -> Self {
                self.meta = Some(meta);
                self
            }

            /// The version. Integers convert to strings (`0` is the version `"0"`); a
            /// version containing `@` is rejected at registration. Requests get the
            /// highest version unless they select one.
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".version(2);\n```")]
            pub fn version(mut self, version: impl std::fmt::Display) -> Self {
                self.version = Some(version.to_string());
                self
            }

            /// Who may use it: scopes (`["files:read"]`, `"admin"`) or any
            /// [`Requirement`](crate::auth::Requirement). Called again, both requirements
            /// apply. A caller that does not meet it does not see it in listings (unless
            /// the server says otherwise, [`Server::hide_unauthorized`](crate::Server::hide_unauthorized))
            /// and cannot use it; an anonymous caller never can.
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".requires([\"files:read\"]);\n```")]
            pub fn requires(mut self, requirement: impl Into<$crate::auth::Requirement>) -> Self {
                self.requirement = std::mem::take(&mut self.requirement).and(requirement.into());
                self
            }
        }
    };
}

/// Option builders for an in-process request with `version`, `scope` and `run_middleware`
/// fields. `$new` is an expression building one, for the doc examples.
macro_rules! request_builders {
    ($ty:ident, $new:literal) => {
        impl $ty {
            /// Selects exactly this version.
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".version(\"1.0\");\n```")]
            pub fn version(mut self, version: impl std::fmt::Display) -> Self {
                let version = version.to_string();
                self.version = Some(
                    $crate::version::Version::new(version.clone())
                        .map($crate::version::VersionSpec::exact)
                        .map_err(|e| format!("invalid version {version:?}: {e}")),
                );
                self
            }

            /// Selects the highest version `spec` accepts.
            ///
            #[doc = concat!("```\nuse ferrymcp_core::version::{Version, VersionSpec};\nlet spec = VersionSpec::range(None, Some(Version::new(\"2.0\").unwrap()));\nlet _ = ", $new, ".version_spec(spec);\n```")]
            pub fn version_spec(mut self, spec: $crate::version::VersionSpec) -> Self {
                self.version = Some(Ok(spec));
                self
            }

            /// The request scope (protocol version, `_meta`, principal, input responses,
            /// cancellation...).
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".scope(ferrymcp_core::RequestScope::new());\n```")]
            pub fn scope(mut self, scope: $crate::RequestScope) -> Self {
                self.scope = scope;
                self
            }

            /// Runs no middleware and no extension interceptor at any level.
            ///
            #[doc = concat!("```\nlet _ = ", $new, ".without_middleware();\n```")]
            pub fn without_middleware(mut self) -> Self {
                self.run_middleware = false;
                self
            }
        }
    };
}

pub(crate) use {metadata_builders, request_builders};
