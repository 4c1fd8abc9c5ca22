//! Finds libspool: `$SPOOL_LIB_DIR` (the directory of libspool.so) if set, else the `-L`
//! flags of `pkg-config --libs spool`, else the linker's default search path. With the
//! `static` feature it links libspool.a (the same directory) into the program instead of
//! libspool.so, so the program runs without the library installed.
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SPOOL_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Ok(dir) = env::var("SPOOL_LIB_DIR") {
        println!("cargo:rustc-link-search=native={dir}");
    } else {
        match Command::new("pkg-config").args(["--libs-only-L", "spool"]).output() {
            Ok(out) if out.status.success() => {
                for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    if let Some(dir) = flag.strip_prefix("-L") {
                        println!("cargo:rustc-link-search=native={dir}");
                    }
                }
            }
            _ => println!(
                "cargo:warning=pkg-config does not know spool: set PKG_CONFIG_PATH or SPOOL_LIB_DIR \
                 if libspool is not on the linker's default path"
            ),
        }
    }
    if env::var_os("CARGO_FEATURE_STATIC").is_some() {
        // libspool.a (make build's c-archive) linked in: the program needs no libspool.so at
        // run time, so no LD_LIBRARY_PATH. The Go runtime inside it uses threads and dlopen.
        println!("cargo:rustc-link-lib=static=spool");
        println!("cargo:rustc-link-lib=dylib=pthread");
        println!("cargo:rustc-link-lib=dylib=dl");
        println!("cargo:rustc-link-lib=dylib=m");
        println!("cargo:rustc-link-lib=dylib=resolv");
    } else {
        println!("cargo:rustc-link-lib=dylib=spool");
    }
}
