//! Component versions (tools, resources, prompts), modelled on Python
//! FastMCP's component versions.
//!
//! A [`Version`] keeps the exact string the user gave and, computed once at
//! construction, a sort key: either a parsed [PEP 440] version or "plain
//! text". A [`VersionSpec`] says which versions a request accepts.
//!
//! | Rule | Behaviour |
//! | --- | --- |
//! | storage | the raw string is kept verbatim; integers become their decimal string (`0` → `"0"`, a real version) |
//! | validation | an empty or all-whitespace string is rejected, and so is any string containing `@` (`name@version` is a key format) |
//! | parsing | [PEP 440], via the `pep440_rs` crate: a leading `v`/`V` and surrounding whitespace are ignored, letters are case-insensitive (`1.0RC1` = `1.0rc1`) |
//! | ordering | PEP 440 versions compare as PEP 440 (`2` < `10`, `1.0.dev0` < `1.0a1` < `1.0b1` < `1.0rc1` < `1.0` < `1.0.post1`); non-PEP 440 strings compare byte-wise among themselves and sort **above** every PEP 440 version; equivalent spellings (`1`, `1.0`, `v1.0.0`) tie-break on the raw string |
//! | unversioned | callers model it as `Option<Version>`; `None < Some(_)`, so an unversioned component sorts lowest |
//! | `==` / `Hash` | identical raw string (consistent with `Ord`) |
//! | [`Version::matches`] | "same version": PEP 440 equality when both sides parse (`1` = `1.0` = `v1.0.0` ≠ `1.0.1`), otherwise the raw strings must be identical (`latest` ≠ `LATEST`, `vlatest` ≠ `latest`) |
//! | [`VersionSpec`] | `eq` uses [`Version::matches`]; `gte` is inclusive, `lt` exclusive, both on the sort key *without* the raw tie-break (so `1` satisfies `gte = 1.0`); an unversioned component (`None`) matches iff `include_unversioned` |
//!
//! Notes on edge cases:
//!
//! * Ranges use plain version order, not PEP 440 *specifier* rules: `2.0a1`
//!   is below `2.0`, so `lt = 2.0` admits it. Non-PEP 440 strings sort above
//!   every PEP 440 version, so `gte = 1.0` admits `latest` and `lt = 2.0`
//!   never does.
//! * A local label is part of the version: `1.0+local` ≠ `1.0` and sorts
//!   just above it.
//! * A release number that does not fit in a `u64` (e.g.
//!   `99999999999999999999999999`) is not PEP 440 here and is treated as
//!   plain text.
//!
//! Why a crate: PEP 440 has many spellings (`1.0-1` = `1.0.post1`,
//! `1.0alpha` = `1.0a0`, epochs, local labels); `pep440_rs` (the uv team's
//! parser, also published on its own) implements all of them, compares
//! without allocating, and only brings `once_cell`, `unicode-width` and
//! `unscanny`.
//!
//! ```rust
//! use ferrymcp_core::version::{Version, VersionSpec};
//!
//! let mut versions: Vec<Version> = ["latest", "10", "v2", "1.0rc1", "1.0"]
//!     .into_iter()
//!     .map(Version::new)
//!     .collect::<Result<_, _>>()?;
//! versions.sort();
//! let order: Vec<&str> = versions.iter().map(Version::as_str).collect();
//! assert_eq!(order, ["1.0rc1", "1.0", "v2", "10", "latest"]);
//!
//! let spec = VersionSpec::range(Some(Version::new("1.0")?), Some(Version::new("10")?));
//! assert!(spec.matches(Some(&Version::new("v2")?)));
//! assert!(!spec.matches(Some(&Version::new("10")?)));
//! assert!(spec.matches(None)); // unversioned components match by default
//! # Ok::<(), ferrymcp_core::version::VersionError>(())
//! ```
//!
//! [PEP 440]: https://peps.python.org/pep-0440/

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a string is not an acceptable version.
///
/// ```rust
/// use ferrymcp_core::version::{Version, VersionError};
///
/// assert_eq!(Version::new("  "), Err(VersionError::Empty));
/// let err = Version::new("1.0@beta").unwrap_err();
/// assert!(err.to_string().contains("cannot contain '@'"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    /// The version was empty or only whitespace.
    #[error("version must not be empty")]
    Empty,
    /// The version contained `@`, which separates name and version in keys.
    #[error("invalid version {version:?}: a version cannot contain '@'")]
    ContainsAt {
        /// The rejected string.
        version: String,
    },
}

