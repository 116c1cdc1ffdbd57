//! The Lua scripts, one per state transition. Each is the prelude's definitions its body
//! uses, its body as the function `one` (run once per item of a call), and the batch driver
//! (`lua/batch.lua`); `redis::Script` runs it by `EVALSHA` and loads it on `NOSCRIPT`.
//!
//! A body names its item's arguments `A[k]` (`A[2]` the first) and their end `#A`; they
//! become `ARGV[o + k]` and `An`, so no item's arguments are copied. What all items of a
//! call share (a backend's limits, say) is sent once, as `ARGV[3]` onwards.

use redis::Script;

const PRELUDE: &str = include_str!("lua/prelude.lua");
const BATCH: &str = include_str!("lua/batch.lua");

/// Every transition of the Redis backend.
pub(super) struct Scripts {
    pub submit: Script,
    pub release: Script,
    pub discard: Script,
    pub cancel: Script,
    pub claim: Script,
    pub heartbeat: Script,
    pub write: Script,
    pub deliver: Script,
    pub recover: Script,
    pub handback: Script,
    pub watch: Script,
    /// The queue's counts (metrics).
    pub stats: Script,
    /// What an operator reads, and the workers' reports.
    pub operator: Script,
    /// `get` for a call alone: a poll is one small read, whose latency matters more than
    /// sharing its round trip.
    pub get_alone: Script,
}

/// The prelude cut at its `--@ name` lines: the part before the first (always included),
/// then each definition with its name.
fn sections(prelude: &str) -> (String, Vec<(&str, String)>) {
    let mut head = String::new();
    let mut named: Vec<(&str, String)> = Vec::new();
    for line in prelude.lines() {
        if let Some(name) = line.strip_prefix("--@ ") {
            named.push((name.trim(), String::new()));
        } else {
            let text = match named.last_mut() {
                Some((_, text)) => text,
                None => &mut head,
            };
            text.push_str(line);
            text.push('\n');
        }
    }
    (head, named)
}

/// `body` with its item's arguments read in place: `A[` becomes `ARGV[o + ` and `#A` becomes
/// `An` (the number of the item's last argument, as `A` counts).
fn item_arguments(body: &str) -> String {
    arguments_as(body, "ARGV[o + ", "An")
}

/// `body` with `A[` written `index` and `#A` written `end`.
fn arguments_as(body: &str, index: &str, end: &str) -> String {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(body.len() + 256);
    let mut rest = body;
    let mut previous: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        let standalone = !previous.is_some_and(is_ident);
        if standalone && rest.starts_with("#A") && !rest[2..].starts_with(is_ident) {
            out.push_str(end);
            rest = &rest[2..];
            previous = Some('A');
            continue;
        }
        if standalone && previous != Some('#') && rest.starts_with("A[") {
            out.push_str(index);
            rest = &rest[2..];
            previous = Some('[');
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
        previous = Some(c);
    }
    out
}

/// Whether `code` uses the identifier `name` (not as part of a longer one).
fn uses(code: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The script of `body`: the prelude's head, the definitions `body` needs (in the
/// prelude's order, each with those it needs), the body as `one`, the batch driver.
fn script_text(body: &str) -> String {
    format!(
        "{}local function one(o, An)\n{}\nend\n{BATCH}",
        definitions(body),
        item_arguments(body)
    )
}

/// The script of `body` for one call alone (no batch driver): `A[k]` is `ARGV[k]`.
fn alone_text(body: &str) -> String {
    let body = arguments_as(body, "ARGV[", "#ARGV");
    format!("{}{body}\n", definitions(&body))
}

/// The prelude's head and the definitions `body` needs (in the prelude's order, each with
/// those it needs).
fn definitions(body: &str) -> String {
    let (head, named) = sections(PRELUDE);
    let mut needed = vec![false; named.len()];
    // Definitions only use earlier ones: one pass from the end finds them all.
    let mut users = body.to_owned();
    for (i, (name, text)) in named.iter().enumerate().rev() {
        if uses(&users, name) {
            needed[i] = true;
            users.push_str(text);
        }
    }
    let mut text = head;
    for ((_, definition), needed) in named.iter().zip(&needed) {
        if *needed {
            text.push_str(definition);
        }
    }
    text
}

fn script(body: &str) -> Script {
    Script::new(&script_text(body))
}

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            submit: script(include_str!("lua/submit.lua")),
            release: script(include_str!("lua/release.lua")),
            discard: script(include_str!("lua/discard.lua")),
            cancel: script(include_str!("lua/cancel.lua")),
            claim: script(include_str!("lua/claim.lua")),
            heartbeat: script(include_str!("lua/heartbeat.lua")),
            write: script(include_str!("lua/write.lua")),
            deliver: script(include_str!("lua/deliver.lua")),
            recover: script(include_str!("lua/recover.lua")),
            handback: script(include_str!("lua/handback.lua")),
            watch: script(include_str!("lua/watch.lua")),
            stats: script(include_str!("lua/stats.lua")),
            operator: script(include_str!("lua/operator.lua")),
            get_alone: Script::new(&alone_text(include_str!("lua/get.lua"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{item_arguments, script_text, uses};

    #[test]
    fn item_arguments_are_read_in_place() {
        assert_eq!(
            item_arguments("for i = 4, #A, 2 do f(A[i], A[i + 1], DATA[2], #AB) end"),
            "for i = 4, An, 2 do f(ARGV[o + i], ARGV[o + i + 1], DATA[2], #AB) end"
        );
    }

    #[test]
    fn a_script_gets_the_definitions_it_uses_and_theirs() {
        let text = script_text("return enqueue(t, id, cal)");
        for needed in [
            "local function enqueue",
            "local function fair_tag",
            "local function wake",
        ] {
            assert!(text.contains(needed), "{needed} is missing");
        }
        assert!(text.contains("local R = "));
        assert!(!text.contains("local function finish"));
        assert!(!text.contains("local function forget_expired"));
    }

    #[test]
    fn a_script_alone_reads_its_arguments_from_argv() {
        let text = super::alone_text("return {A[2], #A}");
        assert!(text.ends_with("return {ARGV[2], #ARGV}\n"), "{text}");
    }

    #[test]
    fn a_script_alone_defers_no_write() {
        // Deferred writes are made by the batch driver, which a script alone does not have.
        let text = super::alone_text(include_str!("lua/get.lua"));
        assert!(!text.contains("FLUSH[#FLUSH + 1]"), "{text}");
        assert!(script_text("ZQ.add(R, 1, 'x')").contains("FLUSH[#FLUSH + 1]"));
    }

    #[test]
    fn names_match_whole_identifiers_only() {
        assert!(uses("redis.call('ZADD', R, 1)", "R"));
        assert!(!uses("local RR = 1", "R"));
        assert!(!uses("tkey_of(x)", "tkey"));
    }
}
