//! HTTP/1.1 on the wire, for the front's hop: both halves of it. The server's loop
//! ([`serve`]: one task per client connection, generic over what answers a request),
//! the client of the agent ([`client`]: one connection, its answers' heads read by
//! [`answer`]), and what they share: one body writer ([`body`]), what a
//! head must be before it is believed ([`rules`]), message framing ([`framing`]:
//! lengths, chunks, the date line), socket reads that clear their readiness when they
//! empty the socket ([`socket`]), the server's half of a message (a plain request head
//! parsed, an answer framed: [`server`]), the client's request head ([`request`]), a
//! timer kept across a connection's requests ([`timer`]), header names compared
//! without case a word at a time ([`token`]), and the request and answer
//! carried from one to the other, their header lines as they came ([`head`]).
//! Below the front and the transport; it knows nothing of A2A.

pub mod answer;
pub mod body;
pub mod client;
pub mod framing;
pub mod head;
pub mod request;
pub mod rules;
pub mod serve;
pub mod server;
pub mod socket;
pub mod timer;
pub mod token;