/// The sort key, computed once from the raw string.
#[derive(Clone, Debug)]
enum Key {
    /// The raw string parses as PEP 440.
    Pep440(pep440_rs::Version),
    /// Anything else: compared as the raw string.
    Text,
}

/// A component version, stored as the raw string the user gave.
///
/// Two relations are defined, on purpose different:
///
/// * `==`, [`Hash`] and [`Ord`] work on the *identity* of the version: two
///   values are equal only if their raw strings are identical, and the order
///   (PEP 440 versions by PEP 440, then plain text above them, then the raw
///   string as a tie-break) is a total order consistent with `==`. Use these
///   for maps, sets, sorting and picking the highest version.
/// * [`Version::matches`] is the looser "same version" relation used to
///   answer requests: `1`, `1.0` and `v1.0.0` all match each other.
///
/// An unversioned component is `None` in an `Option<Version>`, which sorts
/// below every `Some`.
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// let one = Version::new("1")?;
/// let one_zero = Version::new("1.0")?;
/// assert_ne!(one, one_zero); // different raw strings
/// assert!(one.matches(&one_zero)); // but the same version
/// assert!(one < one_zero); // equivalent spellings tie-break on the raw string
/// assert!(Version::new("10")? > Version::new("2")?);
/// assert!(Version::new("latest")? > Version::new("999")?);
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Version {
    raw: Arc<str>,
    key: Key,
}

impl Version {
    /// Validates and parses a version string.
    ///
    /// Fails with [`VersionError::Empty`] for an empty or all-whitespace
    /// string and with [`VersionError::ContainsAt`] for a string containing
    /// `@`. Any other string is accepted: it is either PEP 440 or plain text.
    ///
    /// ```rust
    /// use ferrymcp_core::version::Version;
    ///
    /// assert_eq!(Version::new("v1.2")?.as_str(), "v1.2");
    /// assert!(Version::new("").is_err());
    /// assert!(Version::new("1@2").is_err());
    /// # Ok::<(), ferrymcp_core::version::VersionError>(())
    /// ```
    pub fn new(raw: impl Into<String>) -> Result<Version, VersionError> {
        let raw: String = raw.into();
        if raw.trim().is_empty() {
            return Err(VersionError::Empty);
        }
        if raw.contains('@') {
            return Err(VersionError::ContainsAt { version: raw });
        }
        Ok(Self::from_valid(raw))
    }

    /// Builds a version from a string already known to be valid.
    fn from_valid(raw: String) -> Version {
        let key = match pep440_rs::Version::from_str(&raw) {
            Ok(parsed) => Key::Pep440(parsed),
            Err(_) => Key::Text,
        };
        Version {
            raw: Arc::from(raw),
            key,
        }
    }

    /// The raw string, exactly as given.
    ///
    /// ```rust
    /// use ferrymcp_core::version::Version;
    ///
    /// assert_eq!(Version::new("V1.0.0")?.as_str(), "V1.0.0");
    /// # Ok::<(), ferrymcp_core::version::VersionError>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// Whether the version parsed as PEP 440 (otherwise it is plain text).
    ///
    /// ```rust
    /// use ferrymcp_core::version::Version;
    ///
    /// assert!(Version::new("v1.0rc1")?.is_pep440());
    /// assert!(!Version::new("latest")?.is_pep440());
    /// # Ok::<(), ferrymcp_core::version::VersionError>(())
    /// ```
    pub fn is_pep440(&self) -> bool {
        matches!(self.key, Key::Pep440(_))
    }

