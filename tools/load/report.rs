//! The table the load tool prints.

use std::time::Duration;

use crate::measure::Measured;

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

pub(crate) fn print_table(rows: &[Measured]) {
    println!("| rpc | calls | calls/s | p50 ms | p99 ms | calls/s ÷ floor | p99 ÷ floor | server CPU µs/call |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for row in rows.iter().filter(|r| r.calls > 0) {
        let cpu = row.server_cpu.map_or_else(
            || "n/a".to_owned(),
            |c| format!("{:.1}", c.as_secs_f64() * 1e6),
        );
        println!(
            "| {} | {} | {:.0} | {} | {} | {:.2} | {:.2} | {} |",
            row.name,
            row.calls,
            row.per_second,
            ms(row.p50),
            ms(row.p99),
            row.per_second / row.floor.0,
            row.p99.as_secs_f64() / row.floor.2.as_secs_f64(),
            cpu,
        );
    }
}
