//! The entry point: runs a verb, connecting to the server for those that need it.

use std::sync::atomic::Ordering;

use crate::config::{CtlArgs, CtlVerb};
use crate::ctl::check::check;
use crate::ctl::connect::{authorized, connect, status_line, Client};
use crate::ctl::fleet::fleet_members;
use crate::ctl::imports::{mcp_prompts, refusals};
use crate::ctl::listing::{declared_of, list, list_specs, watch};
use crate::ctl::output::{say, write_out, CHANGING};
use crate::ctl::register::{read_file, register, register_all};
use crate::pb;
use crate::registry::commands_file;
use crate::registry::prompt_files;

/// Runs `args`' verb; the error is the one line to print.
pub async fn run(args: CtlArgs) -> Result<(), String> {
    if let CtlVerb::Check {
        file,
        handlers,
        fleet,
        front,
        config,
    } = &args.verb
    {
        let policy = crate::config::handler_policy(handlers).map_err(|e| e.to_string())?;
        if crate::config::fleet_settings(fleet, config.as_deref())
            .map_err(|e| e.to_string())?
            .is_some()
        {
            say!("fleet settings: valid");
        }
        if crate::config::front_settings(front, config.as_deref())
            .map_err(|e| e.to_string())?
            .is_some()
        {
            say!("front settings: valid");
        }
        return check(file, &policy);
    }
    if let CtlVerb::Fleet {
        fleet,
        config,
        json,
    } = &args.verb
    {
        return fleet_members(fleet, config.as_deref(), *json).await;
    }
    let imported = match &args.verb {
        CtlVerb::ImportPrompts { path, output } => Some((prompt_files::import(path)?, output)),
        CtlVerb::ImportMcpPrompts {
            url,
            output,
            headers,
            secrets_dir,
        } => Some((mcp_prompts(url, headers, secrets_dir).await?, output)),
        _ => None,
    };
    if let Some((imported, Some(out))) = &imported {
        // A commands file: nothing is sent, so no server is needed.
        let text = commands_file::render(imported.commands.iter().map(|(s, b, a)| (s, b, a)));
        std::fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
        say!(
            "wrote {} prompt commands to {}",
            imported.commands.len(),
            out.display()
        );
        return refusals(&imported.refused);
    }
    let mut client = connect(&args).await?;
    let result = match imported {
        Some((imported, None)) => {
            CHANGING.store(true, Ordering::Relaxed);
            // Replacing, but never widening an operator's restriction: the files carry no
            // access of their own.
            let registered = register_all(&mut client, &args, imported.commands, true, false).await;
            registered.and(refusals(&imported.refused))
        }
        _ => verb(&mut client, &args).await,
    };
    // A TLS 1.3 server that wants a client certificate ends the connection only after
    // the handshake, so the first call fails with a closed or broken connection.
    let tls_without_cert = args.addr.trim().starts_with("https://") && args.tls_cert.is_none();
    result.map_err(|line| {
        if tls_without_cert && line.contains("transport error") && !line.contains("--tls-") {
            format!("{line} (if the server requires client certificates, pass --tls-cert and --tls-key)")
        } else {
            line
        }
    })
}

/// Runs every verb but `check` over `client`.
async fn verb(client: &mut Client, args: &CtlArgs) -> Result<(), String> {
    let changes = matches!(
        args.verb,
        CtlVerb::Register(_)
            | CtlVerb::Unregister { .. }
            | CtlVerb::Import { .. }
            | CtlVerb::ImportPrompts { output: None, .. }
            | CtlVerb::ImportMcpPrompts { output: None, .. }
    );
    CHANGING.store(changes, Ordering::Relaxed);
    match &args.verb {
        CtlVerb::List { json } => list(client, *json).await,
        CtlVerb::Register(register_args) => register(client, args, register_args).await,
        CtlVerb::Unregister { names } => {
            for name in names {
                let request = authorized(args, pb::UnregisterRequest { name: name.clone() })?;
                let revision = client
                    .unregister(request)
                    .await
                    .map_err(|s| status_line(&s))?
                    .into_inner()
                    .revision;
                say!("unregistered /{name} (revision {revision})");
            }
            Ok(())
        }
        CtlVerb::Watch { json } => watch(client, *json).await,
        CtlVerb::Export { output } => {
            let listed = list_specs(client).await?;
            let declared = declared_of(&listed)?;
            let text = commands_file::render(declared.iter().map(|(s, b, a)| (s, b, a)));
            match output {
                Some(path) => std::fs::write(path, text)
                    .map_err(|e| format!("cannot write {}: {e}", path.display())),
                None => {
                    write_out(&text);
                    Ok(())
                }
            }
        }
        CtlVerb::Import { file } => register_all(client, args, read_file(file)?, true, true).await,
        CtlVerb::ImportPrompts { .. } | CtlVerb::ImportMcpPrompts { .. } => {
            unreachable!("handled in run")
        }
        CtlVerb::Check { .. } | CtlVerb::Fleet { .. } => unreachable!("handled above"),
    }
}