    /// Exact-version match: PEP 440 equality when both sides are PEP
    /// 440 (a `v` prefix is ignored, `1` = `1.0` = `1.0.0`), otherwise the
    /// raw strings must be identical. Looser than `==`, which compares raw
    /// strings.
    ///
    /// ```rust
    /// use ferrymcp_core::version::Version;
    ///
    /// let v = |s: &str| Version::new(s);
    /// assert!(v("v1")?.matches(&v("1.0.0")?));
    /// assert!(!v("1.0")?.matches(&v("1.0.1")?));
    /// assert!(v("latest")?.matches(&v("latest")?));
    /// assert!(!v("latest")?.matches(&v("LATEST")?));
    /// # Ok::<(), ferrymcp_core::version::VersionError>(())
    /// ```
    pub fn matches(&self, other: &Version) -> bool {
        self.key_cmp(other) == Ordering::Equal
    }

    /// Order on the sort key alone (no raw-string tie-break): PEP 440
    /// versions by PEP 440, then plain text byte-wise above them.
    fn key_cmp(&self, other: &Version) -> Ordering {
        match (&self.key, &other.key) {
            (Key::Pep440(a), Key::Pep440(b)) => a.cmp(b),
            (Key::Pep440(_), Key::Text) => Ordering::Less,
            (Key::Text, Key::Pep440(_)) => Ordering::Greater,
            (Key::Text, Key::Text) => self.raw.cmp(&other.raw),
        }
    }
}

/// Equal only when the raw strings are identical; see [`Version::matches`]
/// for "same version".
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// assert_eq!(Version::new("1.0")?, Version::new("1.0")?);
/// assert_ne!(Version::new("1.0")?, Version::new("1")?);
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl Eq for Version {}

/// Hashes the raw string, consistent with `==`.
///
/// ```rust
/// use std::collections::HashSet;
/// use ferrymcp_core::version::Version;
///
/// let set: HashSet<Version> = [Version::new("1")?, Version::new("1.0")?].into();
/// assert_eq!(set.len(), 2);
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
impl Hash for Version {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.raw.hash(state);
    }
}

/// The version order: PEP 440 versions by PEP 440, plain text above them
/// (byte-wise among themselves), equivalent spellings by raw string.
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// let v = |s: &str| Version::new(s);
/// assert!(v("1.0.dev0")? < v("1.0a1")?);
/// assert!(v("1.0")? < v("1.0.post1")?);
/// assert!(v("1.10.1")? > v("1.2.10")?);
/// assert!(v("1.0")? > v("1")?);
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key_cmp(other).then_with(|| self.raw.cmp(&other.raw))
    }
}

/// Same as [`Ord`].
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// assert!(Version::new("2")? < Version::new("10")?);
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Shows the raw string.
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// assert_eq!(Version::new("v1.0")?.to_string(), "v1.0");
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// The raw string.
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// let v = Version::new("2.1")?;
/// let s: &str = v.as_ref();
/// assert_eq!(s, "2.1");
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
impl AsRef<str> for Version {
    fn as_ref(&self) -> &str {
        &self.raw
    }
}

/// Same as [`Version::new`].
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// let v: Version = "1.0".parse()?;
/// assert_eq!(v.as_str(), "1.0");
/// assert!("a@b".parse::<Version>().is_err());
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
impl FromStr for Version {
    type Err = VersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Version::new(s)
    }
}

/// Same as [`Version::new`].
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// assert_eq!(Version::try_from("3")?.as_str(), "3");
/// assert!(Version::try_from("").is_err());
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
impl TryFrom<&str> for Version {
    type Error = VersionError;

    fn try_from(value: &str) -> Result<Self, Self::Error> {
        Version::new(value)
    }
}

/// Same as [`Version::new`].
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// assert_eq!(Version::try_from(String::from("3"))?.as_str(), "3");
/// assert!(Version::try_from(String::from("x@y")).is_err());
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
impl TryFrom<String> for Version {
    type Error = VersionError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Version::new(value)
    }
}

