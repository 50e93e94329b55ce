//! The node's key files: the ed25519 account key that signs transactions and the X25519
//! sealing key that opens segment keys sealed to this node's seats.
//!
//! Both live in `<home>/keys/` as hex text, readable by the owner only (0600). They are
//! generated from OS randomness once and never overwritten: losing the sealing key means
//! losing access to segments already assigned to this node's seats.
//!
//! The operator token (`<home>/operator.token`, `[api] operator_token_file` in config) is the
//! node's third secret: 32 random bytes in hex, also 0600, which logs a person in to the
//! node's audit form. `init` and `testnet init` create it; `run` creates it for an older
//! home that has none, and refuses to start when group or others can read it.

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
};

use rand::{RngCore, rngs::OsRng};
use trust_protocol::{Keypair, PublicKey, SealingPublicKey, seal::SealingSecret};

/// File name of the account key under `<home>/keys/`.
pub const ACCOUNT_KEY_FILE: &str = "account.key";
/// File name of the sealing key under `<home>/keys/`.
pub const SEALING_KEY_FILE: &str = "sealing.key";

/// Why keys could not be created or loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Reading or writing a key file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A key file does not hold 64 hex characters.
    #[error("{0}: not a key file (expected 64 hex characters)")]
    Malformed(PathBuf),
    /// Keys already exist where new ones were to be created.
    #[error("{0} already exists: refusing to overwrite a key")]
    Exists(PathBuf),
    /// A key file is readable by others.
    #[error("{0} is readable by group or others: run chmod 600 on it")]
    Permissions(PathBuf),
}

/// Default file name of the operator token, under the home.
pub const OPERATOR_TOKEN_FILE: &str = "operator.token";

/// The operator token: the secret a person presents to the node's web forms.
#[derive(Clone, PartialEq, Eq)]
pub struct OperatorToken(String);

impl std::fmt::Debug for OperatorToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OperatorToken(..)")
    }
}

impl OperatorToken {
    /// The token's text (64 hex characters), to compare with what a person presents.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A token with this text, for tests.
    #[cfg(test)]
    pub(crate) fn for_tests(text: &str) -> Self {
        Self(text.to_string())
    }
}

/// Creates a fresh operator token at `path` (mode 0600); refuses to overwrite one.
pub fn generate_operator_token(path: &Path) -> Result<OperatorToken, KeyError> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    write_secret(path, &bytes)?;
    Ok(OperatorToken(hex::encode(bytes)))
}

/// Loads the operator token at `path`, creating it if there is none (a home made before
/// tokens existed). Returns it and whether it was created. Refuses a token file that group
/// or others can read.
pub fn operator_token(path: &Path) -> Result<(OperatorToken, bool), KeyError> {
    if !path.exists() {
        return Ok((generate_operator_token(path)?, true));
    }
    Ok((OperatorToken(hex::encode(read_secret(path)?)), false))
}

/// Loads the operator token at `path` without creating one (the API reads it again when
/// the file changes, so that a rotated token takes effect at once).
pub fn load_operator_token(path: &Path) -> Result<OperatorToken, KeyError> {
    Ok(OperatorToken(hex::encode(read_secret(path)?)))
}

/// Replaces the operator token at `path` with a fresh one (0600, written beside it and
/// renamed over it, so a reader sees the old token or the new one, never half of either).
/// The old token stops working at once: the running node reads the file again when it
/// changes, and closes every audit-form login opened with the old one.
pub fn rotate_operator_token(path: &Path) -> Result<OperatorToken, KeyError> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".new");
    let fresh = path.with_file_name(name);
    match fs::remove_file(&fresh) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&fresh)(e)),
    }
    let token = generate_operator_token(&fresh)?;
    fs::rename(&fresh, path).map_err(io(path))?;
    Ok(token)
}

/// The node's keys.
#[derive(Debug, Clone)]
pub struct NodeKeys {
    /// Signs transactions; its public key is the account id.
    pub account: Keypair,
    /// Opens segment keys sealed to this node's seats.
    pub sealing: SealingSecret,
}

impl NodeKeys {
    /// The account id.
    pub fn account_id(&self) -> PublicKey {
        self.account.public()
    }

    /// The sealing public key registered on the ledger.
    pub fn sealing_public(&self) -> SealingPublicKey {
        self.sealing.public()
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where a home keeps its key files.
pub(crate) fn keys_dir(home: &Path) -> PathBuf {
    home.join("keys")
}

fn write_secret(path: &Path, bytes: &[u8; 32]) -> Result<(), KeyError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                KeyError::Exists(path.to_path_buf())
            } else {
                io(path)(e)
            }
        })?;
    f.write_all(format!("{}\n", hex::encode(bytes)).as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(io(path))
}

