//! A Facet WebAssembly filter in Rust, proving the ABI is language-neutral:
//! stdin is the object's stream, stdout the result, parameters arrive as
//! FACET_PARAM_* environment variables. With FACET_PARAM_KEY set it XORs
//! the stream with the key (reversible: the same code undoes it); without,
//! it copies. Standard library only, no crates, so `rustc` alone builds it:
//!
//!     rustc --edition 2021 -O --target wasm32-wasip1 -C strip=symbols main.rs -o noop.wasm
use std::io::{self, Read, Write};
use std::process::exit;

fn main() {
    let key: Vec<u8> = std::env::var("FACET_PARAM_KEY").unwrap_or_default().into_bytes();
    let mut stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    let mut buf = vec![0u8; 1 << 20];
    let mut phase = 0usize;
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("rust-noop: read: {e}");
                exit(1);
            }
        };
        if !key.is_empty() {
            for b in &mut buf[..n] {
                *b ^= key[phase];
                phase += 1;
                if phase == key.len() {
                    phase = 0;
                }
            }
        }
        if let Err(e) = stdout.write_all(&buf[..n]) {
            eprintln!("rust-noop: write: {e}");
            exit(1);
        }
    }
    if let Err(e) = stdout.flush() {
        eprintln!("rust-noop: flush: {e}");
        exit(1);
    }
}
