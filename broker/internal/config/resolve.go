package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// listener is one entry of Kafka's listeners list, NAME://HOST:PORT; a bare HOST:PORT is
// named PLAINTEXT.
type listener struct {
	name, addr string
	bare       bool // given as HOST:PORT, without a name
}

func parseListeners(v string) ([]listener, error) {
	var out []listener
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		l := listener{name: "PLAINTEXT", addr: item, bare: true}
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
	if err := c.resolveListeners(); err != nil {
		errs = append(errs, err)
	}
	if roles := c.values["process.roles"]; roles != "" && !strings.Contains(roles, "broker") {
		errs = append(errs, fmt.Errorf("process.roles=%s: Spool has no controller-only role; every node is a broker (leave it unset or include broker)", roles))
	}
	if a := c.values[AuthorizerClassName]; a != "" && !slices.Contains(AuthorizerClassNames, a) {
		errs = append(errs, fmt.Errorf("%s=%s: Spool's ACL authorizer is enabled by one of %s; leave it unset for no authorization", AuthorizerClassName, a, strings.Join(AuthorizerClassNames, ", ")))
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

// Listener is one listener the broker serves.
type Listener struct {
	Name       string // upper case, as in Kafka: PLAINTEXT, SSL, or a name mapped by listener.security.protocol.map
	Protocol   string // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
	Addr       string // HOST:PORT to bind; an empty host is every interface
	Advertised string // HOST:PORT given to clients; "" when advertised.listeners names it not (then the bound address)
}

// AdvertisedAddr is the address given to clients: Advertised, else the bound address with an
// empty host advertised as the host name, as Kafka does.
func (l Listener) AdvertisedAddr() string {
	if l.Advertised != "" {
		return l.Advertised
	}
	return advertisedHost(l.Addr)
}

// Listeners are the listeners to open, in the order listeners gives them.
func (c *Config) Listeners() []Listener { return slices.Clone(c.listeners) }

// InterBrokerListener is the name of the listener other brokers connect to.
func (c *Config) InterBrokerListener() string { return c.interBroker }

// securityProtocols are Kafka's; Spool serves these.
var securityProtocols = map[string]bool{"PLAINTEXT": true, "SSL": true, "SASL_PLAINTEXT": true, "SASL_SSL": true}

// resolveListeners reads listeners, advertised.listeners, listener.security.protocol.map and
// inter.broker.listener.name: every listener that is not a KRaft controller listener
// (controller.listener.names) is served. A bare HOST:PORT is a PLAINTEXT listener; a bare
// advertised HOST:PORT is the first listener's. With one listener, listeners and
// advertised.listeners read back as its HOST:PORT.
func (c *Config) resolveListeners() error {
	c.listeners, c.interBroker = nil, ""
	ls, err := parseListeners(c.values[Listeners])
	if err != nil {
		return fmt.Errorf("%s: %w", Listeners, err)
	}
	adv, err := parseListeners(c.values[AdvertisedListeners])
	if err != nil {
		return fmt.Errorf("%s: %w", AdvertisedListeners, err)
	}
	controllers := strings.Split(strings.ToUpper(c.values["controller.listener.names"]), ",")
	protocols := map[string]string{}
	for _, kv := range strings.Split(c.values["listener.security.protocol.map"], ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), ":"); ok {
			protocols[strings.ToUpper(strings.TrimSpace(k))] = strings.ToUpper(strings.TrimSpace(v))
		}
	}
	var errs []error
	for _, l := range ls {
		if containsFold(controllers, l.name) {
			continue
		}
		proto, ok := protocols[l.name]
		if !ok {
			proto = l.name
		}
		switch {
		case slices.ContainsFunc(c.listeners, func(x Listener) bool { return x.Name == l.name }):
			errs = append(errs, fmt.Errorf("%s=%s: listener %s is given twice", Listeners, c.values[Listeners], l.name))
		case !securityProtocols[proto]:
			errs = append(errs, fmt.Errorf("%s: %s://%s uses %s, which is no security protocol Spool knows; map the name with listener.security.protocol.map to PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", Listeners, l.name, l.addr, proto))
		}
		c.listeners = append(c.listeners, Listener{Name: l.name, Protocol: proto, Addr: l.addr})
	}
	if len(ls) > 0 && len(c.listeners) == 0 {
		errs = append(errs, fmt.Errorf("%s=%s: no listener for clients, only controller listeners (%s)", Listeners, c.values[Listeners], c.values["controller.listener.names"]))
	}
	for _, a := range adv {
		if containsFold(controllers, a.name) {
			continue
		}
		i := slices.IndexFunc(c.listeners, func(x Listener) bool { return x.Name == a.name })
		if a.bare && len(c.listeners) > 0 {
			i = 0
		}
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s: %s is no listener of %s=%s", AdvertisedListeners, a.name, Listeners, c.values[Listeners]))
			continue
		}
		c.listeners[i].Advertised = advertisedHost(a.addr)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := c.resolveInterBroker(); err != nil {
		return err
	}
	if len(c.listeners) == 1 {
		c.values[Listeners] = c.listeners[0].Addr
		if c.values[AdvertisedListeners] != "" {
			c.values[AdvertisedListeners] = c.listeners[0].Advertised
		}
	}
	return errors.Join(c.resolveSSL(), c.resolveSASL())
}