/// Integers convert to their decimal string; they are never empty and
/// never contain `@`, so the conversion cannot fail.
macro_rules! version_from_int {
    ($($int:ty),*) => {$(
        #[doc = concat!("Converts a `", stringify!($int), "` to its decimal string (H01).")]
        ///
        /// ```rust
        /// use ferrymcp_core::version::Version;
        ///
        #[doc = concat!("let v = Version::from(0", stringify!($int), ");")]
        /// assert_eq!(v.as_str(), "0");
        /// assert!(v.is_pep440());
        /// ```
        impl From<$int> for Version {
            fn from(value: $int) -> Self {
                Version::from_valid(value.to_string())
            }
        }
    )*};
}

version_from_int!(u32, u64, i32, i64);

/// Serializes as the plain raw string.
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// assert_eq!(serde_json::to_string(&Version::new("v1.0")?).unwrap(), r#""v1.0""#);
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.raw)
    }
}

/// Deserializes from a string, validated by [`Version::new`].
///
/// ```rust
/// use ferrymcp_core::version::Version;
///
/// let v: Version = serde_json::from_str(r#""2.0""#).unwrap();
/// assert_eq!(v.as_str(), "2.0");
/// assert!(serde_json::from_str::<Version>(r#""2@0""#).is_err());
/// ```
impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct VersionVisitor;

        impl Visitor<'_> for VersionVisitor {
            type Value = Version;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a version string")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Version, E> {
                Version::new(v).map_err(E::custom)
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Version, E> {
                Version::new(v).map_err(E::custom)
            }
        }

        deserializer.deserialize_string(VersionVisitor)
    }
}

/// Which versions a request accepts.
///
/// * `eq`: the version must [match](Version::matches) this one;
/// * `gte`: the version must sort at or above this one (inclusive);
/// * `lt`: the version must sort strictly below this one (exclusive);
/// * `include_unversioned`: whether an unversioned component (`None`)
///   matches; when it does, the other fields are not consulted for it.
///
/// `gte`/`lt` use the version order on the sort key without the raw-string
/// tie-break, so `1` is inside `gte = 1.0`. All set fields must hold.
/// [`Default`] is [`VersionSpec::any`].
///
/// ```rust
/// use ferrymcp_core::version::{Version, VersionSpec};
///
/// let spec = VersionSpec {
///     gte: Some(Version::new("1.0")?),
///     lt: Some(Version::new("2.0")?),
///     ..VersionSpec::default()
/// }
/// .excluding_unversioned();
/// assert!(spec.matches(Some(&Version::new("1.5")?)));
/// assert!(!spec.matches(Some(&Version::new("2.0")?)));
/// assert!(!spec.matches(None));
/// # Ok::<(), ferrymcp_core::version::VersionError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionSpec {
    /// Exact version ([`Version::matches`]).
    pub eq: Option<Version>,
    /// Inclusive lower bound.
    pub gte: Option<Version>,
    /// Exclusive upper bound.
    pub lt: Option<Version>,
    /// Whether unversioned components match (default `true`).
    pub include_unversioned: bool,
}

/// Same as [`VersionSpec::any`].
///
/// ```rust
/// use ferrymcp_core::version::VersionSpec;
///
/// assert_eq!(VersionSpec::default(), VersionSpec::any());
/// assert!(VersionSpec::default().include_unversioned);
/// ```
impl Default for VersionSpec {
    fn default() -> Self {
        Self::any()
    }
}

impl VersionSpec {
    /// Accepts exactly the versions that [match](Version::matches) `v`, plus
    /// unversioned components.
    ///
    /// ```rust
    /// use ferrymcp_core::version::{Version, VersionSpec};
    ///
    /// let spec = VersionSpec::exact(Version::new("1")?);
    /// assert!(spec.matches(Some(&Version::new("v1.0")?)));
    /// assert!(!spec.matches(Some(&Version::new("1.0.1")?)));
    /// # Ok::<(), ferrymcp_core::version::VersionError>(())
    /// ```
    pub fn exact(v: Version) -> Self {
        Self {
            eq: Some(v),
            ..Self::any()
        }
    }

