//! The node's key files: the ed25519 account key that signs transactions and the X25519
//! sealing key that opens segment keys sealed to this node's seats.
//!
//! Both live in `<home>/keys/` as hex text, readable by the owner only (0600). They are
//! generated from OS randomness once and never overwritten: losing the sealing key means
//! losing access to segments already assigned to this node's seats.

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
