//! `config.toml` as the node reads it at start (`config::load_config` parses the file with
//! `config::parse_config`), in the nested layout or the deprecated flat one (converted). The
//! file is the operator's, but it is often generated, copied or edited by hand, and a bad
//! one must give a clear error, never a panic.
//!
//! Properties: no panic; a config that parses, in either layout, is written back
//! (`config::render_config`, as `write_config` writes it: nested) to text that parses to an
//! equal config, or refused with a reason.
use trust_node::config;

/// One input, as the fuzzer (and the seed replay test) gives it.
pub(crate) fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cfg) = config::parse_config(text) else {
        return;
    };
    match config::render_config(&cfg) {
        Ok(written) => {
            let back = config::parse_config_with_layout(&written).expect("a written config parses");
            assert_eq!(back.layout, config::Layout::Nested);
            assert_eq!(back.config, cfg);
        }
        // The one config that parses but is not written (see config::MAX_QUOTE_RUN).
        Err(reason) => assert!(
            reason.to_string().contains("quote characters in a row"),
            "{reason}"
        ),
    }
    let _ = cfg.operator_token_path(std::path::Path::new("/home"));
}
