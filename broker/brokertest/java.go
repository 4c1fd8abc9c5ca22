package brokertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// JavaClasspath compiles Java test programs (sources, in the default package) against the
// dependencies of the Maven project pom and returns the class path that runs them: their
// classes, then the dependency jars (resolved into ~/.m2 by Maven).
//
// The build is done once per content, not per call: its result is kept in a cache directory
// (the user's cache dir, spool-test/java/<sha256 of the pom, the sources and javac>) that
// later calls, test binaries and runs reuse while its jars exist. It is built in a temporary
// directory and renamed into place, so test processes building at once do not see each other's
// half-written output. Maven and javac are Debian packages; missing, they fail the test under
// CI=true and skip it elsewhere (NeedTool).
func JavaClasspath(t testing.TB, pom string, sources ...string) string {
	t.Helper()
	mvn := NeedTool(t, "/usr/bin/mvn", "maven")
	javac := NeedTool(t, "/usr/bin/javac", "openjdk-17-jdk-headless")
	key, err := javaKey(javac, pom, sources)
	if err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	javaBuilds.mu.Lock()
	b := javaBuilds.m[key]
	if b == nil {
		if javaBuilds.m == nil {
			javaBuilds.m = map[string]*javaBuild{}
		}
		b = &javaBuild{}
		javaBuilds.m[key] = b
	}
	javaBuilds.mu.Unlock()
	b.once.Do(func() { b.cp, b.err = buildJava(mvn, javac, key, pom, sources) })
	if b.err != nil {
		t.Fatalf("brokertest: building Java test programs: %v", b.err)
	}
	return b.cp
}

// javaBuilds are the builds of this process, by cache key.
var javaBuilds struct {
	mu sync.Mutex
	m  map[string]*javaBuild
}

type javaBuild struct {
	once sync.Once
	cp   string
	err  error
}

// javaKey hashes what a build's output depends on: the pom, each source's name and content,
// and the javac binary (its resolved path, size and time).
func javaKey(javac, pom string, sources []string) (string, error) {
	h := sha256.New()
	for _, f := range append([]string{pom}, sources...) {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(data))
		h.Write(data)
	}
	real, err := filepath.EvalSymlinks(javac)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "javac %s %d %d\n", real, st.Size(), st.ModTime().UnixNano())
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// buildJava returns the class path of the cached build key, building it first when it is
// missing or its jars are gone.
func buildJava(mvn, javac, key, pom string, sources []string) (string, error) {
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	root = filepath.Join(root, "spool-test", "java")
	dir := filepath.Join(root, key)
	if cp, ok := cachedJava(dir); ok {
		return cp, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pomAbs, err := filepath.Abs(pom)
	if err != nil {
		return "", err
	}
	depsFile := filepath.Join(tmp, "deps.txt")
	mvnCmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-Dstyle.color=never", "-f", pomAbs,
		"-Dspool.buildDir="+filepath.Join(tmp, "target"), "-Dmdep.outputFile="+depsFile, "dependency:build-classpath")
	if out, err := mvnCmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mvn dependency:build-classpath: %v\n%s", err, tailOf(string(out), 3000))
	}
	deps, err := os.ReadFile(depsFile)
	if err != nil {
		return "", err
	}
	args := []string{"-d", filepath.Join(tmp, "classes"), "-cp", strings.TrimSpace(string(deps))}
	if out, err := exec.CommandContext(ctx, javac, append(args, sources...)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac: %v\n%s", err, tailOf(string(out), 3000))
	}
	if err := os.RemoveAll(filepath.Join(tmp, "target")); err != nil {
		return "", err
	}
	// A build left from before whose jars are gone is replaced; a build another process
	// renamed into place first is as good as this one.
	if _, ok := cachedJava(dir); !ok {
		os.RemoveAll(dir)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if cp, ok := cachedJava(dir); ok {
			return cp, nil
		}
		return "", err
	}
	if cp, ok := cachedJava(dir); ok {
		return cp, nil
	}
	return "", fmt.Errorf("the build in %s is incomplete", dir)
}

// cachedJava is the class path of the build in dir when it is complete and its jars exist.
func cachedJava(dir string) (string, bool) {
	deps, err := os.ReadFile(filepath.Join(dir, "deps.txt"))
	if err != nil {
		return "", false
	}
	classes := filepath.Join(dir, "classes")
	if _, err := os.Stat(classes); err != nil {
		return "", false
	}
	list := strings.TrimSpace(string(deps))
	for _, jar := range filepath.SplitList(list) {
		if _, err := os.Stat(jar); err != nil {
			return "", false
		}
	}
	return classes + string(os.PathListSeparator) + list, true
}
