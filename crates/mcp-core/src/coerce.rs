//! Lenient, schema-guided coercion of tool arguments.
//!
//! MCP clients, and the language models behind them, often send scalars in the
//! wrong JSON type: `{"n": "1"}` for an integer parameter, `"true"` for a
//! boolean, `3.0` for an integer. Python FastMCP validates tool arguments with
//! pydantic in *lax* mode, which accepts these, so a tool squaring `n` returns
//! 36 for `{"n": "6"}`. Serde is strict, so before the arguments are
//! deserialized into the tool's typed argument struct the framework runs
//! [`coerce_arguments`], which rewrites such values in place, guided by the
//! tool's input schema (JSON Schema 2020-12 as emitted by schemars 1.x).
//!
//! The pass is deliberately conservative; it only makes the conversions that
//! pydantic's lax mode makes *and* that are unambiguous:
//!
//! * string → integer when the trimmed string is an integer literal in the
//!   `i64` or `u64` range; a float with no fractional part (`3.0`) → integer;
//! * string → number when the trimmed string parses as a finite `f64` (an
//!   integer literal becomes an integer JSON number);
//! * string → boolean for `true`/`false`/`1`/`0`/`yes`/`no`/`on`/`off`
//!   (ASCII case-insensitive), and the integers `0`/`1` → boolean.
//!
//! Numbers are never turned into strings, `null` is never turned into anything,
//! keys are never added or removed, and a value whose JSON type the schema
//! already accepts is never touched. Anything that cannot be coerced is left as
//! it is, so that serde reports the precise error afterwards.
//!
//! The walk follows `properties`, `additionalProperties`, `items`,
//! `prefixItems` (and the legacy array form of `items` with
//! `additionalItems`), `allOf`, `anyOf`/`oneOf` and local `$ref`s (`#`,
//! `#/$defs/…`, `#/definitions/…`, any JSON pointer into the root schema).
//! For `anyOf`/`oneOf`, a scalar that already fits a branch (by a cheap
//! shallow check: JSON type, `const`/`enum`) is left alone; otherwise the
//! first branch whose coercion makes it fit wins. An object or array is
//! descended into through one branch: the first it fits exactly (one level
//! deep: `required`, `additionalProperties: false`, the `type`, `const` and
//! `enum` of its members), else the first it fits apart from member types
//! (the tag of a tagged enum still has to match), else the only branch whose
//! type admits it; when that is ambiguous, it is left alone.
//!
//! Recursive schemas (schemars refers to a recursive root type as `#`) cannot
//! loop: a `$ref` already being followed without having descended into the
//! value is not followed again, and values nested deeper than 128 levels are
//! left alone.
//!
//! The pass borrows the schema, never clones it, and allocates nothing unless a
//! value is actually replaced: it runs on every tool call. Servers configured
//! as `strict` skip it entirely ; that switch lives with the
//! caller.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

/// Maximum nesting depth of argument values that is walked; deeper values are
/// left alone (serde_json's own parser refuses more than 128 levels anyway).
const MAX_DEPTH: usize = 128;

/// Coerces `args` in place toward `schema`. Never fails and never panics: anything it cannot
/// coerce is left as it is, so serde reports the precise error afterwards.
///
/// `schema` is the tool's input schema (the root schema: `$ref`s are resolved
/// against it) and `args` the tool call's `arguments` object.
///
/// # Example
///
/// ```
/// use ferrymcp_core::coerce::coerce_arguments;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "n": { "type": "integer", "format": "int64" },
///         "verbose": { "type": ["boolean", "null"] },
///         "name": { "type": "string" }
///     },
///     "required": ["n", "name"]
/// });
/// let mut args = json!({ "n": "6", "verbose": "yes", "name": "7" });
/// coerce_arguments(schema.as_object().unwrap(), args.as_object_mut().unwrap());
/// // Numbers are never turned into strings, and strings stay strings.
/// assert_eq!(args, json!({ "n": 6, "verbose": true, "name": "7" }));
/// ```
pub fn coerce_arguments(schema: &Map<String, Value>, args: &mut Map<String, Value>) {
    coerce_container(schema, Schema::Obj(schema), Container::Obj(args), 0, None);
}

/// A schema: JSON Schema allows `true`/`false` wherever a schema may stand.
#[derive(Clone, Copy)]
enum Schema<'a> {
    Bool(bool),
    Obj(&'a Map<String, Value>),
}

impl<'a> Schema<'a> {
    fn of(v: &'a Value) -> Self {
        match v {
            Value::Object(m) => Schema::Obj(m),
            Value::Bool(b) => Schema::Bool(*b),
            // Not a schema at all: constrains nothing.
            _ => Schema::Bool(true),
        }
    }
}

