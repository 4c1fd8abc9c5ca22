//! Finds libspool: `$SPOOL_LIB_DIR` (the directory of libspool.so) if set, else the `-L`
//! flags of `pkg-config --libs spool`, else the linker's default search path.
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
    println!("cargo:rustc-link-lib=dylib=spool");
}
