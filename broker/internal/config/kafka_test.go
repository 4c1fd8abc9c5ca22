package config

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// Kafka 3.9's two stock server.properties load unchanged, and their settings land where Spool
// reads them.
func TestKafkaStockServerProperties(t *testing.T) {
	cases := []struct {
		file                  string
		listen, advertised    string
		nodeID, dirs, zk      string
		wantIgnored, notIgnor []string
	}{
		{"kafka-3.9-zookeeper-server.properties", "127.0.0.1:9092", "", "0", "/tmp/kafka-logs", "localhost:2181",
			[]string{"num.io.threads", "num.network.threads", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
				"num.recovery.threads.per.data.dir"},
			[]string{"log.retention.hours", "group.initial.rebalance.delay.ms", "broker.id", "offsets.topic.replication.factor",
				"zookeeper.connection.timeout.ms", "transaction.state.log.replication.factor", "transaction.state.log.min.isr"}},
		{"kafka-3.9-kraft-server.properties", ":9092", "localhost:9092", "1", "/tmp/kraft-combined-logs", "",
			[]string{"process.roles", "controller.quorum.voters", "num.io.threads"},
			[]string{"listeners", "controller.listener.names", "inter.broker.listener.name", "listener.security.protocol.map", "log.retention.hours"}},
	}
	for _, tc := range cases {
		c, err := Load([]string{"--config", filepath.Join("testdata", tc.file)}, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		for name, want := range map[string]string{Listeners: tc.listen, AdvertisedListeners: tc.advertised, NodeID: tc.nodeID,
			LogDirs: tc.dirs, ZooKeeperConnect: tc.zk, LogRetentionMs: "604800000", LogSegmentBytes: "1073741824", NumPartitions: "1"} {
			if got := c.Get(name); got != want {
				t.Errorf("%s: %s = %q, want %q", tc.file, name, got, want)
			}
		}
		if c.Source(LogRetentionMs) != SourceStatic {
			t.Errorf("%s: log.retention.ms comes from log.retention.hours in the file, source %d", tc.file, c.Source(LogRetentionMs))
		}
		var ignored []string
		for _, ig := range c.NoEffect() {
			if ig.Why == "" {
				t.Errorf("%s: %v ignored without a reason", tc.file, ig.Names)
			}
			ignored = append(ignored, ig.Names...)
		}
		for _, n := range tc.wantIgnored {
			if !slices.Contains(ignored, n) {
				t.Errorf("%s: %s is not reported as having no effect (%v)", tc.file, n, ignored)
			}
		}
		for _, n := range tc.notIgnor {
			if slices.Contains(ignored, n) {
				t.Errorf("%s: %s is reported as having no effect, but Spool reads it", tc.file, n)
			}
		}
	}
}

func TestRetentionUnitsPrecedence(t *testing.T) {
	cases := []struct {
		sets []string
		want string
	}{
		{nil, "604800000"},
		{[]string{"log.retention.hours=1"}, "3600000"},
		{[]string{"log.retention.hours=1", "log.retention.minutes=2"}, "120000"},
		{[]string{"log.retention.hours=1", "log.retention.minutes=2", "log.retention.ms=3"}, "3"},
		{[]string{"log.retention.ms=3", "log.retention.hours=1"}, "3"},
		{[]string{"log.retention.hours=-1"}, "-1"},
		{[]string{"log.retention.minutes=-1"}, "-1"},
	}
	for _, tc := range cases {
		var args []string
		for _, s := range tc.sets {
			args = append(args, "--set", s)
		}
		c, err := Load(args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.sets, err)
		}
		if got := c.Get(LogRetentionMs); got != tc.want {
			t.Errorf("%v: log.retention.ms = %s, want %s", tc.sets, got, tc.want)
		}
	}
	c, err := Load([]string{"--set", "log.roll.hours=2", "--set", "log.dir=/from/log.dir"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Get(LogRollMs) != "7200000" || c.Get(LogDirs) != "/from/log.dir" {
		t.Errorf("log.roll.ms = %s, log.dirs = %s", c.Get(LogRollMs), c.Get(LogDirs))
	}
}

// A file with several bad lines reports every one, with a suggestion where a name is close.
func TestEveryBadPropertyReportedAtOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.properties")
	props := "log.retention.hourz=1\nnum.partitons=3\nretention.ms=5\nnum.io.threads=eight\ncompletely.unknown.thing=1\nlisteners=SSL://:9093\n"
	if err := os.WriteFile(file, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load([]string{"--config", file, "--set", "log.dirs=/a,/b"}, io.Discard)
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want a UsageError", err)
	}
	for _, want := range []string{
		`unknown property "log.retention.hourz" (did you mean log.retention.hours?)`,
		`unknown property "num.partitons" (did you mean num.partitions?)`,
		`unknown property "retention.ms" (did you mean log.retention.ms?)`,
		`invalid value "eight" for num.io.threads: want an integer`,
		`unknown property "completely.unknown.thing"` + "\n",
		"an SSL listener needs a certificate", // a contradiction, found after the names
		"one directory",
	} {
		if !strings.Contains(err.Error()+"\n", want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// Settings that contradict Spool are refused with the reason.
func TestContradictionsRefused(t *testing.T) {
	cases := map[string]struct{ set, says string }{
		"tls without a key": {"listeners=SSL://:9093", "an SSL listener needs a certificate"},
		"sasl with gssapi":  {"listeners=SASL_PLAINTEXT://:9093", "GSSAPI is not supported; Spool serves PLAIN"},
		"mapped to sasl":    {"listeners=EXTERNAL://:9093", "uses EXTERNAL"},
		"unmapped listener": {"listeners=PLAINTEXT://:9092,OTHER://:9094", "uses OTHER"},
		"same name twice":   {"listeners=PLAINTEXT://:9092,PLAINTEXT://:9094", "given twice"},
		"two dirs":          {"log.dirs=/a,/b", "one directory"},
		"controller only":   {"process.roles=controller", "no controller-only role"},
		"authorizer":        {"authorizer.class.name=com.example.MyAuthorizer", "enabled by one of kafka.security.authorizer.AclAuthorizer"},
		"no topic deletion": {"delete.topic.enable=false", "always allows DeleteTopics"},
		"tiered storage":    {"remote.log.storage.system.enable=true", "no tiered storage"},
		"bad kafka type":    {"num.io.threads=many", "want an integer"},
		"bad kafka short":   {"transaction.state.log.replication.factor=70000", "-32768 to 32767"},
	}
	for name, tc := range cases {
		_, err := Load([]string{"--set", tc.set}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: --set %s: err = %v, want it to say %q", name, tc.set, err, tc.says)
		}
	}
	// A mapped PLAINTEXT listener with another name is fine.
	c, err := Load([]string{"--set", "listener.security.protocol.map=CLIENTS:PLAINTEXT", "--set", "listeners=CLIENTS://127.0.0.1:9999"}, io.Discard)
	if err != nil || c.Get(Listeners) != "127.0.0.1:9999" {
		t.Errorf("named PLAINTEXT listener: %v, listeners = %q", err, c.Get(Listeners))
	}
}

// The Kafka table is sorted, has no duplicates, and every default parses as its type; every
// entry says what it does or why it has no effect.
func TestKafkaDefs(t *testing.T) {
	if len(kafkaDefs) < 290 {
		t.Fatalf("%d Kafka properties, want Kafka 3.9's (about 300 beyond Spool's own)", len(kafkaDefs))
	}
	for i, d := range kafkaDefs {
		if i > 0 && kafkaDefs[i-1].Name >= d.Name {
			t.Errorf("kafkaDefs not sorted or duplicated at %s", d.Name)
		}
		if err := d.Parse(d.Default); err != nil {
			t.Errorf("%s: default: %v", d.Name, err)
		}
		if d.Doc == "" || strings.HasSuffix(d.Doc, ": .") {
			t.Errorf("%s: no doc or reason: %q", d.Name, d.Doc)
		}
	}
	c := New()
	for _, d := range AllBrokerDefs() {
		if c.Source(d.Name) != SourceDefault {
			t.Errorf("%s: source %d in the defaults", d.Name, c.Source(d.Name))
		}
	}
	if len(c.NoEffect()) != 0 {
		t.Errorf("defaults report properties with no effect: %v", c.NoEffect())
	}
}

// Every Kafka 3.9 topic config validates with a typical value, and bad values are refused.
func TestKafkaTopicConfigs(t *testing.T) {
	good := map[string]string{
		"cleanup.policy": "compact", "compression.gzip.level": "-1", "compression.lz4.level": "9", "compression.type": "producer",
		"compression.zstd.level": "3", "delete.retention.ms": "86400000", "file.delete.delay.ms": "60000", "flush.messages": "1",
		"flush.ms": "1000", "follower.replication.throttled.replicas": "0:1,1:2", "index.interval.bytes": "4096",
		"leader.replication.throttled.replicas": "*", "local.retention.bytes": "-2", "local.retention.ms": "-2",
		"max.compaction.lag.ms": "9223372036854775807", "max.message.bytes": "1048588", "message.downconversion.enable": "true",
		"message.format.version": "3.0-IV1", "message.timestamp.after.max.ms": "3600000", "message.timestamp.before.max.ms": "3600000",
		"message.timestamp.difference.max.ms": "3600000", "message.timestamp.type": "CreateTime", "min.cleanable.dirty.ratio": "0.5",
		"min.compaction.lag.ms": "0", "min.insync.replicas": "1", "preallocate": "false", "remote.log.copy.disable": "false",
		"remote.log.delete.on.disable": "false", "remote.storage.enable": "false", "retention.bytes": "-1", "retention.ms": "604800000",
		"segment.bytes": "1073741824", "segment.index.bytes": "10485760", "segment.jitter.ms": "0", "segment.ms": "604800000",
		"unclean.leader.election.enable": "true",
	}
	for _, d := range TopicDefs {
		v, ok := good[d.Name]
		if !ok {
			t.Errorf("no test value for %s", d.Name)
			continue
		}
		if err := ValidateTopic(d.Name, v); err != nil {
			t.Errorf("%s=%s: %v", d.Name, v, err)
		}
	}
	if len(TopicDefs) != len(good) {
		t.Errorf("%d topic configs, %d tested", len(TopicDefs), len(good))
	}
	bad := map[string]string{
		"compression.type": "brotli", "compression.gzip.level": "10", "min.cleanable.dirty.ratio": "1.5", "remote.storage.enable": "true",
		"message.format.version": "latest", "preallocate": "yes", "leader.replication.throttled.replicas": "0-1",
		"message.timestamp.before.max.ms": "-1", "local.retention.ms": "-3",
	}
	for k, v := range bad {
		if err := ValidateTopic(k, v); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
}

// The broker defaults of topic configs Spool honours are documented as such, not as having no
// effect: setting one in server.properties is not reported as ignored.
func TestTopicConfigDefaultsAreNotIgnored(t *testing.T) {
	for _, set := range []string{"log.roll.jitter.ms=1", "log.roll.jitter.hours=1", "log.cleaner.max.compaction.lag.ms=1",
		"log.cleaner.min.cleanable.ratio=0.1", "log.message.timestamp.before.max.ms=1", "compression.type=zstd"} {
		c, err := Load([]string{"--set", set}, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", set, err)
		}
		if len(c.NoEffect()) != 0 {
			t.Errorf("%s is reported as having no effect: %v", set, c.NoEffect())
		}
	}
	for sets, want := range map[string]string{"log.roll.jitter.hours=2": "7200000", "log.roll.jitter.ms=": "0", "log.roll.jitter.ms=5": "5"} {
		c, err := Load([]string{"--set", sets}, io.Discard)
		if err != nil || c.Get("log.roll.jitter.ms") != want {
			t.Errorf("%s: log.roll.jitter.ms = %q, want %s (%v)", sets, c.Get("log.roll.jitter.ms"), want, err)
		}
	}
}

// Several listeners, named ones mapped through listener.security.protocol.map, each with its
// advertised address; the inter-broker listener is picked as Kafka picks it.
func TestSeveralListeners(t *testing.T) {
	c, err := Load([]string{
		"--set", "listeners=PLAINTEXT://127.0.0.1:9092,SSL://:9093,INTERNAL://10.0.0.1:9094",
		"--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:PLAINTEXT",
		"--set", "advertised.listeners=SSL://public.example:443,PLAINTEXT://127.0.0.1:9092",
		"--set", "inter.broker.listener.name=internal",
		"--set", "ssl.keystore.type=PEM", "--set", "ssl.keystore.location=/etc/spool/broker.pem",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []Listener{
		{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: "127.0.0.1:9092", Advertised: "127.0.0.1:9092"},
		{Name: "SSL", Protocol: "SSL", Addr: ":9093", Advertised: "public.example:443"},
		{Name: "INTERNAL", Protocol: "PLAINTEXT", Addr: "10.0.0.1:9094"},
	}
	if got := c.Listeners(); !slices.Equal(got, want) {
		t.Errorf("listeners:\n got %+v\nwant %+v", got, want)
	}
	if c.InterBrokerListener() != "INTERNAL" || c.Advertised() != "10.0.0.1:9094" {
		t.Errorf("inter-broker listener %q advertised %q", c.InterBrokerListener(), c.Advertised())
	}
	// Without inter.broker.listener.name, security.inter.broker.protocol's name (PLAINTEXT).
	c, err = Load([]string{"--set", "listeners=SSL://:9093,PLAINTEXT://127.0.0.1:9092", "--set", "ssl.keystore.type=PEM",
		"--set", "ssl.keystore.certificate.chain=x", "--set", "ssl.keystore.key=y"}, io.Discard)
	if err != nil || c.InterBrokerListener() != "PLAINTEXT" || c.Advertised() != "127.0.0.1:9092" {
		t.Errorf("default inter-broker listener: %v %q %q", err, c.InterBrokerListener(), c.Advertised())
	}
	// The flags keep their meaning: one PLAINTEXT listener and its advertised address.
	c, err = Load([]string{"--listen", "127.0.0.1:7000", "--advertised-listener", "broker.example:7001"}, io.Discard)
	if err != nil || !slices.Equal(c.Listeners(), []Listener{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: "127.0.0.1:7000", Advertised: "broker.example:7001"}}) ||
		c.Get(Listeners) != "127.0.0.1:7000" || c.Get(AdvertisedListeners) != "broker.example:7001" {
		t.Errorf("flags: %v %+v", err, c.Listeners())
	}
}

// Each bad security setting is refused, saying what is wrong.
func TestBadSSLSettings(t *testing.T) {
	ssl := []string{"--set", "listeners=SSL://127.0.0.1:9093", "--set", "ssl.keystore.type=PEM", "--set", "ssl.keystore.location=/k.pem"}
	cases := map[string]struct {
		set  []string
		says string
	}{
		"jks keystore":         {[]string{"ssl.keystore.type=JKS"}, "ssl.keystore.type=JKS: Spool reads PEM keystores only"},
		"two keystores":        {[]string{"ssl.keystore.key=k", "ssl.keystore.certificate.chain=c"}, "both set"},
		"encrypted key":        {[]string{"ssl.key.password=secret"}, "unencrypted PKCS#8"},
		"client auth typo":     {[]string{"ssl.client.auth=always"}, "want none, requested or required"},
		"mtls without CAs":     {[]string{"ssl.client.auth=required"}, "needs the CAs"},
		"jks truststore":       {[]string{"ssl.truststore.location=/ca.pem"}, "ssl.truststore.type=JKS"},
		"old tls":              {[]string{"ssl.enabled.protocols=TLSv1.1"}, "TLSv1.1 is not supported"},
		"bad cipher":           {[]string{"ssl.cipher.suites=TLS_RSA_WITH_RC4_128_SHA"}, "cipher suite TLS_RSA_WITH_RC4_128_SHA"},
		"unknown advertised":   {[]string{"advertised.listeners=OTHER://h:1"}, "OTHER is no listener"},
		"unknown inter-broker": {[]string{"inter.broker.listener.name=OTHER"}, "no such listener"},
	}
	for name, tc := range cases {
		args := slices.Clone(ssl)
		for _, kv := range tc.set {
			args = append(args, "--set", kv)
		}
		_, err := Load(args, io.Discard)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: err = %v, want a usage error saying %q", name, err, tc.says)
		}
	}
	if _, err := Load(ssl, io.Discard); err != nil {
		t.Errorf("a good SSL setup: %v", err)
	}
}

// SASL listeners: PLAIN's users come from the listener's JAAS config as Kafka reads it.
func TestSASLListeners(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a \"quoted\" secret";`
	c, err := Load([]string{"--set", "listeners=SASL_PLAINTEXT://127.0.0.1:9094,PLAINTEXT://127.0.0.1:9092", "--set", "sasl.enabled.mechanisms=PLAIN",
		"--set", "listener.name.SASL_PLAINTEXT.plain.sasl.jaas.config=" + jaas}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := c.SASL("SASL_PLAINTEXT")
	if !slices.Equal(s.Mechanisms, []string{"PLAIN"}) || len(s.PlainUsers) != 2 || s.PlainUsers["admin"] != "admin-secret" || s.PlainUsers["alice"] != `a "quoted" secret` {
		t.Errorf("SASL setup: %+v", s)
	}
	if !c.Listeners()[0].SASL() || c.Listeners()[0].TLS() || c.InterBrokerListener() != "PLAINTEXT" {
		t.Errorf("listeners %+v, inter-broker %s", c.Listeners(), c.InterBrokerListener())
	}
	for name, tc := range map[string]struct {
		set  []string
		says string
	}{
		"no users":           {[]string{"sasl.enabled.mechanisms=PLAIN"}, "PLAIN needs its users: set listener.name.sasl_plaintext.plain.sasl.jaas.config"},
		"gssapi":             {[]string{"sasl.enabled.mechanisms=GSSAPI"}, "GSSAPI is not supported"},
		"bad jaas":           {[]string{"sasl.enabled.mechanisms=PLAIN", `listener.name.sasl_plaintext.plain.sasl.jaas.config=PlainLoginModule required user_a="x"`}, "missing the closing ';'"},
		"other module":       {[]string{"sasl.enabled.mechanisms=PLAIN", `listener.name.sasl_plaintext.plain.sasl.jaas.config=com.example.Login required user_a="x";`}, "PLAIN's is org.apache.kafka.common.security.plain.PlainLoginModule"},
		"nobody":             {[]string{"sasl.enabled.mechanisms=PLAIN", `listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="a";`}, "nobody could log in"},
		"unknown override":   {[]string{"listener.name.sasl_plaintext.num.partitions=3"}, "a listener overrides ssl.* and sasl.*"},
		"bad override value": {[]string{"listener.name.ssl.ssl.client.auth=sometimes", "sasl.enabled.mechanisms=PLAIN"}, "sometimes"},
	} {
		args := []string{"--set", "listeners=SASL_PLAINTEXT://127.0.0.1:9094,SSL://127.0.0.1:9093", "--set", "ssl.keystore.type=PEM", "--set", "ssl.keystore.location=/k.pem"}
		for _, kv := range tc.set {
			args = append(args, "--set", kv)
		}
		if _, err := Load(args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want it to say %q", name, err, tc.says)
		}
	}
}

// In cluster mode a SASL inter-broker listener takes the broker's own credentials from the
// listener's JAAS config for sasl.mechanism.inter.broker.protocol, as Kafka does.
func TestInterBrokerSASL(t *testing.T) {
	base := []string{"--set", "listeners=SASL_SSL://127.0.0.1:9094", "--set", "ssl.keystore.type=PEM", "--set", "ssl.keystore.location=/k.pem",
		"--set", "zookeeper.connect=127.0.0.1:2181", "--set", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"--set", `listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="b-secret" user_broker="b-secret";`}
	c, err := Load(append(slices.Clone(base), "--set", "sasl.mechanism.inter.broker.protocol=PLAIN"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := c.InterBrokerSASL()
	if err != nil || cr != (InterBrokerCredentials{Mechanism: "PLAIN", User: "broker", Password: "b-secret"}) || c.InterBrokerListener() != "SASL_SSL" {
		t.Errorf("credentials %+v, %v, listener %s", cr, err, c.InterBrokerListener())
	}
	for name, tc := range map[string]struct {
		set  []string
		says string
	}{
		"kafka's default GSSAPI": {nil, "sasl.mechanism.inter.broker.protocol=GSSAPI: the inter-broker listener SASL_SSL enables PLAIN,SCRAM-SHA-512"},
		"no jaas for scram":      {[]string{"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512"}, "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config (the broker's own credentials for SCRAM-SHA-512)"},
		"no password": {[]string{"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
			`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker";`}, "set both"},
	} {
		args := slices.Clone(base)
		for _, kv := range tc.set {
			args = append(args, "--set", kv)
		}
		if _, err := Load(args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want it to say %q", name, err, tc.says)
		}
	}
}

// The broker property that is a topic config's default is checked as the topic config is:
// a bad compression.type or level in server.properties stops spoold with the key named.
func TestTopicDefaultsCheckedAtTheBroker(t *testing.T) {
	for _, set := range []string{"compression.type=brotli", "compression.gzip.level=0", "compression.lz4.level=18",
		"compression.zstd.level=23", "log.cleaner.min.cleanable.ratio=1.5", "log.message.timestamp.before.max.ms=-1"} {
		_, err := Load([]string{"--set", set}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), strings.Split(set, "=")[0]) {
			t.Errorf("--set %s: %v, want an error naming the property", set, err)
		}
	}
	for _, set := range []string{"compression.type=zstd", "compression.gzip.level=9", "compression.lz4.level=1", "compression.zstd.level=-7"} {
		if _, err := Load([]string{"--set", set}, io.Discard); err != nil {
			t.Errorf("--set %s: %v", set, err)
		}
	}
}

// The compression level configs accept exactly what the codecs apply (package compress holds
// Kafka's ranges once for the broker, the SDK and the CLI).
func TestCompressionLevelRanges(t *testing.T) {
	for _, c := range []compress.Codec{compress.Gzip, compress.LZ4, compress.Zstd} {
		name := "compression." + c.String() + ".level"
		lo, hi, def, _ := compress.LevelRange(c)
		for l := lo - 1; l <= hi+1; l++ {
			if l > lo+2 && l < hi-2 && l != 0 && l != def {
				continue
			}
			topicErr := ValidateTopic(name, strconv.Itoa(l))
			if codecErr := compress.CheckLevel(c, l); (topicErr == nil) != (codecErr == nil) {
				t.Errorf("%s=%d: the topic config says %v, the codec %v", name, l, topicErr, codecErr)
			}
		}
		if d := LookupBroker(name); d == nil || d.Default != strconv.Itoa(def) {
			t.Errorf("%s: broker default %v, the codec's %d", name, d, def)
		}
	}
}