/// A read-only view of an instance, so that the top-level arguments map can
/// be inspected without being wrapped in a `Value`.
#[derive(Clone, Copy)]
enum Inst<'v> {
    Scalar(&'v Value),
    Array(&'v [Value]),
    Object(&'v Map<String, Value>),
}

impl<'v> Inst<'v> {
    fn of(v: &'v Value) -> Self {
        match v {
            Value::Array(a) => Inst::Array(a),
            Value::Object(m) => Inst::Object(m),
            _ => Inst::Scalar(v),
        }
    }

    fn equals(self, other: &Value) -> bool {
        match self {
            Inst::Scalar(v) => v == other,
            Inst::Array(a) => other.as_array().is_some_and(|o| o.as_slice() == a),
            Inst::Object(m) => other.as_object() == Some(m),
        }
    }

    /// Whether the instance has the JSON Schema type `ty`. "integer" means a
    /// number serde can read as an integer, so `3.0` is not one (and gets
    /// coerced). Unknown type names accept anything.
    fn has_type(self, ty: &str) -> bool {
        match (ty, self) {
            ("null", Inst::Scalar(v)) => v.is_null(),
            ("boolean", Inst::Scalar(v)) => v.is_boolean(),
            ("integer", Inst::Scalar(v)) => v.is_i64() || v.is_u64(),
            ("number", Inst::Scalar(v)) => v.is_number(),
            ("string", Inst::Scalar(v)) => v.is_string(),
            ("array", Inst::Array(_)) | ("object", Inst::Object(_)) => true,
            ("null" | "boolean" | "integer" | "number" | "string" | "array" | "object", _) => false,
            _ => true,
        }
    }

    /// Whether the instance satisfies a `type` keyword (a name or a list).
    fn fits_type(self, ty: &Value) -> bool {
        match ty {
            Value::String(t) => self.has_type(t),
            Value::Array(ts) => {
                ts.is_empty()
                    || ts
                        .iter()
                        .any(|t| t.as_str().is_some_and(|t| self.has_type(t)))
            }
            _ => true,
        }
    }
}

/// A mutable container being walked: the top-level arguments map or a nested
/// object or array.
enum Container<'v> {
    Obj(&'v mut Map<String, Value>),
    Arr(&'v mut Vec<Value>),
}

impl Container<'_> {
    fn reborrow(&mut self) -> Container<'_> {
        match self {
            Container::Obj(m) => Container::Obj(m),
            Container::Arr(a) => Container::Arr(a),
        }
    }

    fn inst(&self) -> Inst<'_> {
        match self {
            Container::Obj(m) => Inst::Object(m),
            Container::Arr(a) => Inst::Array(a),
        }
    }
}

/// The `$ref`s followed since the walk last descended into the value: a stack
/// allocated linked list through the call frames. Following a `$ref` that is
/// already on it would revisit the same (schema, value) pair, i.e. loop.
struct Trail<'t> {
    reference: &'t str,
    up: Option<&'t Trail<'t>>,
}

fn on_trail(mut trail: Option<&Trail<'_>>, reference: &str) -> bool {
    while let Some(t) = trail {
        if t.reference == reference {
            return true;
        }
        trail = t.up;
    }
    false
}

/// Resolves a local `$ref` (`#` or a JSON pointer fragment such as
/// `#/$defs/Name` or `#/definitions/Name`) against the root schema. Remote
/// and anchor references resolve to nothing.
fn resolve<'a>(root: &'a Map<String, Value>, reference: &str) -> Option<Schema<'a>> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(Schema::Obj(root));
    }
    let mut segments = pointer.strip_prefix('/')?.split('/');
    let mut node = root.get(unescape(segments.next()?).as_ref())?;
    for segment in segments {
        node = match node {
            Value::Object(m) => m.get(unescape(segment).as_ref())?,
            Value::Array(a) => a.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(Schema::of(node))
}

/// JSON pointer unescaping (`~1` → `/`, `~0` → `~`); borrows unless needed.
fn unescape(segment: &str) -> Cow<'_, str> {
    if segment.contains('~') {
        Cow::Owned(segment.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(segment)
    }
}

/// Follows `schema`'s `$ref`, if it has a local one not already on the trail,
/// handing the target and the extended trail to `f`.
fn with_ref<'a, R>(
    root: &'a Map<String, Value>,
    schema: &'a Map<String, Value>,
    trail: Option<&Trail<'_>>,
    f: impl FnOnce(Schema<'a>, Option<&Trail<'_>>) -> R,
) -> Option<R> {
    let Some(Value::String(reference)) = schema.get("$ref") else {
        return None;
    };
    if on_trail(trail, reference) {
        return None;
    }
    let target = resolve(root, reference)?;
    Some(f(
        target,
        Some(&Trail {
            reference,
            up: trail,
        }),
    ))
}

/// How closely [`fits`] checks an instance against a schema.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// JSON types only.
    Loose,
    /// Also `const` and `enum`, and for objects `required`,
    /// `additionalProperties: false` and the `const`/`enum` of the properties
    /// present: what tells the variants of a tagged enum apart.
    Shape,
    /// Also the `type` of the properties present: what tells untagged object
    /// variants apart when the value needs no coercion.
    Exact,
}

