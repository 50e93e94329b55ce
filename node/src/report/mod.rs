//! Reports written for people: tables on the terminal and SVG charts on disk.

pub mod svg;
pub mod words;