fn read_secret(path: &Path) -> Result<[u8; 32], KeyError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = fs::metadata(path).map_err(io(path))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(KeyError::Permissions(path.to_path_buf()));
    }
    if meta.len() > 1024 {
        return Err(KeyError::Malformed(path.to_path_buf()));
    }
    let text = fs::read_to_string(path).map_err(io(path))?;
    let mut out = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut out)
        .map_err(|_| KeyError::Malformed(path.to_path_buf()))?;
    Ok(out)
}

/// Creates fresh keys under `<home>/keys/`; refuses if either file exists.
pub fn generate(home: &Path) -> Result<NodeKeys, KeyError> {
    let dir = keys_dir(home);
    fs::create_dir_all(&dir).map_err(io(&dir))?;
    let (account_path, sealing_path) = (dir.join(ACCOUNT_KEY_FILE), dir.join(SEALING_KEY_FILE));
    for p in [&account_path, &sealing_path] {
        if p.exists() {
            return Err(KeyError::Exists(p.clone()));
        }
    }
    let mut account = [0u8; 32];
    let mut sealing = [0u8; 32];
    OsRng.fill_bytes(&mut account);
    OsRng.fill_bytes(&mut sealing);
    write_secret(&account_path, &account)?;
    write_secret(&sealing_path, &sealing)?;
    Ok(NodeKeys {
        account: Keypair::from_seed(account),
        sealing: SealingSecret::from_bytes(sealing),
    })
}

/// Loads the keys under `<home>/keys/`.
pub fn load(home: &Path) -> Result<NodeKeys, KeyError> {
    let dir = keys_dir(home);
    Ok(NodeKeys {
        account: Keypair::from_seed(read_secret(&dir.join(ACCOUNT_KEY_FILE))?),
        sealing: SealingSecret::from_bytes(read_secret(&dir.join(SEALING_KEY_FILE))?),
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn generate_then_load_gives_the_same_keys() {
        let home = tempfile::tempdir().expect("tempdir");
        let k = generate(home.path()).expect("generate");
        let l = load(home.path()).expect("load");
        assert_eq!(k.account_id(), l.account_id());
        assert_eq!(k.sealing_public(), l.sealing_public());
        let mode = fs::metadata(home.path().join("keys").join(ACCOUNT_KEY_FILE))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // A second generate never overwrites.
        assert!(matches!(generate(home.path()), Err(KeyError::Exists(_))));
        // Two homes get different keys.
        let other = tempfile::tempdir().expect("tempdir");
        assert_ne!(
            generate(other.path()).expect("gen").account_id(),
            k.account_id()
        );
    }

    #[test]
    fn the_operator_token_is_created_owner_only_and_refused_when_others_can_read_it() {
        let home = tempfile::tempdir().expect("tempdir");
        let path = home.path().join(OPERATOR_TOKEN_FILE);
        let (t, created) = operator_token(&path).expect("created");
        assert!(created);
        assert_eq!(t.expose().len(), 64);
        assert!(t.expose().bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(!format!("{t:?}").contains(t.expose()), "never in logs");
        let mode = fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // Loaded again, the same token; never overwritten.
        assert_eq!(operator_token(&path).expect("loaded"), (t.clone(), false));
        assert!(matches!(
            generate_operator_token(&path),
            Err(KeyError::Exists(_))
        ));
        // Another home, another token.
        let other = tempfile::tempdir().expect("tempdir");
        let (u, _) = operator_token(&other.path().join(OPERATOR_TOKEN_FILE)).expect("other");
        assert_ne!(u, t);
        // Group- or world-readable: refused, with the file named and the fix.
        for mode in [0o640, 0o604] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
            let err = operator_token(&path).expect_err("refused");
            assert!(matches!(&err, KeyError::Permissions(p) if *p == path));
            assert!(err.to_string().contains("chmod 600"), "{err}");
        }
    }

    #[test]
    fn bad_key_files_are_named() {
        let home = tempfile::tempdir().expect("tempdir");
        generate(home.path()).expect("generate");
        let path = home.path().join("keys").join(SEALING_KEY_FILE);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(matches!(load(home.path()), Err(KeyError::Permissions(p)) if p == path));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
        fs::write(&path, "not hex").expect("write");
        assert!(matches!(load(home.path()), Err(KeyError::Malformed(p)) if p == path));
        let missing = tempfile::tempdir().expect("tempdir");
        assert!(matches!(load(missing.path()), Err(KeyError::Io { .. })));
    }
}