/// The cheap structural check used to choose among `anyOf`/`oneOf` branches.
/// Never descends into the value beyond the one level described in [`Level`].
fn fits(
    root: &Map<String, Value>,
    schema: Schema<'_>,
    inst: Inst<'_>,
    level: Level,
    trail: Option<&Trail<'_>>,
) -> bool {
    let s = match schema {
        Schema::Bool(b) => return b,
        Schema::Obj(s) => s,
    };
    if let Some(Value::String(reference)) = s.get("$ref") {
        if on_trail(trail, reference) {
            // A cycle adds nothing a first visit did not: it does not fit.
            return false;
        }
        if with_ref(root, s, trail, |t, trail| fits(root, t, inst, level, trail)) == Some(false) {
            return false;
        }
    }
    if let Some(ty) = s.get("type")
        && !inst.fits_type(ty)
    {
        return false;
    }
    if level != Level::Loose {
        if !fits_literal(s, inst) {
            return false;
        }
        if let Inst::Object(m) = inst
            && !fits_members(s, m, level == Level::Exact)
        {
            return false;
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = s.get(key)
            && !branches
                .iter()
                .any(|b| fits(root, Schema::of(b), inst, level, trail))
        {
            return false;
        }
    }
    if let Some(Value::Array(all)) = s.get("allOf")
        && !all
            .iter()
            .all(|b| fits(root, Schema::of(b), inst, level, trail))
    {
        return false;
    }
    true
}

/// `const` and `enum` of one schema object.
fn fits_literal(s: &Map<String, Value>, inst: Inst<'_>) -> bool {
    if let Some(c) = s.get("const")
        && !inst.equals(c)
    {
        return false;
    }
    if let Some(Value::Array(options)) = s.get("enum")
        && !options.iter().any(|o| inst.equals(o))
    {
        return false;
    }
    true
}

/// The one-level object checks of [`fits`].
fn fits_members(s: &Map<String, Value>, m: &Map<String, Value>, exact: bool) -> bool {
    if let Some(Value::Array(required)) = s.get("required")
        && !required
            .iter()
            .all(|k| k.as_str().is_none_or(|k| m.contains_key(k)))
    {
        return false;
    }
    let properties = match s.get("properties") {
        Some(Value::Object(p)) => Some(p),
        _ => None,
    };
    let closed = matches!(s.get("additionalProperties"), Some(Value::Bool(false)));
    if properties.is_none() && !closed {
        return true;
    }
    m.iter()
        .all(|(k, v)| match properties.and_then(|p| p.get(k)) {
            Some(Value::Object(p)) => {
                let inst = Inst::of(v);
                fits_literal(p, inst)
                    && (!exact || p.get("type").is_none_or(|ty| inst.fits_type(ty)))
            }
            Some(Value::Bool(b)) => *b,
            Some(_) => true,
            None => !closed,
        })
}

/// Picks the `anyOf`/`oneOf` branch to descend into a container through: the
/// first one it fits exactly, or else the first one it fits by shape, or else
/// the only one whose type admits it.
fn pick_branch<'a>(
    root: &'a Map<String, Value>,
    branches: &'a [Value],
    inst: Inst<'_>,
    trail: Option<&Trail<'_>>,
) -> Option<Schema<'a>> {
    let fitting = |level| {
        branches
            .iter()
            .map(Schema::of)
            .filter(move |b| fits(root, *b, inst, level, trail))
    };
    if let Some(branch) = fitting(Level::Exact).next() {
        return Some(branch);
    }
    if let Some(branch) = fitting(Level::Shape).next() {
        return Some(branch);
    }
    let mut loose = fitting(Level::Loose);
    match (loose.next(), loose.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

/// Coerces one value toward `schema`, descending into objects and arrays.
fn coerce_value(root: &Map<String, Value>, schema: Schema<'_>, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(m) => coerce_container(root, schema, Container::Obj(m), depth, None),
        Value::Array(a) => coerce_container(root, schema, Container::Arr(a), depth, None),
        Value::Null => {}
        _ => {
            if let Some(coerced) = coerce_scalar(root, schema, value, None) {
                *value = coerced;
            }
        }
    }
}

/// Walks an object's members or an array's elements with the subschemas that
/// apply to them, through `$ref`, `allOf` and the chosen `anyOf`/`oneOf`
/// branch.
fn coerce_container(
    root: &Map<String, Value>,
    schema: Schema<'_>,
    mut value: Container<'_>,
    depth: usize,
    trail: Option<&Trail<'_>>,
) {
    let Schema::Obj(s) = schema else {
        return;
    };
    with_ref(root, s, trail, |t, trail| {
        coerce_container(root, t, value.reborrow(), depth, trail);
    });
    match &mut value {
        Container::Obj(m) => coerce_members(root, s, m, depth),
        Container::Arr(a) => coerce_items(root, s, a, depth),
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = s.get(key)
            && let Some(branch) = pick_branch(root, branches, value.inst(), trail)
        {
            coerce_container(root, branch, value.reborrow(), depth, trail);
        }
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for member in all {
            coerce_container(root, Schema::of(member), value.reborrow(), depth, trail);
        }
    }
}

/// `properties` and `additionalProperties` (`patternProperties` is ignored).
fn coerce_members(
    root: &Map<String, Value>,
    s: &Map<String, Value>,
    m: &mut Map<String, Value>,
    depth: usize,
) {
    let properties = match s.get("properties") {
        Some(Value::Object(p)) => Some(p),
        _ => None,
    };
    let additional = match s.get("additionalProperties") {
        Some(a @ Value::Object(_)) => Some(a),
        _ => None,
    };
    if properties.is_none() && additional.is_none() {
        return;
    }
    for (key, member) in m.iter_mut() {
        if let Some(sub) = properties.and_then(|p| p.get(key)).or(additional) {
            coerce_value(root, Schema::of(sub), member, depth + 1);
        }
    }
}

/// `prefixItems` then `items` (2020-12), or the older array-valued `items`
/// then `additionalItems`.
fn coerce_items(root: &Map<String, Value>, s: &Map<String, Value>, a: &mut [Value], depth: usize) {
    let (prefix, rest): (&[Value], Option<&Value>) = match s.get("prefixItems") {
        Some(Value::Array(prefix)) => (prefix, s.get("items")),
        _ => match s.get("items") {
            Some(Value::Array(prefix)) => (prefix, s.get("additionalItems")),
            items => (&[], items),
        },
    };
    if prefix.is_empty() && rest.is_none() {
        return;
    }
    for (i, element) in a.iter_mut().enumerate() {
        if let Some(sub) = prefix.get(i).or(rest) {
            coerce_value(root, Schema::of(sub), element, depth + 1);
        }
    }
}

