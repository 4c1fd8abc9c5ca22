package config

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Source tells where a value came from, numbered as DescribeConfigs' ConfigSource.
type Source int8

// The sources of a broker value.
const (
	SourceTopic Source = 1 // a topic-level override
	// SourceDynamicBroker and SourceDynamicDefaultBroker: set at run time for this broker, or
	// for every broker (the replication throttles).
	SourceDynamicBroker        Source = 2
	SourceDynamicDefaultBroker Source = 3
	SourceStatic               Source = 4 // the properties file or a flag
	SourceDefault              Source = 5 // the built-in default
)

// Config is the broker's resolved configuration. It is immutable after Load.
type Config struct {
	values   map[string]string
	sources  map[string]Source
	LogLevel slog.Level
	// LogJSON is --log-format json: one JSON object per log line instead of slog's text.
	LogJSON bool

	listeners   []Listener // resolved from listeners and advertised.listeners
	interBroker string     // the inter-broker listener's name
}

// ErrHelp is returned by Load when --help was asked for; usage has been printed.
var ErrHelp = flag.ErrHelp

// ErrVersion is returned by Load when --version was asked for: the caller prints it.
var ErrVersion = errors.New("version requested")

// UsageError is a bad flag, file or value: the caller prints it and exits 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// Load reads the command line: defaults, then the --config properties file, then --set
// overrides, then the dedicated flags. --help writes the usage to out. Every bad property of
// a file or of --set is reported at once, each with a "did you mean" when a known name is
// close.
func Load(args []string, out io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("spoold", flag.ContinueOnError)
	// A bad flag is reported by the caller in one line; the usage is for --help only.
	fs.SetOutput(io.Discard)
	listen := fs.String("listen", "", "address to listen on, `HOST:PORT` (listeners; default 127.0.0.1:9092)")
	advertised := fs.String("advertised-listener", "", "address given to clients, `HOST:PORT` (advertised.listeners; default: the listen address)")
	dataDir := fs.String("data-dir", "", "`DIR` holding the data (log.dirs; default ./data)")
	nodeID := fs.String("node-id", "", "broker `ID` (node.id; default 0)")
	zk := fs.String("zookeeper", "", "ZooKeeper connect `STRING` for cluster mode (zookeeper.connect); empty: single node, embedded metadata")
	file := fs.String("config", "", "Kafka-style properties `FILE`, e.g. Kafka's config/server.properties")
	fsync := fs.String("fsync", "", "durability `MODE`: always (fsync before ack, default), interval, never (spool.fsync)")
	metricsListen := fs.String("metrics-listen", "", "serve /metrics, /healthz, /readyz and the web console (/) on `HOST:PORT` (spool.metrics.listener; default off)")
	otlpEndpoint := fs.String("otlp-endpoint", "", "export a span per request over OTLP/HTTP to `URL`, e.g. http://127.0.0.1:4318 (spool.otlp.endpoint; default off)")
	logLevel := fs.String("log-level", "info", "log `LEVEL`: debug, info, warn, error")
	logFormat := fs.String("log-format", "text", "log `FORMAT` on stderr: text (key=value) or json (one object per line)")
	version := fs.Bool("version", false, "print the version and commit, and exit")
	var sets setFlags
	fs.Var(&sets, "set", "override a property, `KEY=VALUE` (repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, out)
			return nil, ErrHelp
		}
		// The flag package names flags with one dash; spoold's are written with two.
		msg := strings.NewReplacer(": -", ": --", "flag -", "flag --").Replace(err.Error())
		return nil, &UsageError{errors.New(msg)}
	}
	if *version {
		return nil, ErrVersion
	}
	if fs.NArg() > 0 {
		return nil, &UsageError{fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	c := New()
	if err := c.LogLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return nil, &UsageError{fmt.Errorf("bad --log-level %q: want debug, info, warn or error", *logLevel)}
	}
	switch *logFormat {
	case "text":
	case "json":
		c.LogJSON = true
	default:
		return nil, &UsageError{fmt.Errorf("bad --log-format %q: want text or json", *logFormat)}
	}
	// Every bad property and contradiction is reported, not only the first.
	var errs []error
	if *file != "" {
		props, err := ReadPropertiesFile(*file)
		if err != nil {
			return nil, &UsageError{err}
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var fileErrs []error
		for _, k := range keys {
			fileErrs = append(fileErrs, c.Set(k, props[k]))
		}
		if err := errors.Join(fileErrs...); err != nil {
			errs = append(errs, fmt.Errorf("%s:\n%w", *file, err))
		}
	}
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("--set %q: want key=value", kv))
			continue
		}
		if err := c.Set(strings.TrimSpace(k), v); err != nil {
			errs = append(errs, fmt.Errorf("--set: %w", err))
		}
	}
	for name, v := range map[string]string{Listeners: *listen, AdvertisedListeners: *advertised, LogDirs: *dataDir,
		NodeID: *nodeID, ZooKeeperConnect: *zk, Fsync: *fsync, MetricsListener: *metricsListen,
		OTLPEndpoint: *otlpEndpoint} {
		if v == "" {
			continue
		}
		if err := c.Set(name, v); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.resolve())
	if err := errors.Join(errs...); err != nil {
		return nil, &UsageError{err}
	}
	return c, nil
}

