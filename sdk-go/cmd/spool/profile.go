package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The profile is the CLI's settings file: $SPOOL_CONFIG, else spool/config under the user's
// config directory (~/.config/spool/config on Linux). Lines are KEY=VALUE; blank lines and
// lines starting with # are skipped. Known keys: brokers (the default of --brokers, after
// $SPOOL_BROKERS) and the security flags' names (tls=true, tls-ca=FILE, ..., sasl-password=P,
// after $SPOOL_SASL_PASSWORD), the defaults of those flags.
var profileKeys = append([]string{"brokers"}, securityFlagNames...)

// profilePath is where the profile is read from, and whether the user named it ($SPOOL_CONFIG),
// in which case it must exist.
func profilePath() (path string, explicit bool) {
	if p := os.Getenv("SPOOL_CONFIG"); p != "" {
		return p, true
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", false
	}
	return filepath.Join(dir, "spool", "config"), false
}

// loadProfile reads the profile; a missing default profile is empty.
func loadProfile() (map[string]string, error) {
	path, explicit := profilePath()
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return out, nil
	}
	if err != nil {
		return nil, usageError{msg: fmt.Sprintf("profile ($SPOOL_CONFIG): %v", err)}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		switch {
		case !ok:
			return nil, usageError{msg: fmt.Sprintf("profile %s:%d: want KEY=VALUE, got %q", path, n, line)}
		case !slices.Contains(profileKeys, k):
			return nil, usageError{msg: fmt.Sprintf("profile %s:%d: unknown key %q (known: %s)", path, n, k, strings.Join(profileKeys, ", "))}
		}
		out[k] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading profile %s: %w", path, err)
	}
	return out, nil
}