/// The coerced replacement for a scalar (string, number or boolean), or
/// `None` when it is already acceptable or cannot be coerced.
fn coerce_scalar(
    root: &Map<String, Value>,
    schema: Schema<'_>,
    value: &Value,
    trail: Option<&Trail<'_>>,
) -> Option<Value> {
    let Schema::Obj(s) = schema else {
        return None;
    };
    if let Some(Some(coerced)) = with_ref(root, s, trail, |t, trail| {
        coerce_scalar(root, t, value, trail)
    }) {
        return Some(coerced);
    }
    if let Some(ty) = s.get("type") {
        if Inst::Scalar(value).fits_type(ty) {
            return None;
        }
        return match ty {
            Value::String(t) => convert(value, t),
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .find_map(|t| convert(value, t)),
            _ => None,
        };
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = s.get(key) {
            let inst = Inst::Scalar(value);
            if branches
                .iter()
                .any(|b| fits(root, Schema::of(b), inst, Level::Exact, trail))
            {
                return None;
            }
            return branches.iter().map(Schema::of).find_map(|b| {
                coerce_scalar(root, b, value, trail)
                    .filter(|c| fits(root, b, Inst::Scalar(c), Level::Exact, trail))
            });
        }
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        return all
            .iter()
            .find_map(|member| coerce_scalar(root, Schema::of(member), value, trail));
    }
    None
}

/// The lax-mode conversion of a scalar to the JSON Schema type `ty`.
fn convert(value: &Value, ty: &str) -> Option<Value> {
    match (ty, value) {
        ("integer", Value::String(s)) => parse_integer(s.trim()),
        ("integer", Value::Number(n)) => n.as_f64().and_then(exact_float_to_integer),
        ("number", Value::String(s)) => {
            let s = s.trim();
            parse_integer(s).or_else(|| {
                s.parse::<f64>()
                    .ok()
                    .and_then(Number::from_f64) // `None` for infinities and NaN
                    .map(Value::Number)
            })
        }
        ("boolean", Value::String(s)) => {
            let s = s.trim();
            let is = |words: [&str; 4]| words.iter().any(|w| s.eq_ignore_ascii_case(w));
            if is(["true", "1", "yes", "on"]) {
                Some(Value::Bool(true))
            } else if is(["false", "0", "no", "off"]) {
                Some(Value::Bool(false))
            } else {
                None
            }
        }
        ("boolean", Value::Number(n)) => match n.as_u64() {
            Some(0) => Some(Value::Bool(false)),
            Some(1) => Some(Value::Bool(true)),
            _ => None,
        },
        _ => None,
    }
}

/// An integer literal in the `i64` or `u64` range.
fn parse_integer(s: &str) -> Option<Value> {
    s.parse::<i64>()
        .map(Value::from)
        .or_else(|_| s.parse::<u64>().map(Value::from))
        .ok()
}

