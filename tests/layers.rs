//! The layering rule of `ARCHITECTURE.md`, checked on the source: every `crate::` import
//! points down a layer, no module imports one of its ancestors (a `mod.rs` only
//! re-exports), no two modules import each other in a loop, and the rules stay free of
//! I/O and of the crates that do it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Which layers each top-level module may import (besides itself).
const ALLOWED: &[(&str, &[&str])] = &[
    ("error", &[]),
    ("codes", &[]),
    ("wire", &["pb"]),
    ("views", &["pb"]),
    ("metrics", &[]),
    ("http1", &[]),
    ("telemetry", &["metrics"]),
    ("rules", &["pb", "views", "error"]),
    (
        "registry",
        &["rules", "pb", "metrics", "telemetry", "error"],
    ),
    (
        "bodies",
        &["rules", "pb", "codes", "metrics", "telemetry", "error"],
    ),
    (
        "run",
        &[
            "registry",
            "bodies",
            "rules",
            "pb",
            "views",
            "metrics",
            "telemetry",
            "error",
        ],
    ),
    (
        "front",
        &[
            "http1",
            "run",
            "registry",
            "bodies",
            "rules",
            "pb",
            "views",
            "codes",
            "metrics",
            "telemetry",
            "error",
        ],
    ),
    (
        "config",
        &[
            "front",
            "registry",
            "bodies",
            "rules",
            "pb",
            "views",
            "wire",
            "telemetry",
            "error",
        ],
    ),
    (
        "transport",
        &[
            "front",
            "http1",
            "run",
            "config",
            "registry",
            "bodies",
            "rules",
            "pb",
            "views",
            "wire",
            "codes",
            "metrics",
            "telemetry",
            "error",
        ],
    ),
    (
        "ctl",
        &[
            "transport",
            "front",
            "http1",
            "run",
            "config",
            "registry",
            "bodies",
            "rules",
            "pb",
            "views",
            "wire",
            "codes",
            "metrics",
            "telemetry",
            "error",
        ],
    ),
];

/// Paths the rules may not name: they would bring I/O, threads or the transport in.
const FORBIDDEN_IN_RULES: &[&str] = &[
    "tokio",
    "sled",
    "tonic",
    "reqwest",
    "tracing",
    "std::fs",
    "std::net",
    "std::thread",
    "std::process",
    "std::io",
];

/// A module's path (`registry::store`) for every file under `src/` (binaries left out).
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().unwrap() != "bin" {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts == ["main"] {
                continue;
            }
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                parts.pop();
            }
            out.insert(parts.join("::"), std::fs::read_to_string(&path).unwrap());
        }
    }
    out
}

/// The text without comments (line comments, doc comments included).
fn code_only(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Flattens a use tree such as `a::{b, c::{d, e}}` into full paths.
fn expand(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').unwrap()];
        let prefix = if head.is_empty() {
            prefix.to_owned()
        } else {
            format!("{prefix}{head}::")
        };
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], &prefix, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], &prefix, out);
    } else if !tree.is_empty() {
        let path = tree.split(" as ").next().unwrap().trim();
        out.push(format!("{prefix}{path}"));
    }
}

/// Every path the module names: its `use` trees and `crate::`/`std::`/crate paths inline.
fn imports(text: &str) -> Vec<String> {
    let code = code_only(text);
    let mut out = Vec::new();
    // A `use` item starts its line (after any visibility): the word in a string or a
    // sentence is not one.
    let uses = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);").unwrap();
    for u in uses.captures_iter(&code) {
        expand(&u[1], "", &mut out);
    }
    let inline = regex::Regex::new(r"\b(crate(?:::\w+)+)").unwrap();
    out.extend(inline.captures_iter(&code).map(|c| c[1].to_owned()));
    out
}

/// The module a `crate::` path lands in: its longest prefix that is a module.
fn resolve(path: &str, known: &BTreeSet<&str>) -> Option<String> {
    let parts: Vec<&str> = path
        .strip_prefix("crate::")?
        .split("::")
        .filter(|p| *p != "self")
        .collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|candidate| known.contains(candidate.as_str()))
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap()
}

