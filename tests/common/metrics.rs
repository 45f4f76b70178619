//! `GET /metrics` from a metrics listener, over plain HTTP/1.1 on a std socket (no
//! client crate needed), and the values of its series.

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;

/// One scrape: the response head (status line and headers) and the OpenMetrics text.
pub struct Scrape {
    pub head: String,
    pub body: String,
}

impl Scrape {
    /// The value of the series written exactly as `series` (name and labels, in the
    /// order the server prints them), if it is there.
    pub fn value(&self, series: &str) -> Option<f64> {
        self.body
            .lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .map(|value| value.parse().unwrap())
    }

    /// The value of `series`, 0 when it is not there (a counter not yet counted).
    pub fn count(&self, series: &str) -> f64 {
        self.value(series).unwrap_or(0.0)
    }
}

/// Scrapes `addr`, off the runtime the servers run on.
pub async fn scrape(addr: SocketAddr) -> Scrape {
    tokio::task::spawn_blocking(move || scrape_blocking(addr))
        .await
        .unwrap()
}

fn scrape_blocking(addr: SocketAddr) -> Scrape {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole response");
    Scrape {
        head: head.to_owned(),
        body: body.to_owned(),
    }
}
