// Command spoold is the Spool broker: a Kafka-wire-compatible streaming log.
//
//	spoold [--listen HOST:PORT] [--data-dir DIR] [--config FILE] [--set key=value ...]
//
// It runs a single node with embedded metadata (the default) and stops cleanly on SIGTERM or
// SIGINT: in-flight requests finish, logs are flushed and checkpointed, and it exits 0.
// A bad flag, property or config file prints the problem (every bad property of a file at
// once) and exits 2. Kafka's server.properties loads as it is: every Kafka 3.9 broker property
// is accepted, and the ones that have no effect in Spool are logged once at startup with the
// reason. Run spoold --help for every flag and property.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/server"
)

// version and commit are set at link time (-ldflags "-X main.version=1.2.3 -X main.commit=abc");
// otherwise they come from the module's build information.
var version, commit string

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// versionString is what --version prints: spoold VERSION (commit COMMIT, GOVERSION).
func versionString() string {
	v, c := version, commit
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if v == "" && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && c == "" {
				c = s.Value
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if c == "" {
		c = "unknown"
	}
	return fmt.Sprintf("spoold %s (commit %s, %s)", v, c, runtime.Version())
}

func run(args []string, stdout, stderr io.Writer) int {
	conf, err := config.Load(args, stdout)
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if errors.Is(err, config.ErrVersion) {
		fmt.Fprintln(stdout, versionString())
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "spoold:", err)
		fmt.Fprintln(stderr, "run 'spoold --help' for usage")
		return 2
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: conf.LogLevel})
	if conf.LogJSON {
		handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: conf.LogLevel})
	}
	log := slog.New(handler)
	for _, ig := range conf.NoEffect() {
		log.Warn("properties with no effect in Spool", "keys", strings.Join(ig.Names, ","), "why", ig.Why)
	}
	if limit := conf.Int64(config.MemoryLimitBytes); limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
	if addr := conf.Get(config.PprofListener); addr != "" {
		go func() {
			// net/http/pprof registers its handlers on the default mux.
			if err := http.ListenAndServe(addr, nil); err != nil {
				log.Error("pprof listener", "err", err)
			}
		}()
	}
	srv, err := server.New(conf, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
		var ue *config.UsageError
		if errors.As(err, &ue) {
			// A keystore that does not load is a bad setting: said like the others.
			fmt.Fprintln(stderr, "spoold:", err)
			return 2
		}
		log.Error("cannot start", "err", err)
		return 1
	}
	// Tests and scripts read the bound addresses from these lines; the log says it too.
	// The metrics line comes first, so a reader has both once it has the listening line.
	if a := srv.MetricsAddr(); a != nil {
		fmt.Fprintf(stdout, "spoold metrics on %s\n", a)
	}
	fmt.Fprintf(stdout, "spoold listening on %s\n", srv.Addr())
	log.Info("spoold listening", "addr", srv.Addr().String(), "version", strings.TrimPrefix(versionString(), "spoold "))
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	case err := <-done:
		if err != nil {
			log.Error("serving", "err", err)
			srv.Close()
			return 1
		}
	}
	if err := srv.Close(); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	return 0
}