// resolveInterBroker picks the listener other brokers use: inter.broker.listener.name, else
// the one named by security.inter.broker.protocol (PLAINTEXT), else the first PLAINTEXT one.
func (c *Config) resolveInterBroker() error {
	if len(c.listeners) == 0 {
		return nil
	}
	name := strings.ToUpper(c.values["inter.broker.listener.name"])
	i := slices.IndexFunc(c.listeners, func(l Listener) bool { return l.Name == name })
	if name != "" && i < 0 {
		return fmt.Errorf("inter.broker.listener.name=%s: no such listener in %s=%s", name, Listeners, c.values[Listeners])
	}
	if i < 0 {
		proto := strings.ToUpper(c.values["security.inter.broker.protocol"])
		i = slices.IndexFunc(c.listeners, func(l Listener) bool { return l.Name == proto })
	}
	if i < 0 {
		i = slices.IndexFunc(c.listeners, func(l Listener) bool { return l.Protocol == "PLAINTEXT" })
	}
	if i < 0 {
		i = 0
	}
	l := c.listeners[i]
	c.interBroker = l.Name
	if l.SASL() && c.values[ZooKeeperConnect] != "" {
		if _, err := c.InterBrokerSASL(); err != nil {
			return err
		}
	}
	return nil
}

// InterBrokerCredentials are what a broker authenticates as to the others on a SASL
// inter-broker listener.
type InterBrokerCredentials struct {
	Mechanism      string // sasl.mechanism.inter.broker.protocol
	User, Password string // username and password of listener.name.<l>.<mechanism>.sasl.jaas.config
}

// InterBrokerSASL reads the broker's own SASL credentials as Kafka does: the mechanism from
// sasl.mechanism.inter.broker.protocol, the username and password options of the
// inter-broker listener's JAAS config for that mechanism.
func (c *Config) InterBrokerSASL() (InterBrokerCredentials, error) {
	l := c.interBroker
	mech := strings.ToUpper(strings.TrimSpace(c.values["sasl.mechanism.inter.broker.protocol"]))
	enabled := SplitList(c.ListenerValue(l, "sasl.enabled.mechanisms"))
	if !slices.Contains(enabled, mech) {
		return InterBrokerCredentials{}, fmt.Errorf("sasl.mechanism.inter.broker.protocol=%s: the inter-broker listener %s enables %s; set it to one of them",
			mech, l, strings.Join(enabled, ","))
	}
	key := listenerPrefix(l) + strings.ToLower(mech) + ".sasl.jaas.config"
	j, err := ParseJAAS(c.values[key])
	if err != nil {
		return InterBrokerCredentials{}, fmt.Errorf("%s (the broker's own credentials for %s): %w", key, mech, err)
	}
	cr := InterBrokerCredentials{Mechanism: mech, User: j.Options["username"], Password: j.Options["password"]}
	if cr.User == "" || cr.Password == "" {
		return InterBrokerCredentials{}, fmt.Errorf("%s: the broker authenticates to the others with its username=\"...\" and password=\"...\" options; set both", key)
	}
	return cr, nil
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
