package config

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// listener is one entry of Kafka's listeners list, NAME://HOST:PORT; a bare HOST:PORT is
// named PLAINTEXT.
type listener struct{ name, addr string }

func parseListeners(v string) ([]listener, error) {
	var out []listener
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		l := listener{name: "PLAINTEXT", addr: item}
		if name, addr, ok := strings.Cut(item, "://"); ok {
			l = listener{name: strings.ToUpper(name), addr: addr}
		}
		if err := hostPort(l.addr); err != nil {
			return nil, fmt.Errorf("%s: %w", item, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// listenerList checks listeners and advertised.listeners: HOST:PORT or Kafka's
// NAME://HOST:PORT,... form.
func listenerList(v string) error {
	_, err := parseListeners(v)
	return err
}

// resolve turns the Kafka properties Spool reads (log.retention.hours, log.dir, the listener
// lists, ...) into Spool's own, and refuses settings that contradict Spool, naming each.
func (c *Config) resolve() error {
	c.resolveUnits(LogRetentionMs, "log.retention.minutes", "log.retention.hours")
	c.resolveUnits(LogRollMs, "", "log.roll.hours")
	c.resolveUnits("log.roll.jitter.ms", "", "log.roll.jitter.hours")
	var errs []error
	if c.sources[LogDirs] == SourceDefault && c.sources["log.dir"] == SourceStatic {
		c.values[LogDirs], c.sources[LogDirs] = c.values["log.dir"], SourceStatic
	}
	var dirs []string
	for _, d := range strings.Split(c.values[LogDirs], ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	switch len(dirs) {
	case 0:
		errs = append(errs, fmt.Errorf("%s: empty", LogDirs))
	case 1:
		c.values[LogDirs] = dirs[0]
	default:
		errs = append(errs, fmt.Errorf("%s=%s: Spool keeps every partition in one directory; give one", LogDirs, c.values[LogDirs]))
	}
	for _, name := range []string{Listeners, AdvertisedListeners} {
		if err := c.resolveListener(name); err != nil {
			errs = append(errs, err)
		}
	}
	if roles := c.values["process.roles"]; roles != "" && !strings.Contains(roles, "broker") {
		errs = append(errs, fmt.Errorf("process.roles=%s: Spool has no controller-only role; every node is a broker (leave it unset or include broker)", roles))
	}
	if a := c.values["authorizer.class.name"]; a != "" {
		errs = append(errs, fmt.Errorf("authorizer.class.name=%s: Spool has no ACLs, so it cannot enforce an authorizer; leave it unset", a))
	}
	if c.values["delete.topic.enable"] == "false" {
		errs = append(errs, errors.New("delete.topic.enable=false: Spool always allows DeleteTopics; leave it unset"))
	}
	if c.values["remote.log.storage.system.enable"] == "true" {
		errs = append(errs, errors.New("remote.log.storage.system.enable=true: Spool has no tiered storage; leave it unset"))
	}
	return errors.Join(errs...)
}

// resolveUnits gives ms the value of the minutes or hours property when ms itself was not set,
// with Kafka's precedence ms > minutes > hours; a negative value means no limit (-1).
func (c *Config) resolveUnits(ms, minutes, hours string) {
	if c.sources[ms] == SourceStatic && c.values[ms] != "" {
		return
	}
	from, unit := hours, int64(3600000)
	if minutes != "" && c.sources[minutes] == SourceStatic && c.values[minutes] != "" {
		from, unit = minutes, 60000
	}
	n, err := strconv.ParseInt(c.values[from], 10, 64)
	if err != nil {
		return
	}
	v := n * unit
	if n < 0 {
		v = -1
	}
	c.values[ms], c.sources[ms] = strconv.FormatInt(v, 10), c.sources[from]
}

// resolveListener keeps, of a Kafka listener list, the one address clients use: the entry
// that is not a KRaft controller listener (controller.listener.names). It must be PLAINTEXT.
func (c *Config) resolveListener(name string) error {
	ls, err := parseListeners(c.values[name])
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	controllers := strings.Split(strings.ToUpper(c.values["controller.listener.names"]), ",")
	protocols := map[string]string{}
	for _, kv := range strings.Split(c.values["listener.security.protocol.map"], ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), ":"); ok {
			protocols[strings.ToUpper(k)] = strings.ToUpper(v)
		}
	}
	var client []listener
	for _, l := range ls {
		if !containsFold(controllers, l.name) {
			client = append(client, l)
		}
	}
	switch {
	case len(ls) == 0:
		return nil // unset (advertised.listeners), or a default
	case len(client) == 0:
		return fmt.Errorf("%s=%s: no listener for clients, only controller listeners (%s)", name, c.values[name], c.values["controller.listener.names"])
	case len(client) > 1:
		return fmt.Errorf("%s=%s: Spool listens on one address; give one listener for clients", name, c.values[name])
	}
	l := client[0]
	proto, ok := protocols[l.name]
	if !ok {
		proto = l.name
	}
	if proto != "PLAINTEXT" {
		return fmt.Errorf("%s: %s://%s uses %s; Spool has no TLS or SASL yet, so listeners must be PLAINTEXT", name, l.name, l.addr, proto)
	}
	c.values[name] = l.addr
	return nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(strings.TrimSpace(x), s) {
			return true
		}
	}
	return false
}

// advertisedHost is what an address with an empty host (Kafka's "PLAINTEXT://:9092", all
// interfaces) is advertised as: the host name, as Kafka does.
func advertisedHost(addr string) string {
	if !strings.HasPrefix(addr, ":") {
		return addr
	}
	h, err := os.Hostname()
	if err != nil {
		h = "localhost"
	}
	return h + addr
}

// NoEffect lists the properties a file or --set gave that change nothing in Spool, grouped by
// the reason, each group's names sorted; the groups are sorted by reason.
func (c *Config) NoEffect() []Ignored {
	byWhy := map[string][]string{}
	for _, d := range AllBrokerDefs() {
		if d.NoEffect != "" && c.sources[d.Name] == SourceStatic {
			byWhy[d.NoEffect] = append(byWhy[d.NoEffect], d.Name)
		}
	}
	var out []Ignored
	for why, names := range byWhy {
		sort.Strings(names)
		out = append(out, Ignored{Why: why, Names: names})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Why < out[j].Why })
	return out
}

// Ignored are properties that were set but have no effect, and why.
type Ignored struct {
	Why   string
	Names []string
}

// suggest is the known property name closest to a mistyped one, or "" when none is close; a
// topic-level name given to the broker suggests its broker property.
func suggest(name string) string {
	if d := LookupTopic(name); d != nil && d.Broker != "" {
		return d.Broker
	}
	best, bestDist := "", len(name)/3+1
	for _, d := range AllBrokerDefs() {
		if dist := editDistance(name, d.Name); dist < bestDist {
			best, bestDist = d.Name, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
