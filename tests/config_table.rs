//! README's configuration tables agree with `serve --help`: every flag of `serve` has
//! one row, and each row names the flag's environment variable and its default as the
//! binary has them.

use std::collections::BTreeMap;

use a2a_commands::config::Cli;
use clap::CommandFactory;

/// What the binary says of one flag: its variable, and its default (clap's own, or the
/// `[default: ...]` its help states for a default resolved at start).
#[derive(Debug)]
struct Flag {
    env: Option<String>,
    default: Option<String>,
}

fn serve_flags() -> BTreeMap<String, Flag> {
    let cli = Cli::command();
    let serve = cli.find_subcommand("serve").expect("serve");
    serve
        .get_arguments()
        .filter_map(|arg| {
            let long = arg.get_long()?;
            if long == "help" {
                return None;
            }
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            let mut default = arg
                .get_default_values()
                .first()
                .map(|v| v.to_string_lossy().into_owned());
            if default.is_none() {
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                default = help
                    .split_once("[default: ")
                    .and_then(|(_, rest)| rest.split(']').next())
                    // The first of several ("A, else B") is the one a table cell leads with.
                    .map(|d| d.split(", ").next().unwrap().trim().to_owned())
                    .filter(|d| !d.starts_with("none"));
            }
            Some((format!("--{long}"), Flag { env, default }))
        })
        .collect()
}

/// The first `code` span of a table cell.
fn first_code(cell: &str) -> Option<String> {
    let start = cell.find('`')? + 1;
    let end = start + cell[start..].find('`')?;
    Some(cell[start..end].to_owned())
}

/// README's rows for flags: flag → (environment cell, default cell).
fn readme_rows() -> BTreeMap<String, (String, String)> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut rows = BTreeMap::new();
    for line in readme.lines().filter(|l| l.starts_with("| `--")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 4, "a row of four cells: {line}");
        let flag = first_code(cells[0]).unwrap();
        let previous = rows.insert(flag.clone(), (cells[1].to_owned(), cells[2].to_owned()));
        assert!(previous.is_none(), "{flag} has two rows");
    }
    rows
}

#[test]
fn every_serve_flag_has_a_true_row() {
    let flags = serve_flags();
    let rows = readme_rows();
    assert!(flags.contains_key("--listen") && flags.contains_key("--handler-timeout-ms"));
    let mut problems = Vec::new();
    for (name, flag) in &flags {
        let Some((env, default)) = rows.get(name) else {
            problems.push(format!("{name} has no row in README.md"));
            continue;
        };
        let row_env = first_code(env);
        if row_env != flag.env {
            problems.push(format!(
                "{name}: README names {row_env:?}, the binary {:?}",
                flag.env
            ));
        }
        let row_default = first_code(default);
        match (&flag.default, &row_default) {
            (Some(wanted), Some(written)) if wanted == written => {}
            (None, None) => {}
            // A boolean switch: clap's default is "false", the README says off.
            (Some(wanted), None) if wanted == "false" && default == "off" => {}
            _ => problems.push(format!(
                "{name}: README's default is {default:?}, the binary's {:?}",
                flag.default
            )),
        }
    }
    for name in rows.keys().filter(|n| !flags.contains_key(*n)) {
        problems.push(format!(
            "README has a row for {name}, which serve does not take"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
