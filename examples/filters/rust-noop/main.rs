//! A Facet WebAssembly filter in Rust, proving the ABI is language-neutral:
//! stdin is the object's stream, stdout the result, parameters arrive as
//! FACET_PARAM_* environment variables. With FACET_PARAM_KEY set it XORs
//! the stream with the key (reversible: the same code undoes it); without,
//! it copies. Standard library only, no crates, so `rustc` alone builds it:
//!
//!     rustc --edition 2021 -O --target wasm32-wasip1 -C strip=symbols main.rs -o noop.wasm
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::FromRawFd;
use std::process::exit;

fn main() {
    let key: Vec<u8> = std::env::var("FACET_PARAM_KEY").unwrap_or_default().into_bytes();
    // The raw descriptors: std's stdout is line-buffered, and searching
    // every write for newlines is a loop the sandbox pays for per byte.
    // SAFETY: fds 0 and 1 are the WASI command's stdin and stdout, owned
    // by nothing else in this program.
    let mut stdin = unsafe { File::from_raw_fd(0) };
    let mut stdout = unsafe { File::from_raw_fd(1) };
    let mut buf = vec![0u8; 256 << 10];
    // The key repeated to cover a whole buffer from any phase, so the hot
    // loop XORs eight bytes at a time with no per-byte index arithmetic.
    // Built by doubling: every loop iteration costs a termination check.
    let mut stream = key.clone();
    let want = buf.len() + key.len();
    while !key.is_empty() && stream.len() < want {
        let n = stream.len().min(want - stream.len());
        stream.extend_from_within(..n);
    }
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
            xor(&mut buf[..n], &stream[phase..phase + n]);
            phase = (phase + n) % key.len();
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

// xor works in blocks of 256 bytes whose inner loop has a constant trip
// count, which the compiler unrolls: the sandbox checks for termination
// at every loop back-edge (a call out of the module), so fewer, longer
// iterations are what makes a WebAssembly filter fast.
fn xor(dst: &mut [u8], ks: &[u8]) {
    const BLOCK: usize = 256;
    let mut d = dst.chunks_exact_mut(BLOCK);
    let mut k = ks.chunks_exact(BLOCK);
    for (a, b) in (&mut d).zip(&mut k) {
        for j in 0..BLOCK / 8 {
            let o = j * 8;
            let v = u64::from_le_bytes(a[o..o + 8].try_into().unwrap()) ^ u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
            a[o..o + 8].copy_from_slice(&v.to_le_bytes());
        }
    }
    for (a, b) in d.into_remainder().iter_mut().zip(k.remainder()) {
        *a ^= b;
    }
}