    /// Accepts every version and unversioned components.
    ///
    /// ```rust
    /// use ferrymcp_core::version::{Version, VersionSpec};
    ///
    /// assert!(VersionSpec::any().matches(Some(&Version::new("anything")?)));
    /// assert!(VersionSpec::any().matches(None));
    /// # Ok::<(), ferrymcp_core::version::VersionError>(())
    /// ```
    pub fn any() -> Self {
        Self {
            eq: None,
            gte: None,
            lt: None,
            include_unversioned: true,
        }
    }

    /// Accepts `gte <= version < lt` (either bound optional), plus
    /// unversioned components.
    ///
    /// ```rust
    /// use ferrymcp_core::version::{Version, VersionSpec};
    ///
    /// let spec = VersionSpec::range(None, Some(Version::new("2")?));
    /// assert!(spec.matches(Some(&Version::new("1.9")?)));
    /// assert!(!spec.matches(Some(&Version::new("2.0")?)));
    /// # Ok::<(), ferrymcp_core::version::VersionError>(())
    /// ```
    pub fn range(gte: Option<Version>, lt: Option<Version>) -> Self {
        Self {
            gte,
            lt,
            ..Self::any()
        }
    }

    /// The same spec, but unversioned components no longer match.
    ///
    /// ```rust
    /// use ferrymcp_core::version::VersionSpec;
    ///
    /// assert!(!VersionSpec::any().excluding_unversioned().matches(None));
    /// ```
    pub fn excluding_unversioned(self) -> Self {
        Self {
            include_unversioned: false,
            ..self
        }
    }