/// Every broken rule, in words; empty when the layering holds.
fn violations(modules: &BTreeMap<String, String>) -> Vec<String> {
    let mut known: BTreeSet<&str> = modules.keys().map(String::as_str).collect();
    known.insert("pb");
    let mut problems = Vec::new();
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in modules {
        if module.is_empty() {
            continue; // lib.rs declares the modules
        }
        for path in imports(text) {
            if top(module) == "rules" {
                if let Some(bad) = FORBIDDEN_IN_RULES
                    .iter()
                    .find(|f| path == **f || path.starts_with(&format!("{f}::")))
                {
                    problems.push(format!("{module} uses {bad} ({path}): the rules do no I/O"));
                }
            }
            let Some(target) = resolve(&path, &known) else {
                continue;
            };
            if target == *module || target.is_empty() {
                continue;
            }
            if module.starts_with(&format!("{target}::")) {
                problems.push(format!(
                    "{module} imports its ancestor {target} ({path}): import the sibling itself"
                ));
                continue;
            }
            let (from, to) = (top(module), top(&target));
            if from != to {
                let allowed = ALLOWED
                    .iter()
                    .find(|(layer, _)| *layer == from)
                    .is_some_and(|(_, below)| below.contains(&to));
                if !allowed {
                    problems.push(format!(
                        "{module} imports {target} ({path}): {from} may not depend on {to}"
                    ));
                }
            }
            edges.entry(module.as_str()).or_default().insert(target);
        }
    }
    problems.extend(cycles(&edges));
    problems.extend(upward_impls(modules, &known));
    problems
}

/// The `crate::` path a name written in `module` stands for: a path as written, or the
/// import whose last segment is the name's first; `None` for a name of another crate or
/// one defined in the module itself.
fn qualify(name: &str, imported: &[String]) -> Option<String> {
    if name.starts_with("crate::") {
        return Some(name.to_owned());
    }
    let (first, rest) = match name.split_once("::") {
        Some((first, rest)) => (first, Some(rest)),
        None => (name, None),
    };
    let import = imported
        .iter()
        .find(|path| path.rsplit("::").next() == Some(first))?;
    Some(match rest {
        Some(rest) => format!("{import}::{rest}"),
        None => import.clone(),
    })
}

/// Trait impls that make a lower layer depend on a higher one: a module may implement
/// one of our traits from another layer only for a type of its own layer. (An impl of a
/// lower trait for a lower type, such as the codec's trait for generated messages, would
/// let the lower layers compile only because the higher one exists, which no `use` line
/// shows.)
fn upward_impls(modules: &BTreeMap<String, String>, known: &BTreeSet<&str>) -> Vec<String> {
    let pattern = regex::Regex::new(
        r"\bimpl(?:\s*<[^>]*>)?\s+([A-Za-z_][\w:]*)(?:\s*<[^{;]*?>)?\s+for\s+(\$?[A-Za-z_][\w:]*)",
    )
    .unwrap();
    let mut problems = Vec::new();
    for (module, text) in modules {
        let layer = top(module);
        let imported = imports(text);
        for found in pattern.captures_iter(&code_only(text)) {
            let (written_trait, written_type) = (&found[1], &found[2]);
            let Some(trait_module) =
                qualify(written_trait, &imported).and_then(|path| resolve(&path, known))
            else {
                continue; // another crate's trait, or one of this module's own
            };
            if top(&trait_module) == layer {
                continue;
            }
            // A type written as a macro's parameter could be anything: not its own.
            let own_type = !written_type.starts_with('$')
                && match qualify(written_type, &imported) {
                    None => true,
                    Some(path) => resolve(&path, known).is_some_and(|m| top(&m) == layer),
                };
            if !own_type {
                problems.push(format!(
                    "{module} implements {written_trait} (from {trait_module}) for \
                     {written_type}, not a type of {layer}: put the impl beside the trait or \
                     the type"
                ));
            }
        }
    }
    problems
}

