//! The node's web pages: server-rendered HTML with inline CSS and SVG, no external assets
//! and no script, served by the node's own HTTP server beside the JSON API. The read-only
//! pages show the network; the audit form ([`audit`], behind [`auth`]) is where a person
//! judges the segments this node's Human seats hold.

pub mod audit;
pub mod auth;
pub mod layout;
