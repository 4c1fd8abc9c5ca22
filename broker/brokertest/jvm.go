package brokertest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FastJVM are java flags that start a short-lived JVM running class from the class path cp
// (Kafka's tools, the Java test programs) in about half the time and CPU: the client JIT only
// (-XX:TieredStopAtLevel=1), and an AppCDS archive of the classes that run loads, so later runs
// map them instead of loading and verifying them again.
//
// The archive is made by the first run (on this machine) of class on cp: that run gets
// -XX:ArchiveClassesAtExit with a file of its own, which t's cleanup renames into place once
// the JVM has written it at its exit; runs after that get -XX:SharedArchiveFile. The archive
// is kept in the user's cache dir (spool-test/cds), named by a hash of the java binary, cp
// with its jars' sizes and times, and class, so a changed JDK or jar makes a new one. JVM
// logging is off (-Xlog:disable): a tool's output stays the tool's, without sharing warnings.
func FastJVM(t testing.TB, cp, class string) []string {
	t.Helper()
	flags := []string{"-XX:TieredStopAtLevel=1", "-Xshare:auto", "-Xlog:disable"}
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	dir := filepath.Join(root, "spool-test", "cds")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("brokertest: no class-data archive: %v", err)
		return flags
	}
	archive := filepath.Join(dir, cdsKey(cp, class)+".jsa")
	if _, err := os.Stat(archive); err == nil {
		return append(flags, "-XX:SharedArchiveFile="+archive)
	}
	f, err := os.CreateTemp(dir, ".dump-*.jsa")
	if err != nil {
		t.Logf("brokertest: no class-data archive: %v", err)
		return flags
	}
	tmp := f.Name()
	f.Close()
	os.Remove(tmp) // the JVM creates it
	t.Cleanup(func() {
		if st, err := os.Stat(tmp); err == nil && st.Size() > 0 {
			os.Rename(tmp, archive)
		}
		os.Remove(tmp)
	})
	return append(flags, "-XX:ArchiveClassesAtExit="+tmp)
}

// cdsKey hashes what an archive depends on: the java binary, the class path's files and class.
func cdsKey(cp, class string) string {
	h := sha256.New()
	stamp := func(p string) {
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", p, st.Size(), st.ModTime().UnixNano())
		} else {
			fmt.Fprintf(h, "%s missing\n", p)
		}
	}
	if java, err := filepath.EvalSymlinks("/usr/bin/java"); err == nil {
		stamp(java)
	}
	for _, e := range filepath.SplitList(cp) {
		if strings.HasSuffix(e, "*") {
			jars, _ := filepath.Glob(strings.TrimSuffix(e, "*") + "*.jar")
			for _, j := range jars {
				stamp(j)
			}
			continue
		}
		stamp(e)
	}
	fmt.Fprintf(h, "class %s\n", class)
	return class[strings.LastIndex(class, ".")+1:] + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}
