//! `ctl fleet`: the fleet's live sidecars and the revision each applied, read from etcd.

use std::path::Path;

use crate::ctl::output::say;

/// `ctl fleet`: each live sidecar and the revision it applied, from etcd; an error if
/// they do not all show the same.
pub(super) async fn fleet_members(
    args: &crate::config::FleetArgs,
    config: Option<&Path>,
    json: bool,
) -> Result<(), String> {
    use crate::registry::fleet::{etcd::Etcd, layout::Keys, members};
    let options = crate::config::fleet_settings(args, config)
        .map_err(|e| e.to_string())?
        .ok_or("ctl fleet needs the fleet's etcd: --fleet-etcd-endpoints or A2A_COMMANDS_FLEET_ETCD_ENDPOINTS")?;
    let etcd = Etcd::new(&options)?;
    let listed = members::list(&etcd, &Keys::new(&options.prefix))
        .await
        .map_err(|e| e.to_string())?;
    if json {
        say!(
            "{}",
            serde_json::to_string(&listed).expect("members serialize")
        );
    } else {
        say!(
            "{:<32} {:<24} {:>10} {:>14}",
            "MEMBER",
            "ADDR",
            "REVISION",
            "ETCD_REVISION"
        );
        for m in &listed {
            say!(
                "{:<32} {:<24} {:>10} {:>14}",
                m.name,
                m.addr,
                m.revision,
                m.etcd_revision
            );
        }
    }
    let revisions: std::collections::BTreeSet<u64> = listed.iter().map(|m| m.revision).collect();
    if revisions.len() > 1 {
        return Err(format!(
            "the {} live sidecars have applied different revisions: {revisions:?}",
            listed.len()
        ));
    }
    Ok(())
}