/// Loops in the import graph, each as one line.
fn cycles(edges: &BTreeMap<&str, BTreeSet<String>>) -> Vec<String> {
    fn visit<'a>(
        node: &'a str,
        edges: &'a BTreeMap<&str, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        found: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node);
            found.push(format!("import cycle: {}", cycle.join(" -> ")));
            return;
        }
        if !done.insert(node) {
            return;
        }
        path.push(node);
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, path, done, found);
        }
        path.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn every_import_points_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    assert!(modules.contains_key("rules::parse"), "the source was read");
    let problems = violations(&modules);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_catches_what_it_forbids() {
    let fake = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(m, t)| (m.to_string(), t.to_string()))
            .collect()
    };
    let upward = fake(&[
        ("rules::parse", "use crate::registry::Snapshot;"),
        ("registry", ""),
    ]);
    assert!(violations(&upward)[0].contains("rules may not depend on registry"));

    let looped = fake(&[
        ("registry::a", "use crate::registry::{b::X, c};"),
        ("registry::b", "fn f() { crate::registry::a::g() }"),
        ("registry::c", ""),
    ]);
    assert!(violations(&looped)
        .iter()
        .any(|p| p.contains("import cycle: registry::a -> registry::b -> registry::a")));

    let io = fake(&[("rules::x", "use tokio::sync::watch;\nuse std::fs;")]);
    assert_eq!(violations(&io).len(), 2, "{:?}", violations(&io));

    let ancestor = fake(&[
        ("registry", "pub use state::State;"),
        ("registry::state", ""),
        ("registry::writer", "use crate::registry::State;"),
    ]);
    assert!(violations(&ancestor)[0].contains("imports its ancestor"));

    let upward_impl = fake(&[
        ("wire", "pub trait Scanned {}"),
        (
            "transport::codec",
            "use crate::pb;\nuse crate::wire::Scanned;\nimpl Scanned for pb::ClassifyRequest {}",
        ),
        (
            "transport::macros",
            "use crate::wire::Scanned;\nmacro_rules! s { ($t:ty) => { impl Scanned for $t {} } }",
        ),
        (
            "registry::snapshot",
            "use crate::rules::parse::Lookup;\nstruct Snapshot;\nimpl Lookup for Snapshot {}",
        ),
        ("rules::parse", "pub trait Lookup {}"),
    ]);
    let found = violations(&upward_impl);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0]
        .contains("transport::codec implements Scanned (from wire) for pb::ClassifyRequest"));
    assert!(found[1].contains("transport::macros implements Scanned"));

    let commented = fake(&[
        ("rules::x", "// use crate::registry::Snapshot;"),
        ("registry", ""),
    ]);
    assert!(violations(&commented).is_empty());
}

/// The front's pure rooms: its wire formats and rules of its own, which know nothing of
/// a request in flight.
const FRONT_PURE: &[&str] = &[
    "a2a",
    "json_text",
    "v03",
    "grpc",
    "operations",
    "card",
    "sign",
    "limits",
    "options",
];

/// The front's stages: each a step of one request.
const FRONT_STAGES: &[&str] = &[
    "server",
    "classify",
    "commands",
    "tasks",
    "join",
    "forward",
    "card_serving",
    "grpc_calls",
    "grpc_agent",
    "context",
    "reading",
    "answer",
    "handled",
];

/// What the stages use that is not a step of a request: the agent's client, the
/// records, who is asking, the key sets kept fresh and the card checked with one.
const FRONT_SERVICES: &[&str] = &[
    "upstream",
    "pool",
    "records",
    "callers",
    "jwks",
    "card_verify",
];

/// Lines of a file before its unit tests.
fn code_lines(text: &str) -> usize {
    text.lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .count()
}

#[test]
fn the_front_keeps_its_floors() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    let mut problems = Vec::new();
    for (module, text) in &modules {
        let Some(room) = module.strip_prefix("front::") else {
            continue;
        };
        assert!(
            [FRONT_PURE, FRONT_STAGES, FRONT_SERVICES]
                .iter()
                .any(|list| list.contains(&room)),
            "front::{room} is in no list of tests/layers.rs: say which it is"
        );
        let lines = code_lines(text);
        if lines > 500 {
            problems.push(format!(
                "{module} has {lines} lines before its tests (at most 500)"
            ));
        }
        let code = code_only(text);
        if FRONT_PURE.contains(&room) || FRONT_SERVICES.contains(&room) {
            for stage in FRONT_STAGES {
                if code.contains(&format!("crate::front::{stage}::"))
                    || code.contains(&format!("crate::front::{stage};"))
                {
                    problems.push(format!(
                        "{module} is pure but names the stage front::{stage}"
                    ));
                }
            }
        }
        if room != "server" && code.contains("impl Front") {
            problems.push(format!(
                "{module} implements Front: its one impl is server's"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(code_lines("a\nb\n#[cfg(test)]\nmod tests {}") == 2);
}

#[test]
fn http1_and_transport_files_keep_their_floors() {
    // `http1` is every request's path, as `front` is; each transport file translates one
    // thing and stays small.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    for (module, text) in &modules(&src) {
        let most = if module.starts_with("http1::") {
            500
        } else if module.starts_with("transport::") {
            450
        } else {
            continue;
        };
        let lines = code_lines(text);
        if lines > most {
            problems.push(format!(
                "{module} has {lines} lines before its tests (at most {most})"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