/// A float with no fractional part, within the `i64` or `u64` range.
fn exact_float_to_integer(f: f64) -> Option<Value> {
    const I64_MIN: f64 = -9_223_372_036_854_775_808.0; // -2^63
    const I64_END: f64 = 9_223_372_036_854_775_808.0; // 2^63
    const U64_END: f64 = 18_446_744_073_709_551_616.0; // 2^64
    if f.fract() != 0.0 {
        return None; // also rejects infinities and NaN
    }
    if (I64_MIN..I64_END).contains(&f) {
        Some(Value::from(f as i64))
    } else if (0.0..U64_END).contains(&f) {
        Some(Value::from(f as u64))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Runs the pass over a copy of `args`.
    fn coerced(schema: &Value, args: Value) -> Value {
        let mut args = args;
        coerce_arguments(
            schema.as_object().expect("schema object"),
            args.as_object_mut().expect("args object"),
        );
        args
    }

    /// Asserts that the pass leaves `args` exactly as they are.
    fn assert_untouched(schema: &Value, args: Value) {
        assert_eq!(coerced(schema, args.clone()), args);
    }

    /// `schema_for!(SquareArgs)` with `struct SquareArgs { n: i64 }`.
    fn square_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "SquareArgs",
            "type": "object",
            "properties": { "n": { "type": "integer", "format": "int64" } },
            "required": ["n"]
        })
    }

    /// `struct Inner { a: i64, b: bool, c: f64 }` as a `$defs` entry.
    fn inner_def() -> Value {
        json!({
            "type": "object",
            "properties": {
                "a": { "type": "integer", "format": "int64" },
                "b": { "type": "boolean" },
                "c": { "type": "number", "format": "double" }
            },
            "required": ["a", "b", "c"]
        })
    }

    /// `schema_for!(Args)` with
    /// `struct Args { /// doc\n inner: Inner, oi: Option<Inner>, list: Vec<Inner>,
    /// ov: Option<Vec<Inner>>, small: u8, x: f32, m: HashMap<String, u32>, tup: (i32, bool),
    /// c: char, any: serde_json::Value, opt: Option<i64>, ob: Option<bool>, color: Color,
    /// oc: Option<Color> }` and `enum Color { Red, Green }`.
    fn args_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {
                "any": true,
                "c": { "type": "string", "maxLength": 1, "minLength": 1 },
                "color": { "$ref": "#/$defs/Color" },
                "inner": { "description": "documented inner", "$ref": "#/$defs/Inner" },
                "list": { "type": "array", "items": { "$ref": "#/$defs/Inner" } },
                "m": {
                    "type": "object",
                    "additionalProperties": { "type": "integer", "format": "uint32", "minimum": 0 }
                },
                "ob": { "type": ["boolean", "null"] },
                "oc": { "anyOf": [{ "$ref": "#/$defs/Color" }, { "type": "null" }] },
                "oi": { "anyOf": [{ "$ref": "#/$defs/Inner" }, { "type": "null" }] },
                "opt": { "type": ["integer", "null"], "format": "int64" },
                "ov": { "type": ["array", "null"], "items": { "$ref": "#/$defs/Inner" } },
                "small": { "type": "integer", "format": "uint8", "maximum": 255, "minimum": 0 },
                "tup": {
                    "type": "array",
                    "maxItems": 2,
                    "minItems": 2,
                    "prefixItems": [{ "type": "integer", "format": "int32" }, { "type": "boolean" }]
                },
                "x": { "type": "number", "format": "float" }
            },
            "required": ["inner", "list", "small", "x", "m", "tup", "c", "any", "color"],
            "$defs": {
                "Color": { "type": "string", "enum": ["Red", "Green"] },
                "Inner": inner_def()
            }
        })
    }

    /// `schema_for!(EnumArgs)` with `u: Untagged, t: Tagged, mixed: Mixed, mode: Mode`, where
    /// `#[serde(untagged)] enum Untagged { N(i64), S(String), I(Inner) }`,
    /// `#[serde(tag = "kind")] enum Tagged { A { x: i64 }, B { y: bool } }`,
    /// `enum Mixed { Unit, Tup(i32, String), Str { z: u16 } }` and
    /// `#[serde(untagged)] enum Mode { Named(Keyword), Fixed(u32) }` with
    /// `#[serde(rename_all = "lowercase")] enum Keyword { Auto, Max }`.
    fn enum_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "EnumArgs",
            "type": "object",
            "properties": {
                "mixed": { "$ref": "#/$defs/Mixed" },
                "mode": { "$ref": "#/$defs/Mode" },
                "t": { "$ref": "#/$defs/Tagged" },
                "u": { "$ref": "#/$defs/Untagged" }
            },
            "required": ["u", "t", "mixed", "mode"],
            "$defs": {
                "Inner": inner_def(),
                "Mixed": {
                    "oneOf": [
                        { "type": "string", "enum": ["Unit"] },
                        {
                            "type": "object",
                            "properties": {
                                "Tup": {
                                    "type": "array",
                                    "maxItems": 2,
                                    "minItems": 2,
                                    "prefixItems": [
                                        { "type": "integer", "format": "int32" },
                                        { "type": "string" }
                                    ]
                                }
                            },
                            "additionalProperties": false,
                            "required": ["Tup"]
                        },
                        {
                            "type": "object",
                            "properties": {
                                "Str": {
                                    "type": "object",
                                    "properties": {
                                        "z": {
                                            "type": "integer",
                                            "format": "uint16",
                                            "maximum": 65535,
                                            "minimum": 0
                                        }
                                    },
                                    "required": ["z"]
                                }
                            },
                            "additionalProperties": false,
                            "required": ["Str"]
                        }
                    ]
                },
                "Keyword": { "type": "string", "enum": ["auto", "max"] },
                "Mode": {
                    "anyOf": [
                        { "$ref": "#/$defs/Keyword" },
                        { "type": "integer", "format": "uint32", "minimum": 0 }
                    ]
                },
                "Tagged": {
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {
                                "kind": { "type": "string", "const": "A" },
                                "x": { "type": "integer", "format": "int64" }
                            },
                            "required": ["kind", "x"]
                        },
                        {
                            "type": "object",
                            "properties": {
                                "kind": { "type": "string", "const": "B" },
                                "y": { "type": "boolean" }
                            },
                            "required": ["kind", "y"]
                        }
                    ]
                },
                "Untagged": {
                    "anyOf": [
                        { "type": "integer", "format": "int64" },
                        { "type": "string" },
                        { "$ref": "#/$defs/Inner" }
                    ]
                }
            }
        })
    }

    /// `schema_for!(Tree)` with `struct Tree { v: i32, children: Vec<Tree>,
    /// next: Option<Box<Tree>> }`: schemars refers to the recursive root as `#`.
    fn tree_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Tree",
            "type": "object",
            "properties": {
                "children": { "type": "array", "items": { "$ref": "#" } },
                "next": { "anyOf": [{ "$ref": "#" }, { "type": "null" }] },
                "v": { "type": "integer", "format": "int32" }
            },
            "required": ["v", "children"]
        })
    }

    #[test]
    fn i13_string_to_integer() {
        let schema = square_schema();
        let args = coerced(&schema, json!({ "n": "6" }));
        assert_eq!(args, json!({ "n": 6 }));
        let n: i64 = serde_json::from_value(args["n"].clone()).unwrap();
        assert_eq!(n * n, 36);

        assert_eq!(coerced(&schema, json!({ "n": "1" })), json!({ "n": 1 }));
        assert_eq!(
            coerced(&schema, json!({ "n": " -12\n" })),
            json!({ "n": -12 })
        );
        assert_eq!(coerced(&schema, json!({ "n": "+7" })), json!({ "n": 7 }));
        // Exact floats become integers.
        assert_eq!(coerced(&schema, json!({ "n": 3.0 })), json!({ "n": 3 }));
        assert_eq!(coerced(&schema, json!({ "n": -0.0 })), json!({ "n": 0 }));
        // Not integer literals: left for serde.
        for s in ["1.0", "1.5", "", "  ", "12abc", "1_000", "0x10", "1e3"] {
            assert_untouched(&schema, json!({ "n": s }));
        }
        assert_untouched(&schema, json!({ "n": 2.5 }));
        // An integer format does not narrow the coercion: serde reports the range error.
        let args = coerced(&args_schema(), json!({ "small": "300" }));
        assert_eq!(args, json!({ "small": 300 }));
        assert!(serde_json::from_value::<u8>(args["small"].clone()).is_err());
    }

    #[test]
    fn i13_nested_model_fields_via_ref() {
        let schema = args_schema();
        assert_eq!(
            coerced(
                &schema,
                json!({
                    "inner": { "a": "1", "b": "true", "c": "2.5" },
                    "oi": { "a": 4.0, "b": 0, "c": "3" },
                    "small": "8"
                })
            ),
            json!({
                "inner": { "a": 1, "b": true, "c": 2.5 },
                "oi": { "a": 4, "b": false, "c": 3 },
                "small": 8
            })
        );
        // Legacy `definitions`, and pointers needing `~1` / `~0` unescaping.
        let legacy = json!({
            "type": "object",
            "properties": {
                "inner": { "$ref": "#/definitions/Inner" },
                "odd": { "$ref": "#/definitions/a~1b~0c" }
            },
            "definitions": { "Inner": inner_def(), "a/b~c": { "type": "integer" } }
        });
        assert_eq!(
            coerced(
                &legacy,
                json!({ "inner": { "a": "5", "b": "off", "c": 1 }, "odd": "9" })
            ),
            json!({ "inner": { "a": 5, "b": false, "c": 1 }, "odd": 9 })
        );
        // `allOf` members apply too.
        let all_of = json!({
            "type": "object",
            "properties": { "inner": { "allOf": [{ "$ref": "#/$defs/Inner" }] } },
            "$defs": { "Inner": inner_def() }
        });
        assert_eq!(
            coerced(&all_of, json!({ "inner": { "a": "5", "b": true, "c": 1 } })),
            json!({ "inner": { "a": 5, "b": true, "c": 1 } })
        );
    }

    #[test]
    fn i13_list_of_models() {
        let schema = args_schema();
        assert_eq!(
            coerced(
                &schema,
                json!({
                    "list": [
                        { "a": "1", "b": "yes", "c": "0.5" },
                        { "a": 2, "b": false, "c": 1.5 },
                        "not a model"
                    ],
                    "ov": [{ "a": "3", "b": "1", "c": "-1" }]
                })
            ),
            json!({
                "list": [
                    { "a": 1, "b": true, "c": 0.5 },
                    { "a": 2, "b": false, "c": 1.5 },
                    "not a model"
                ],
                "ov": [{ "a": 3, "b": true, "c": -1 }]
            })
        );
        assert_untouched(&schema, json!({ "ov": null, "list": [] }));
    }

    #[test]
    fn option_integer_type_array() {
        let schema = args_schema();
        assert_eq!(coerced(&schema, json!({ "opt": "5" })), json!({ "opt": 5 }));
        assert_eq!(coerced(&schema, json!({ "opt": 2.0 })), json!({ "opt": 2 }));
        assert_untouched(&schema, json!({ "opt": null }));
        assert_untouched(&schema, json!({ "opt": 5 }));
        assert_untouched(&schema, json!({ "opt": "x" }));
        assert_untouched(&schema, json!({ "opt": "null" }));
        // The listed types are tried in order; the first that applies wins.
        let ordered = json!({
            "type": "object",
            "properties": {
                "bi": { "type": ["boolean", "integer"] },
                "ib": { "type": ["integer", "boolean"] },
                "f": { "type": ["number", "null"], "format": "double" }
            }
        });
        assert_eq!(
            coerced(&ordered, json!({ "bi": "1", "ib": "1", "f": "2.5" })),
            json!({ "bi": true, "ib": 1, "f": 2.5 })
        );
    }

    #[test]
    fn any_of_branches() {
        let schema = enum_schema();
        // A value that already fits a branch is left alone.
        assert_untouched(
            &schema,
            json!({ "u": "5", "mode": "auto", "mixed": "Unit" }),
        );
        assert_untouched(&schema, json!({ "u": 5, "mode": 7 }));
        // Otherwise the first branch whose coercion makes it fit is used.
        assert_eq!(
            coerced(&schema, json!({ "u": 5.0, "mode": "7" })),
            json!({ "u": 5, "mode": 7 })
        );
        assert_untouched(&schema, json!({ "mode": "manual" }));
        // Objects are descended into through the branch they fit.
        assert_eq!(
            coerced(&schema, json!({ "u": { "a": "1", "b": "no", "c": 1 } })),
            json!({ "u": { "a": 1, "b": false, "c": 1 } })
        );
        // Internally tagged: the `const` tag picks the branch.
        assert_eq!(
            coerced(&schema, json!({ "t": { "kind": "B", "y": "true" } })),
            json!({ "t": { "kind": "B", "y": true } })
        );
        assert_eq!(
            coerced(&schema, json!({ "t": { "kind": "A", "x": "3" } })),
            json!({ "t": { "kind": "A", "x": 3 } })
        );
        // Externally tagged: `required` picks the branch.
        assert_eq!(
            coerced(&schema, json!({ "mixed": { "Tup": ["1", "x"] } })),
            json!({ "mixed": { "Tup": [1, "x"] } })
        );
        assert_eq!(
            coerced(&schema, json!({ "mixed": { "Str": { "z": "7" } } })),
            json!({ "mixed": { "Str": { "z": 7 } } })
        );
        // Untagged object variants: the one whose property types fit wins, untouched.
        let untagged = json!({
            "type": "object",
            "properties": {
                "v": { "anyOf": [
                    { "type": "object", "properties": { "x": { "type": "integer" } }, "required": ["x"] },
                    { "type": "object", "properties": { "x": { "type": "string" } }, "required": ["x"] }
                ] }
            }
        });
        assert_untouched(&untagged, json!({ "v": { "x": "5" } }));
        // `Option<Inner>` missing a field still gets its other fields coerced: only one
        // branch admits an object.
        assert_eq!(
            coerced(&args_schema(), json!({ "oi": { "a": "1" } })),
            json!({ "oi": { "a": 1 } })
        );
        // Option of a string enum.
        assert_untouched(&args_schema(), json!({ "oc": "Red" }));
        assert_untouched(&args_schema(), json!({ "oc": null }));
        assert_untouched(&args_schema(), json!({ "oc": "Blue" }));
    }

    #[test]
    fn already_valid_values_untouched() {
        let valid = json!({
            "any": { "whatever": ["1", 2, null] },
            "c": "7",
            "color": "Green",
            "inner": { "a": -1, "b": true, "c": 0.25 },
            "list": [{ "a": 18446744073709551615u64, "b": false, "c": 2 }],
            "m": { "k": 1, "1": 2 },
            "ob": null,
            "oc": "Red",
            "oi": null,
            "opt": 9,
            "ov": [],
            "small": 255,
            "tup": [1, true],
            "x": 1.5
        });
        assert_untouched(&args_schema(), valid);
        // Strings are never turned into anything when the schema wants a string, and
        // numbers and booleans are never turned into strings.
        assert_untouched(&args_schema(), json!({ "c": 5, "color": true }));
        // A number is a number: 3 is not turned into 3.0 nor `"x": "3"` into 3.0.
        assert_untouched(&args_schema(), json!({ "x": 3 }));
        // Keys the schema does not know are left alone; none are added.
        assert_untouched(&square_schema(), json!({ "extra": "1" }));
        assert_untouched(&square_schema(), json!({}));
    }

    #[test]
    fn uncoercible_left_for_serde() {
        let schema = args_schema();
        let bad = json!({
            "small": "abc",
            "ob": "maybe",
            "opt": true,
            "x": "fast",
            "inner": "not an object",
            "list": { "a": 1 },
            "tup": [[1], 2],
            "m": { "k": "-" },
            "oi": [1, 2]
        });
        assert_untouched(&schema, bad.clone());
        let err = serde_json::from_value::<u8>(bad["small"].clone()).unwrap_err();
        assert!(
            err.to_string().contains("invalid type: string \"abc\""),
            "{err}"
        );
        assert_untouched(&square_schema(), json!({ "n": true }));
        assert_untouched(&square_schema(), json!({ "n": null }));
        assert_untouched(&square_schema(), json!({ "n": [1] }));
        // Unresolvable references and boolean schemas are harmless.
        let odd = json!({
            "type": "object",
            "properties": {
                "remote": { "$ref": "https://example.invalid/schema.json" },
                "missing": { "$ref": "#/$defs/Missing" },
                "anchor": { "$ref": "#anchor" },
                "deep": { "$ref": "#/$defs/Missing/properties/x/0" },
                "yes": true,
                "no": false,
                "weird": 5,
                "ty": { "type": 5, "unknownKeyword": { "type": "integer" } }
            },
            "additionalProperties": false
        });
        assert_untouched(
            &odd,
            json!({
                "remote": "1", "missing": "1", "anchor": "1", "deep": "1",
                "yes": "1", "no": "1", "weird": "1", "ty": "1", "other": "1"
            }),
        );
    }

    #[test]
    fn recursive_ref_terminates() {
        let schema = tree_schema();
        assert_eq!(
            coerced(
                &schema,
                json!({
                    "v": "1",
                    "children": [{ "v": "2", "children": [{ "v": 3.0, "children": [] }] }],
                    "next": { "v": "4", "children": [], "next": null }
                })
            ),
            json!({
                "v": 1,
                "children": [{ "v": 2, "children": [{ "v": 3, "children": [] }] }],
                "next": { "v": 4, "children": [], "next": null }
            })
        );

        // Cycles that never descend into the value.
        let cyclic = json!({
            "type": "object",
            "properties": {
                "a": { "$ref": "#/$defs/A" },
                "b": { "$ref": "#/$defs/B" },
                "c": { "$ref": "#/$defs/C" },
                "e": { "$ref": "#/$defs/E" }
            },
            "$defs": {
                "A": { "$ref": "#/$defs/A" },
                "B": { "anyOf": [{ "$ref": "#/$defs/B" }, { "$ref": "#/$defs/B" }, { "type": "integer" }] },
                "C": { "allOf": [{ "$ref": "#/$defs/C" }, { "$ref": "#" }] },
                "E": { "oneOf": [{ "$ref": "#/$defs/F" }, { "$ref": "#/$defs/F" }] },
                "F": { "anyOf": [{ "$ref": "#/$defs/E" }, { "$ref": "#/$defs/E" }] }
            }
        });
        for value in [json!("1"), json!({ "a": "1" }), json!([["1"]])] {
            let args = json!({ "a": value, "b": value, "c": value, "e": value });
            let out = coerced(&cyclic, args.clone());
            assert_eq!(out["a"], value);
            assert_eq!(out["e"], value);
        }
        assert_eq!(coerced(&cyclic, json!({ "b": "7" })), json!({ "b": 7 }));

        // Very deep values are walked to a bounded depth without overflowing the stack.
        let nested = json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/N" } },
            "$defs": { "N": { "type": ["array", "integer"], "items": { "$ref": "#/$defs/N" } } } });
        let mut deep = json!("1");
        for _ in 0..10_000 {
            deep = Value::Array(vec![deep]);
        }
        let mut args = json!({ "x": [["2"]] });
        coerce_arguments(nested.as_object().unwrap(), args.as_object_mut().unwrap());
        assert_eq!(args, json!({ "x": [[2]] }));
        let mut args = Map::new();
        args.insert("x".into(), deep);
        coerce_arguments(nested.as_object().unwrap(), &mut args);
        // Unwind without recursion, so the test itself does not overflow on drop.
        let mut node = args.remove("x").unwrap();
        let mut levels = 0;
        while let Value::Array(mut a) = node {
            node = a.pop().unwrap();
            levels += 1;
        }
        assert_eq!((levels, node), (10_000, json!("1")));
    }

    #[test]
    fn huge_numbers_do_not_panic() {
        let schema = json!({
            "type": "object",
            "properties": {
                "i": { "type": "integer", "format": "int64" },
                "n": { "type": "number", "format": "double" },
                "b": { "type": "boolean" }
            }
        });
        for s in [
            "99999999999999999999999",
            "-99999999999999999999999",
            "1e400",
            "-1e400",
            "18446744073709551616",
            "-9223372036854775809",
            "NaN",
            "inf",
        ] {
            assert_untouched(&schema, json!({ "i": s, "b": s }));
        }
        for f in [1e300, -1e300, 18446744073709551616.0, -1e22, f64::MAX] {
            assert_untouched(&schema, json!({ "i": f, "b": f }));
        }
        assert_eq!(
            coerced(
                &schema,
                json!({ "i": "18446744073709551615", "n": "-9223372036854775808" })
            ),
            json!({ "i": 18446744073709551615u64, "n": -9223372036854775808i64 })
        );
        assert_eq!(
            coerced(&schema, json!({ "i": 9223372036854775808.0 })),
            json!({ "i": 9223372036854775808u64 })
        );
        assert_eq!(
            coerced(&schema, json!({ "i": -9223372036854775808.0 })),
            json!({ "i": i64::MIN })
        );
        // Non-finite numbers stay strings; big integer literals become floats for `number`.
        for s in ["1e400", "-1e400", "NaN", "inf", "infinity"] {
            assert_untouched(&schema, json!({ "n": s }));
        }
        assert_eq!(
            coerced(&schema, json!({ "n": "99999999999999999999999" })),
            json!({ "n": 1e23 })
        );
        assert_eq!(
            coerced(&schema, json!({ "n": " 2.5 ", "i": "0" })),
            json!({ "n": 2.5, "i": 0 })
        );
        assert_eq!(coerced(&schema, json!({ "n": "3" })), json!({ "n": 3 }));
        assert_eq!(
            coerced(&schema, json!({ "n": "1e3" })),
            json!({ "n": 1000.0 })
        );
    }

    #[test]
    fn bools() {
        let schema = json!({
            "type": "object",
            "properties": {
                "b": { "type": "boolean" },
                "ob": { "type": ["boolean", "null"] }
            },
            "required": ["b"]
        });
        for (input, expected) in [
            (json!("true"), true),
            (json!("TRUE"), true),
            (json!(" yes "), true),
            (json!("On"), true),
            (json!("1"), true),
            (json!(1), true),
            (json!("false"), false),
            (json!("No"), false),
            (json!("off"), false),
            (json!("0"), false),
            (json!(0), false),
        ] {
            let args = json!({ "b": input, "ob": input });
            assert_eq!(
                coerced(&schema, args),
                json!({ "b": expected, "ob": expected })
            );
        }
        for input in [
            json!("maybe"),
            json!("t"),
            json!(""),
            json!(2),
            json!(-1),
            json!(1.0),
            json!(0.5),
            json!("2"),
        ] {
            assert_untouched(&schema, json!({ "b": input, "ob": input }));
        }
        assert_untouched(&schema, json!({ "b": true, "ob": null }));
    }

    #[test]
    fn additional_properties_and_tuples() {
        let schema = args_schema();
        assert_eq!(
            coerced(
                &schema,
                json!({ "m": { "a": "1", "b": 2, "c": "x" }, "tup": ["-3", "true", "extra"] })
            ),
            json!({ "m": { "a": 1, "b": 2, "c": "x" }, "tup": [-3, true, "extra"] })
        );
        // Pre-2020-12 tuple form: array `items` with `additionalItems`.
        let legacy = json!({
            "type": "object",
            "properties": {
                "t": {
                    "type": "array",
                    "items": [{ "type": "integer" }, { "type": "boolean" }],
                    "additionalItems": { "type": "number" }
                }
            }
        });
        assert_eq!(
            coerced(&legacy, json!({ "t": ["1", "no", "2.5", "3"] })),
            json!({ "t": [1, false, 2.5, 3] })
        );
    }
}
