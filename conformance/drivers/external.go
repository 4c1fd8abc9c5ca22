package drivers

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spoolmq/spool/conformance"
)

// The drivers of the other SDKs are programs in their own languages (c/, python/, java/),
// embedded here so that spool-conformance alone can build and run them: "c" drives libspool's
// C API, "python" the Python binding over libspool, and "java" the official Apache Kafka Java
// client (kafka-clients), the second reference driver.

//go:embed c/driver.c c/json.c c/json.h python/driver.py java/Driver.java
var sources embed.FS

// ExternalNames are the drivers written in other languages, built by Build.
var ExternalNames = []string{"c", "python", "java"}

// BuildOptions say where a driver is built and what it needs.
type BuildOptions struct {
	// Dir receives the driver's sources and program; the caller removes it.
	Dir string
	// CC compiles the C driver (default "cc"); libspool is found with pkg-config
	// (PKG_CONFIG_PATH), and the program is linked with the library's directory as rpath.
	CC string
	// Python runs the Python driver (default "python3"); the binding (module spool) must be
	// importable, from PYTHONPATH or an installation, and libspool found by it.
	Python string
	// JavaClasspath holds kafka-clients and its dependencies (slf4j-api, lz4-java,
	// snappy-java, zstd-jni), in javac/java -cp syntax ("dir/*" works).
	JavaClasspath string
	// Env is added to the driver's environment (PYTHONPATH, SPOOL_LIBRARY, ...).
	Env []string
}

// Build prepares external driver name: it writes the sources into o.Dir, compiles them
// (c, java) and returns the driver to run.
func Build(name string, o BuildOptions) (*conformance.ProcessDriver, error) {
	dir := filepath.Join(o.Dir, name)
	if err := writeSources(name, dir); err != nil {
		return nil, err
	}
	switch name {
	case "c":
		cc := o.CC
		if cc == "" {
			cc = "cc"
		}
		flags, err := run(o.Env, "pkg-config", "--cflags", "--libs", "spool")
		if err != nil {
			return nil, fmt.Errorf("driver c: libspool not found (install it with make -C sdk-cgo install PREFIX=DIR and set PKG_CONFIG_PATH=DIR/lib/pkgconfig): %w", err)
		}
		libdir, err := run(o.Env, "pkg-config", "--variable=libdir", "spool")
		if err != nil {
			return nil, fmt.Errorf("driver c: %w", err)
		}
		bin := filepath.Join(dir, "spool-driver-c")
		args := append([]string{"-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", bin,
			filepath.Join(dir, "driver.c"), filepath.Join(dir, "json.c")}, strings.Fields(flags)...)
		args = append(args, "-Wl,-rpath,"+strings.TrimSpace(libdir))
		if _, err := run(o.Env, cc, args...); err != nil {
			return nil, fmt.Errorf("driver c: compiling: %w", err)
		}
		return &conformance.ProcessDriver{DriverName: name, Path: bin, Env: o.Env}, nil
	case "python":
		python := o.Python
		if python == "" {
			python = "python3"
		}
		if _, err := run(o.Env, python, "-c", "import spool"); err != nil {
			return nil, fmt.Errorf("driver python: the binding does not import (put sdk-cgo/bindings/python on PYTHONPATH, libspool where pkg-config or SPOOL_LIBRARY finds it): %w", err)
		}
		return &conformance.ProcessDriver{DriverName: name, Path: python, Args: []string{"-u", filepath.Join(dir, "driver.py")}, Env: o.Env}, nil
	case "java":
		if o.JavaClasspath == "" {
			return nil, fmt.Errorf("driver java: no class path: give the directory of kafka-clients and its dependencies (--java-classpath 'DIR/*')")
		}
		classes := filepath.Join(dir, "classes")
		if _, err := run(o.Env, "javac", "-nowarn", "-cp", o.JavaClasspath, "-d", classes, filepath.Join(dir, "Driver.java")); err != nil {
			return nil, fmt.Errorf("driver java: compiling: %w", err)
		}
		jar := filepath.Join(dir, "driver.jar")
		if _, err := run(o.Env, "jar", "cf", jar, "-C", classes, "."); err != nil {
			return nil, fmt.Errorf("driver java: packaging: %w", err)
		}
		cp := jar + string(os.PathListSeparator) + o.JavaClasspath
		// One JVM per client: a small heap, no JIT tiers beyond C1, JVM logs on stderr (never
		// on the protocol's stdout), and a class-data archive of the classes a client loads,
		// dumped once by a client that opens (to a closed port: it connects lazily) and
		// closes, which roughly halves each JVM's start. Without the archive (a JVM that
		// cannot dump one), clients start as they would anyway.
		jvm := []string{"-Xms32m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xlog:disable", "-Xlog:all=warning:stderr"}
		archive := filepath.Join(dir, "driver.jsa")
		dump := exec.Command("java", append(slices.Clone(jvm), "-XX:ArchiveClassesAtExit="+archive, "-cp", cp, "Driver")...)
		dump.Env = append(os.Environ(), o.Env...)
		dump.Stdin = strings.NewReader(`{"id":1,"cmd":"open","bootstrap":"127.0.0.1:1","group":"warm-up","topics":["t"]}` + "\n")
		if err := dump.Run(); err == nil {
			if _, err := os.Stat(archive); err == nil {
				jvm = append(jvm, "-XX:SharedArchiveFile="+archive)
			}
		}
		return &conformance.ProcessDriver{DriverName: name, Path: "java", Args: append(jvm, "-cp", cp, "Driver"), Env: o.Env}, nil
	}
	return nil, fmt.Errorf("unknown external driver %q (external: %s)", name, strings.Join(ExternalNames, ", "))
}

func writeSources(name, dir string) error {
	sub, err := fs.Sub(sources, name)
	if err != nil {
		return fmt.Errorf("unknown external driver %q (external: %s)", name, strings.Join(ExternalNames, ", "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("driver %s: %w", name, err)
	}
	return fs.WalkDir(sub, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path), b, 0o644)
	})
}

// run runs a tool and returns its standard output; a failure carries its standard error.
func run(env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