// printUsage is --help: the flags with their -- names, then every property.
func printUsage(fs *flag.FlagSet, out io.Writer) {
	fmt.Fprintln(out, "usage: spoold [flags]")
	fmt.Fprintln(out, "\nspoold is the Spool broker: a Kafka-compatible streaming log.")
	fmt.Fprintln(out, "\nflags:")
	fs.VisitAll(func(f *flag.Flag) {
		arg, help := flag.UnquoteUsage(f)
		fmt.Fprintf(out, "  --%s %s\n        %s\n", f.Name, arg, help)
	})
	fmt.Fprintln(out, "\nproperties (for --config files and --set):")
	for _, d := range BrokerDefs {
		fmt.Fprintf(out, "  %-36s default %s\n        %s\n", d.Name, shownDefault(d), d.Doc)
	}
	fmt.Fprintln(out, "\nKafka properties Spool reads to set the ones above:")
	for _, d := range kafkaDefs {
		if d.NoEffect == "" {
			fmt.Fprintf(out, "  %-36s default %s\n        %s\n", d.Name, shownDefault(d), d.Doc)
		}
	}
	fmt.Fprintln(out, "\nEvery other Kafka 3.9 broker property is accepted with Kafka's type and default, has no")
	fmt.Fprintln(out, "effect in Spool, and is logged at startup with the reason when set; spool cluster configs")
	fmt.Fprintln(out, "(DescribeConfigs) lists them all.")
}

func shownDefault(d Def) string {
	if d.Default == "" {
		return "(unset)"
	}
	return d.Default
}

// New returns the defaults.
func New() *Config {
	c := &Config{values: map[string]string{}, sources: map[string]Source{}}
	for _, d := range AllBrokerDefs() {
		c.values[d.Name] = d.Default
		c.sources[d.Name] = SourceDefault
	}
	if err := c.resolve(); err != nil {
		panic("config: the defaults do not resolve: " + err.Error())
	}
	return c
}

// Set validates and sets a broker property. Unknown properties are an error, so that a typo
// does not silently leave a default in place. "broker.id" is accepted for node.id.
func (c *Config) Set(name, value string) error {
	value = strings.TrimSpace(value)
	if name == "broker.id" {
		name = NodeID
	}
	if rest, ok := strings.CutPrefix(name, "listener.name."); ok {
		return c.setListenerProperty(name, rest, value)
	}
	d := LookupBroker(name)
	if d == nil {
		if s := suggest(name); s != "" {
			return fmt.Errorf("unknown property %q (did you mean %s?)", name, s)
		}
		return fmt.Errorf("unknown property %q", name)
	}
	if err := d.Parse(value); err != nil {
		return err
	}
	c.values[name] = value
	c.sources[name] = SourceStatic
	return nil
}

// setListenerProperty sets Kafka's per-listener form listener.name.<listener>.<property>: an
// ssl.* or sasl.* property, a mechanism's JAAS config (<mechanism>.sasl.jaas.config), or the
// listener's own max.connections (KIP-402).
func (c *Config) setListenerProperty(name, rest, value string) error {
	listener, prop, ok := strings.Cut(rest, ".")
	if !ok || listener == "" {
		return fmt.Errorf("%s: want listener.name.<listener>.<property>", name)
	}
	name = "listener.name." + strings.ToLower(listener) + "." + prop
	if mech, ok := strings.CutSuffix(prop, ".sasl.jaas.config"); ok && mech != "" && !strings.Contains(mech, ".") {
		if _, err := ParseJAAS(value); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		c.values[name], c.sources[name] = value, SourceStatic
		return nil
	}
	d := LookupBroker(prop)
	if d == nil || !(strings.HasPrefix(prop, "ssl.") || strings.HasPrefix(prop, "sasl.") || prop == MaxConnections) {
		return fmt.Errorf("unknown property %q: a listener overrides ssl.* and sasl.* properties, <mechanism>.sasl.jaas.config and max.connections", name)
	}
	if err := d.Parse(value); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.values[name], c.sources[name] = value, SourceStatic
	return nil
}

// Get returns a property's value.
func (c *Config) Get(name string) string { return c.values[name] }

// Source returns where a property's value came from.
func (c *Config) Source(name string) Source { return c.sources[name] }

// Int64 returns a numeric property; the value was validated by Set.
func (c *Config) Int64(name string) int64 {
	n, _ := strconv.ParseInt(c.values[name], 10, 64)
	return n
}

// Int returns a numeric property as an int.
func (c *Config) Int(name string) int { return int(c.Int64(name)) }

// Bool returns a boolean property.
func (c *Config) Bool(name string) bool { return c.values[name] == "true" }

// Advertised is the inter-broker listener's advertised address, the one registered as this
// broker's host and port.
func (c *Config) Advertised() string {
	for _, l := range c.listeners {
		if l.Name == c.interBroker {
			return l.AdvertisedAddr()
		}
	}
	return advertisedHost(c.values[Listeners])
}

// ReadPropertiesFile reads a Java-style properties file: key=value or key: value lines,
// '#' and '!' comments, trailing backslash continues a line.
func ReadPropertiesFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	defer f.Close()
	return ReadProperties(f, path)
}

// ReadProperties parses properties text; name is used in error messages.
func ReadProperties(r io.Reader, name string) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	var pending string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if pending == "" && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			pending += strings.TrimSuffix(line, `\`)
			continue
		}
		line = pending + line
		pending = ""
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("%s:%d: want key=value", name, n)
		}
		props[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return props, nil
}

// Names lists every broker property name in definition order.
func Names() []string {
	out := make([]string, len(BrokerDefs))
	for i, d := range BrokerDefs {
		out[i] = d.Name
	}
	return out
}
