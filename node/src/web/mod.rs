//! The node's read-only web pages: server-rendered HTML with inline CSS and SVG, no
//! external assets and no script, served by the node's own HTTP server beside the JSON
//! API.

pub mod layout;