    /// Whether a component with this version is accepted; `None` is an
    /// unversioned component.
    ///
    /// ```rust
    /// use ferrymcp_core::version::{Version, VersionSpec};
    ///
    /// let spec = VersionSpec {
    ///     eq: Some(Version::new("3")?),
    ///     lt: Some(Version::new("2")?),
    ///     ..VersionSpec::any()
    /// };
    /// // `eq` must satisfy the range too.
    /// assert!(!spec.matches(Some(&Version::new("3")?)));
    /// assert!(spec.matches(None));
    /// # Ok::<(), ferrymcp_core::version::VersionError>(())
    /// ```
    pub fn matches(&self, version: Option<&Version>) -> bool {
        let Some(version) = version else {
            return self.include_unversioned;
        };
        if let Some(eq) = &self.eq
            && !eq.matches(version)
        {
            return false;
        }
        if let Some(gte) = &self.gte
            && version.key_cmp(gte) == Ordering::Less
        {
            return false;
        }
        if let Some(lt) = &self.lt
            && version.key_cmp(lt) != Ordering::Less
        {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn v(s: &str) -> Version {
        match Version::new(s) {
            Ok(version) => version,
            Err(e) => panic!("test fixture {s:?} should be a valid version: {e}"),
        }
    }

    fn hash_of(version: &Version) -> u64 {
        let mut h = DefaultHasher::new();
        version.hash(&mut h);
        h.finish()
    }

    fn sorted(input: &[&str]) -> Vec<String> {
        let mut versions: Vec<Version> = input.iter().map(|s| v(s)).collect();
        versions.sort();
        versions.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn h01_int_versions() {
        assert_eq!(Version::from(0u32).as_str(), "0");
        assert_eq!(Version::from(42u64).as_str(), "42");
        assert_eq!(Version::from(-3i64).as_str(), "-3");
        assert_eq!(Version::from(7).as_str(), "7");
        // 0 is a real version: PEP 440, matches "0.0", below "1".
        let zero = Version::from(0u32);
        assert!(zero.is_pep440());
        assert!(zero.matches(&v("0.0")));
        assert!(zero < v("1"));
        assert_eq!(Version::from(2u64), v("2"));
    }

    #[test]
    fn h01_raw_string_kept() {
        assert_eq!(v("V1.0.0").as_str(), "V1.0.0");
        assert_eq!(v(" 1.0 ").as_str(), " 1.0 ");
        assert_eq!(v("v1.0").to_string(), "v1.0");
    }

    #[test]
    fn h04_at_rejected() {
        for bad in ["@", "1.0@beta", "tool@1", "@latest"] {
            match Version::new(bad) {
                Err(e @ VersionError::ContainsAt { .. }) => {
                    assert!(
                        e.to_string().contains("cannot contain '@'"),
                        "message was {e}"
                    );
                    assert_eq!(
                        e,
                        VersionError::ContainsAt {
                            version: bad.to_string()
                        }
                    );
                }
                other => panic!("{bad:?} should be rejected for '@', got {other:?}"),
            }
        }
        assert!(Version::try_from("a@b").is_err());
        assert!(Version::try_from(String::from("a@b")).is_err());
        assert!("a@b".parse::<Version>().is_err());
    }

    #[test]
    fn h04_empty_rejected() {
        for bad in ["", " ", "\t\n", "\u{3000}"] {
            assert_eq!(Version::new(bad), Err(VersionError::Empty), "{bad:?}");
        }
    }

    #[test]
    fn h05_numeric_ordering() {
        assert!(v("10") > v("2"));
        assert!(v("1.10.1") > v("1.2.10"));
        assert!(v("2.0") > v("1.99.99"));
        assert_eq!(
            sorted(&["10", "2", "1.10.1", "1.2.10", "1"]),
            ["1", "1.2.10", "1.10.1", "2", "10"]
        );
    }

    #[test]
    fn h05_pre_post_dev_ordering() {
        let expected = [
            "1.0.dev0",
            "1.0a1",
            "1.0b1",
            "1.0rc1",
            "1.0",
            "1.0.post1",
            "1.1",
        ];
        let mut shuffled = expected;
        shuffled.reverse();
        shuffled.swap(1, 4);
        assert_eq!(sorted(&shuffled), expected);
        // Alternative spellings follow PEP 440 too.
        assert!(v("1.0alpha1").matches(&v("1.0a1")));
        assert!(v("1.0-1").matches(&v("1.0.post1")));
        assert!(v("1.0RC1").matches(&v("1.0rc1")));
        assert!(v("1!0.1") > v("999"));
    }

    #[test]
    fn h05_v_prefix_ignored_in_ordering() {
        assert!(v("v10") > v("2"));
        assert!(v("V2") < v("10"));
        assert!(v("v2").is_pep440());
    }

    #[test]
    fn h05_non_pep440_sorts_above() {
        assert!(!v("latest").is_pep440());
        assert!(v("latest") > v("999999"));
        assert!(v("1..2") > v("1000"));
        assert!(v("beta") > v("alpha"));
        assert_eq!(
            sorted(&["latest", "2", "alpha", "1.0rc1", "beta"]),
            ["1.0rc1", "2", "alpha", "beta", "latest"]
        );
        // Unversioned (None) sorts below every version.
        assert!(None < Some(v("0")));
        assert!(None < Some(v("1.0.dev0")));
    }

    #[test]
    fn h05_equivalent_spellings_tiebreak_on_raw() {
        // Regardless of input order, the result is the same.
        let a = sorted(&["1.0", "v1.0.0", "1"]);
        let b = sorted(&["1", "1.0", "v1.0.0"]);
        assert_eq!(a, ["1", "1.0", "v1.0.0"]);
        assert_eq!(a, b);
        assert!(v("1.0") > v("1"));
        assert_eq!(
            [v("1.0"), v("1")].into_iter().max().map(|m| m.to_string()),
            Some("1.0".to_string())
        );
        // Ties stay below the next real version.
        assert!(v("v1.0.0") < v("1.0.1"));
    }

    #[test]
    fn h05_eq_hash_are_raw_identity() {
        assert_eq!(v("1.0"), v("1.0"));
        assert_ne!(v("1.0"), v("1"));
        assert_ne!(v("1.0").cmp(&v("1")), Ordering::Equal);
        assert_eq!(v("1.0").cmp(&v("1.0")), Ordering::Equal);
        assert_eq!(hash_of(&v("1.0")), hash_of(&v("1.0")));
        let set: std::collections::HashSet<Version> =
            [v("1"), v("1.0"), v("1")].into_iter().collect();
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn h06_v_prefix_ignored() {
        assert!(v("v1.0").matches(&v("1.0")));
        assert!(v("1.0").matches(&v("v1.0")));
        assert!(v("V2").matches(&v("v2.0")));
        assert!(!v("v1.0").matches(&v("1.1")));
        assert!(VersionSpec::exact(v("v3")).matches(Some(&v("3.0"))));
    }

    #[test]
    fn h06_pep440_equivalents_match() {
        assert!(v("1").matches(&v("1.0")));
        assert!(v("1.0").matches(&v("1.0.0")));
        assert!(v("1").matches(&v("v1.0.0")));
        assert!(!v("1").matches(&v("1.0.1")));
        assert!(!v("1.0").matches(&v("1.0.post1")));
        assert!(!v("1.0").matches(&v("1.0+local")));
        let spec = VersionSpec::exact(v("1.0"));
        assert!(spec.matches(Some(&v("1"))));
        assert!(!spec.matches(Some(&v("1.0.1"))));
    }

    #[test]
    fn h06_text_exact() {
        assert!(v("latest").matches(&v("latest")));
        assert!(!v("latest").matches(&v("LATEST")));
        assert!(!v("latest").matches(&v("latest ")));
        assert!(!v("vlatest").matches(&v("latest")));
        assert!(!v("latest").matches(&v("1.0")));
        assert!(!v("1.0").matches(&v("latest")));
        let spec = VersionSpec::exact(v("beta"));
        assert!(spec.matches(Some(&v("beta"))));
        assert!(!spec.matches(Some(&v("Beta"))));
    }

    #[test]
    fn h06_unversioned_matches_unless_excluded() {
        let specs = [
            VersionSpec::any(),
            VersionSpec::default(),
            VersionSpec::exact(v("1.0")),
            VersionSpec::range(Some(v("5")), Some(v("6"))),
        ];
        for spec in specs {
            assert!(spec.include_unversioned);
            assert!(spec.matches(None), "{spec:?}");
            assert!(
                !spec.clone().excluding_unversioned().matches(None),
                "{spec:?}"
            );
        }
        // Excluding unversioned does not affect versioned components.
        let spec = VersionSpec::any().excluding_unversioned();
        assert!(spec.matches(Some(&v("0"))));
        assert!(spec.matches(Some(&v("latest"))));
    }

    #[test]
    fn h12_range() {
        let spec = VersionSpec::range(Some(v("1.0")), Some(v("2.0")));
        assert!(spec.matches(Some(&v("1.0"))), "gte is inclusive");
        assert!(
            spec.matches(Some(&v("1"))),
            "gte uses the key, not the raw tie-break"
        );
        assert!(spec.matches(Some(&v("v1.5"))));
        assert!(spec.matches(Some(&v("1.99"))));
        assert!(
            spec.matches(Some(&v("2.0a1"))),
            "pre-releases sort below 2.0"
        );
        assert!(!spec.matches(Some(&v("2.0"))), "lt is exclusive");
        assert!(
            !spec.matches(Some(&v("2"))),
            "lt uses the key, not the raw tie-break"
        );
        assert!(!spec.matches(Some(&v("0.9"))));
        assert!(!spec.matches(Some(&v("1.0rc1"))));
        assert!(!spec.matches(Some(&v("latest"))), "text sorts above 2.0");

        let open_top = VersionSpec::range(Some(v("10")), None);
        assert!(open_top.matches(Some(&v("10.0"))));
        assert!(open_top.matches(Some(&v("latest"))));
        assert!(!open_top.matches(Some(&v("9"))));

        let open_bottom = VersionSpec::range(None, Some(v("2")));
        assert!(open_bottom.matches(Some(&v("0"))));
        assert!(!open_bottom.matches(Some(&v("3"))));

        // Text bounds compare byte-wise among text.
        let text = VersionSpec::range(Some(v("beta")), None);
        assert!(text.matches(Some(&v("gamma"))));
        assert!(!text.matches(Some(&v("alpha"))));
        assert!(!text.matches(Some(&v("99"))));
    }

    #[test]
    fn h12_eq_must_satisfy_range() {
        let inside = VersionSpec {
            eq: Some(v("1.5")),
            ..VersionSpec::range(Some(v("1")), Some(v("2")))
        };
        assert!(inside.matches(Some(&v("1.5.0"))));
        assert!(!inside.matches(Some(&v("1.6"))));

        let outside = VersionSpec {
            eq: Some(v("3")),
            ..VersionSpec::range(Some(v("1")), Some(v("2")))
        };
        assert!(!outside.matches(Some(&v("3"))));
        assert!(outside.matches(None));
    }

    #[test]
    fn serde_plain_string_roundtrip() {
        let version = v("v1.0rc1");
        let json = serde_json::to_string(&version).expect("serialize");
        assert_eq!(json, r#""v1.0rc1""#);
        let back: Version = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, version);
        assert!(back.is_pep440());
        for bad in [r#""""#, r#""1@2""#, r#""   ""#, "1", "null"] {
            assert!(
                serde_json::from_str::<Version>(bad).is_err(),
                "{bad} should not deserialize"
            );
        }
        let err = serde_json::from_str::<Version>(r#""1@2""#)
            .map_err(|e| e.to_string())
            .err();
        assert!(err.is_some_and(|e| e.contains("cannot contain '@'")));
    }

    #[test]
    fn weird_inputs_never_panic() {
        let long_digits = "9".repeat(10_000);
        let long_release = vec!["1"; 5_000].join(".");
        let inputs = [
            "",
            "v",
            "V",
            "vv1",
            ".",
            "1..2",
            "1.",
            ".1",
            "١٢",
            "99999999999999999999999999",
            "18446744073709551615",
            "18446744073709551616",
            "1.0+local",
            "1.0+",
            "1.0+loc@l",
            "1!",
            "!1",
            "1.*",
            "1.0.post",
            "1.0-",
            "1.0.dev",
            "-1",
            "\0",
            "💥",
            "1.0\u{301}",
            long_digits.as_str(),
            long_release.as_str(),
        ];
        let accepted: Vec<Version> = inputs
            .iter()
            .filter_map(|s| Version::new(*s).ok())
            .collect();
        assert!(Version::new("").is_err());
        assert!(!v("99999999999999999999999999").is_pep440());
        assert!(v("18446744073709551615").is_pep440());
        assert!(v("1.0+local").is_pep440());
        assert!(v("1.0+local") > v("1.0"));
        assert!(!v("١٢").is_pep440());
        assert!(v(&long_release).matches(&v(&long_release)));
        for a in &accepted {
            assert_eq!(a.cmp(a), Ordering::Equal);
            assert!(a.matches(a));
            for b in &accepted {
                assert_eq!(a.cmp(b), b.cmp(a).reverse(), "{a} vs {b}");
                let _ = VersionSpec::range(Some(a.clone()), Some(b.clone())).matches(Some(a));
            }
        }
    }

    /// Deterministic pseudo-random strings over version-ish characters; the
    /// order must be total and consistent with `==`, `Hash` and `matches`.
    #[test]
    fn order_is_total_and_consistent() {
        const ALPHABET: &[u8] = b"0123456789.v+-_!abcrpostdevV *xyz";
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut versions = Vec::new();
        while versions.len() < 400 {
            let len = (next() % 10) as usize;
            let s: String = (0..len)
                .map(|_| char::from(ALPHABET[(next() % ALPHABET.len() as u64) as usize]))
                .collect();
            if let Ok(version) = Version::new(s) {
                versions.push(version);
            }
        }
        assert!(versions.iter().any(Version::is_pep440));
        assert!(versions.iter().any(|x| !x.is_pep440()));
        versions.sort();
        for (i, a) in versions.iter().enumerate() {
            for b in &versions[i..] {
                assert_ne!(a.cmp(b), Ordering::Greater, "{a:?} sorted before {b:?}");
                assert_eq!(a.cmp(b) == Ordering::Equal, a == b, "{a} vs {b}");
                if a == b {
                    assert_eq!(hash_of(a), hash_of(b));
                }
                assert_eq!(a.matches(b), b.matches(a), "{a} vs {b}");
                if a.matches(b) {
                    assert_eq!(a.is_pep440(), b.is_pep440());
                }
            }
        }
    }
}
