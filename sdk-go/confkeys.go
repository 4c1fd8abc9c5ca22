package spool

import (
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// This file is the one table from librdkafka-style string keys ("bootstrap.servers",
// "linger.ms", ...) to the SDK's options. The C library (sdk-cgo) and the conformance drivers
// take their configuration through it, so a key means the same thing everywhere.

// ErrUnknownConfKey is wrapped by Conf.Set for a key the table does not have.
var ErrUnknownConfKey = errors.New("spool: unknown configuration key")

// ErrBadConfValue is wrapped by Conf.Set for a value its key does not accept.
var ErrBadConfValue = errors.New("spool: bad configuration value")

// ConfRole says which kind of client a configuration key matters to. A key of the other
// role is accepted and ignored, as librdkafka does, so one configuration can serve both.
type ConfRole uint8

const (
	// RoleAny keys matter to every client.
	RoleAny ConfRole = iota
	// RoleProducer keys only change how records are produced.
	RoleProducer
	// RoleConsumer keys only change how records are consumed.
	RoleConsumer
)

func (r ConfRole) String() string {
	switch r {
	case RoleProducer:
		return "producer"
	case RoleConsumer:
		return "consumer"
	}
	return "any"
}

// ConfKey is one configuration key of the table.
type ConfKey struct {
	// Name is the key, librdkafka's name where librdkafka has one.
	Name string
	// Aliases are other names of the same key (librdkafka's older names, the Java client's).
	Aliases []string
	// Role is the kind of client the key matters to.
	Role ConfRole
	// Default is the value in effect when the key is not set, in the key's own form.
	Default string
	// Doc says what the key sets and which values it takes.
	Doc string

	// parse checks a value and returns its canonical form and the option it stands for.
	parse func(v string) (canon string, opt Opt, err error)
}

// Partitioner names of the "partitioner" key: librdkafka's, plus round_robin and sticky.
const (
	PartitionerMurmur2Random    = "murmur2_random"
	PartitionerMurmur2          = "murmur2"
	PartitionerConsistent       = "consistent"
	PartitionerConsistentRandom = "consistent_random"
	PartitionerRandom           = "random"
	PartitionerRoundRobin       = "round_robin"
	PartitionerSticky           = "sticky"
)

var partitionerNames = []string{
	PartitionerMurmur2Random, PartitionerMurmur2, PartitionerConsistent,
	PartitionerConsistentRandom, PartitionerRandom, PartitionerRoundRobin, PartitionerSticky,
}

// PartitionerByName returns a new partitioner for one of the names the "partitioner" key
// takes, with librdkafka's placement:
//   - murmur2_random (the default): keyed records by murmur2 as the Java client
//     (KafkaPartition), records with a nil key at random, one partition per topic for
//     sticky.partitioning.linger.ms (10 ms) at a time, as librdkafka;
//   - murmur2: every record by murmur2 of its key, a nil key hashed as an empty one;
//   - consistent_random: records by CRC-32 (IEEE) of the key modulo the partition count, a
//     nil or empty key at random (sticky as murmur2_random's); consistent: a nil key hashed
//     as an empty one;
//   - random: every record at random; round_robin: one partition after the other;
//   - sticky: keyed records by murmur2, unkeyed ones to one partition for 1000 records, then
//     the next (Sticky(0, true)).
func PartitionerByName(name string) (Partitioner, error) {
	switch name {
	case PartitionerMurmur2Random:
		return keyedOrRandom(KafkaPartition, func(k []byte) bool { return k == nil }), nil
	case PartitionerMurmur2:
		return keyedOrRandom(KafkaPartition, nil), nil
	case PartitionerConsistentRandom:
		return keyedOrRandom(crc32Partition, func(k []byte) bool { return len(k) == 0 }), nil
	case PartitionerConsistent:
		return keyedOrRandom(crc32Partition, nil), nil
	case PartitionerRandom:
		return PartitionerFunc(func(_ *Record, n int) int { return rand.IntN(n) }), nil
	case PartitionerRoundRobin:
		return RoundRobin(), nil
	case PartitionerSticky:
		return Sticky(0, true), nil
	}
	return nil, fmt.Errorf("unknown partitioner %q (want one of %s)", name, strings.Join(partitionerNames, ", "))
}

func crc32Partition(key []byte, n int) int { return int(crc32.ChecksumIEEE(key) % uint32(n)) }

// keyedOrRandom places records by hash of their key, except those whose key random (when not
// nil) picks, which go to a random partition that sticks for DefaultStickyLinger (see
// keyedSticky; the sticky.partitioning.linger.ms key changes it).
func keyedOrRandom(hash func(key []byte, n int) int, random func(key []byte) bool) Partitioner {
	return &keyedSticky{hash: hash, random: random, linger: DefaultStickyLinger}
}

// confKeys is the table. Keys that set the same field (linger.ms and queue.buffering.max.ms)
// are one entry with aliases.
var confKeys = []ConfKey{
	{Name: "bootstrap.servers", Aliases: []string{"metadata.broker.list"}, Default: "127.0.0.1:9092",
		Doc: "comma-separated HOST:PORT list of brokers to discover the cluster from (SeedBrokers)",
		parse: func(v string) (string, Opt, error) {
			seeds, err := ParseBrokers(v)
			if err != nil {
				return "", nil, err
			}
			return strings.Join(seeds, ","), SeedBrokers(seeds...), nil
		}},
	{Name: "client.id", Default: "spool-go", Doc: "client id sent with every request (ClientID)",
		parse: func(v string) (string, Opt, error) { return v, ClientID(v), nil }},
	msKey("request.timeout.ms", nil, RoleAny, 30000, 1, 86400000, "bound of one request's round trip (RequestTimeout)", RequestTimeout),
	msKey("socket.connection.setup.timeout.ms", nil, RoleAny, 10000, 1, 86400000, "bound of connecting to a broker (DialTimeout)", DialTimeout),
	msKey("default.api.timeout.ms", nil, RoleAny, 60000, 1, 86400000, "bound of a retried call such as a commit or an offset lookup (APITimeout)", APITimeout),
	intKey("metadata.max.age.ms", []string{"topic.metadata.refresh.interval.ms"}, RoleAny, 300000, 1000, 86400000,
		"how often metadata is refreshed without errors (MetadataMaxAge)",
		func(n int) Opt { return MetadataMaxAge(time.Duration(n) * time.Millisecond) }),
	msField("retry.backoff.ms", RoleAny, 100, 300000, "first wait before a retry; doubles up to retry.backoff.max.ms (RetryBackoff)",
		func(c *config) *time.Duration { return &c.retryBackoff }),
	msField("retry.backoff.max.ms", RoleAny, 1000, 300000, "largest wait between retries (RetryBackoff)",
		func(c *config) *time.Duration { return &c.retryBackoffMax }),

	// security
	{Name: "security.protocol", Default: "plaintext",
		Doc: "how to talk to brokers: plaintext, ssl, sasl_plaintext or sasl_ssl (TLS, SASL)",
		parse: func(v string) (string, Opt, error) {
			p := strings.ToUpper(v)
			switch p {
			case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
				return strings.ToLower(p), func(c *config) error { c.sec.protocol = p; return nil }, nil
			}
			return "", nil, errors.New("want plaintext, ssl, sasl_plaintext or sasl_ssl")
		}},
	{Name: "sasl.mechanisms", Aliases: []string{"sasl.mechanism"},
		Doc: "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SASL)",
		parse: func(v string) (string, Opt, error) {
			if _, err := SASLByName(v, "", ""); err != nil {
				return "", nil, errors.New("want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
			}
			v = strings.ToUpper(v)
			return v, secField("sasl.mechanisms", v, func(s *securityConfig) *string { return &s.mechanism }), nil
		}},
	secKey("sasl.username", "SASL user name (SASL)", func(s *securityConfig) *string { return &s.user }),
	secKey("sasl.password", "SASL password (SASL)", func(s *securityConfig) *string { return &s.pass }),
	// The Java client's names (ssl.truststore.*, ssl.keystore.*) are aliases, PEM only.
	aliased(secKey("ssl.ca.location", "file of PEM CA certificates the broker's certificate must chain to; default: the system's (TLSFiles)",
		func(s *securityConfig) *string { return &s.files.CAFile }), "ssl.truststore.location"),
	aliased(secKey("ssl.ca.pem", "the CA certificates as inline PEM (TLSFiles)", func(s *securityConfig) *string { return &s.files.CAPEM }),
		"ssl.truststore.certificates"),
	secKey("ssl.certificate.location", "file of the client's PEM certificate chain, for mutual TLS (TLSFiles)",
		func(s *securityConfig) *string { return &s.files.CertFile }),
	aliased(secKey("ssl.certificate.pem", "the client's certificate chain as inline PEM (TLSFiles)", func(s *securityConfig) *string { return &s.files.CertPEM }),
		"ssl.keystore.certificate.chain"),
	secKey("ssl.key.location", "file of the client's unencrypted PEM private key (TLSFiles)", func(s *securityConfig) *string { return &s.files.KeyFile }),
	aliased(secKey("ssl.key.pem", "the client's private key as inline PEM (TLSFiles)", func(s *securityConfig) *string { return &s.files.KeyPEM }),
		"ssl.keystore.key"),
	{Name: "ssl.keystore.location",
		Doc: "the Java client's PEM keystore: one file with the client's certificate chain and its unencrypted PKCS#8 key, for mutual TLS (ssl.certificate.location and ssl.key.location in one; TLSFiles)",
		parse: func(v string) (string, Opt, error) {
			if v == "" {
				return "", nil, errors.New("empty value")
			}
			return v, func(c *config) error {
				c.sec.files.CertFile, c.sec.files.KeyFile = v, v
				c.sec.keysSet = append(c.sec.keysSet, "ssl.keystore.location")
				return nil
			}, nil
		}},
	pemStoreType("ssl.truststore.type"),
	pemStoreType("ssl.keystore.type"),
	{Name: "ssl.key.password",
		Doc: "the Java client's password of an encrypted key: Spool's clients read unencrypted keys only, so only an empty value is taken",
		parse: func(v string) (string, Opt, error) {
			if v != "" {
				return "", nil, errors.New("Spool's clients read unencrypted keys only: decrypt the key (openssl pkcs8 -topk8 -nocrypt) and leave ssl.key.password unset")
			}
			return "", func(*config) error { return nil }, nil
		}},
	boolKey("enable.ssl.certificate.verification", RoleAny, true, "verify the broker's certificate; false accepts any (TLSFiles.InsecureSkipVerify)",
		func(on bool) Opt { return func(c *config) error { c.sec.files.InsecureSkipVerify = !on; return nil } }),
	{Name: "ssl.endpoint.identification.algorithm", Default: "https",
		Doc: "https: the broker's certificate must name the host dialed; none: the chain alone is checked (TLSFiles.NoHostnameCheck)",
		parse: func(v string) (string, Opt, error) {
			v = strings.ToLower(v)
			if v != "https" && v != "none" {
				return "", nil, errors.New("want https or none")
			}
			return v, func(c *config) error { c.sec.endpointID = v; return nil }, nil
		}},

	// producer
	{Name: "acks", Aliases: []string{"request.required.acks"}, Role: RoleProducer, Default: "all",
		Doc: "acknowledgements a produce waits for: all (-1), 1 or 0 (RequiredAcks); anything but all turns idempotence off unless enable.idempotence=true",
		parse: func(v string) (string, Opt, error) {
			switch v {
			case "all", "-1":
				return "all", RequiredAcks(AcksAll), nil
			case "1":
				return "1", RequiredAcks(AcksLeader), nil
			case "0":
				return "0", RequiredAcks(AcksNone), nil
			}
			return "", nil, errors.New("want all, -1, 1 or 0")
		}},
	boolKey("enable.idempotence", RoleProducer, true, "idempotent producer: retries never duplicate or reorder (Idempotence)", Idempotence),
	{Name: "transactional.id", Role: RoleProducer, Default: "",
		Doc: "makes the producer transactional: InitTransactions, BeginTransaction, CommitTransaction, AbortTransaction; implies enable.idempotence (TransactionalID)",
		parse: func(v string) (string, Opt, error) {
			if v == "" {
				return "", func(c *config) error { c.txnID = ""; return nil }, nil
			}
			return v, TransactionalID(v), nil
		}},
	msKey("transaction.timeout.ms", nil, RoleProducer, 60000, 1, 1<<31-1,
		"how long the coordinator lets a transaction run before aborting it (TransactionTimeout)", TransactionTimeout),
	{Name: "compression.type", Aliases: []string{"compression.codec"}, Role: RoleProducer, Default: "none",
		Doc: "batch codec: none, gzip, snappy, lz4 or zstd (Compression)",
		parse: func(v string) (string, Opt, error) {
			codec, err := compress.ParseCodec(v)
			if err != nil {
				return "", nil, err
			}
			return codec.String(), Compression(codec), nil
		}},
	msKey("linger.ms", []string{"queue.buffering.max.ms"}, RoleProducer, 5, 0, 60000, "how long a batch waits for more records (Linger)", Linger),
	intKey("batch.size", []string{"message.max.bytes"}, RoleProducer, 1<<20, 1024, 64<<20,
		"largest batch, in bytes before compression; a record must fit in one (MaxBatchBytes)", MaxBatchBytes),
	intKey("batch.num.messages", nil, RoleProducer, 10000, 1, 1000000,
		"most records in one batch (MaxBatchRecords)", MaxBatchRecords),
	intKey("queue.buffering.max.messages", nil, RoleProducer, 50000, 1, 1<<30,
		"records produced and not yet acknowledged (libspool: not yet reported); a produce beyond waits (libspool: QUEUE_FULL) (MaxBufferedRecords)", MaxBufferedRecords),
	intKey("queue.buffering.max.kbytes", nil, RoleProducer, 32<<10, 1, 1<<31-1,
		"KiB of records (keys, values, headers) produced and not yet acknowledged (libspool: not yet reported); a produce beyond waits (libspool: QUEUE_FULL) (MaxBufferedBytes)",
		func(n int) Opt { return MaxBufferedBytes(int64(n) << 10) }),
	intKey("max.in.flight.requests.per.connection", []string{"max.in.flight"}, RoleProducer, 5, 1, 1000,
		"produce requests outstanding per broker; above 5 idempotence is off unless enable.idempotence=true (MaxInFlight)", MaxInFlight),
	boolKey("allow.auto.create.topics", RoleProducer, true,
		"ask the broker to create a topic produced to that does not exist (it does with auto.create.topics.enable=true); a record whose topic does not exist fails with UNKNOWN_TOPIC_OR_PART after message.timeout.ms (AllowAutoTopicCreation)",
		AllowAutoTopicCreation),
	msKey("message.timeout.ms", []string{"delivery.timeout.ms"}, RoleProducer, 120000, 1, 86400000,
		"how long a record may be retried before its delivery fails (DeliveryTimeout)", DeliveryTimeout),
	msKey("sticky.partitioning.linger.ms", nil, RoleProducer, 10, 0, 900000,
		"how long records murmur2_random and consistent_random place at random stay on one partition, so their batches fill; 0: a random partition per record (StickyPartitioningLinger)",
		StickyPartitioningLinger),
	{Name: "partitioner", Role: RoleProducer, Default: PartitionerMurmur2Random,
		Doc: "where records without an explicit partition go: " + strings.Join(partitionerNames, ", ") + " (PartitionerByName)",
		parse: func(v string) (string, Opt, error) {
			p, err := PartitionerByName(v)
			if err != nil {
				return "", nil, err
			}
			return v, WithPartitioner(p), nil
		}},

	// consumer
	{Name: "auto.offset.reset", Role: RoleConsumer, Default: "earliest",
		Doc: "where to start without a valid position: earliest (smallest, beginning), latest (largest, end) or error (none) (AutoOffsetReset)",
		parse: func(v string) (string, Opt, error) {
			switch v {
			case "earliest", "smallest", "beginning":
				return "earliest", AutoOffsetReset(ResetEarliest), nil
			case "latest", "largest", "end":
				return "latest", AutoOffsetReset(ResetLatest), nil
			case "error", "none":
				return "error", AutoOffsetReset(ResetNone), nil
			}
			return "", nil, errors.New("want earliest, latest or error (or smallest, beginning, largest, end, none)")
		}},
	{Name: "isolation.level", Role: RoleConsumer, Default: "read_uncommitted",
		Doc: "read_uncommitted or read_committed (Isolation)",
		parse: func(v string) (string, Opt, error) {
			switch v {
			case "read_uncommitted":
				return v, Isolation(ReadUncommitted), nil
			case "read_committed":
				return v, Isolation(ReadCommitted), nil
			}
			return "", nil, errors.New("want read_uncommitted or read_committed")
		}},
	msKey("fetch.wait.max.ms", []string{"fetch.max.wait.ms"}, RoleConsumer, 500, 0, 60000, "how long the broker may hold a fetch for data (FetchMaxWait)", FetchMaxWait),
	intKey("fetch.min.bytes", nil, RoleConsumer, 1, 1, 100<<20, "bytes a fetch waits for, up to fetch.wait.max.ms",
		func(n int) Opt { return func(c *config) error { c.fetchMinBytes = int32(n); return nil } }),
	intKey("fetch.max.bytes", nil, RoleConsumer, 50<<20, 1, 1<<30, "size cap of one fetch response (FetchMaxBytes)",
		func(n int) Opt { return func(c *config) error { c.fetchMaxBytes = int32(n); return nil } }),
	intKey("max.partition.fetch.bytes", []string{"fetch.message.max.bytes"}, RoleConsumer, 1<<20, 1, 1<<30,
		"size cap of one partition in a fetch (FetchMaxBytes)",
		func(n int) Opt { return func(c *config) error { c.fetchPartMaxBytes = int32(n); return nil } }),
	{Name: "group.id", Role: RoleConsumer,
		Doc: "consumer group to join; a consumer needs it to subscribe (ConsumerGroup)",
		parse: func(v string) (string, Opt, error) {
			if v == "" {
				return "", nil, errors.New("empty group id")
			}
			return v, ConsumerGroup(v), nil
		}},
	// Group keys set their fields directly, not through the group options, because those
	// refuse to be used without a group and a producer must accept a shared configuration.
	{Name: "group.instance.id", Role: RoleConsumer,
		Doc: "static membership id (KIP-345) (InstanceID)",
		parse: func(v string) (string, Opt, error) {
			if v == "" {
				return "", nil, errors.New("empty instance id")
			}
			return v, func(c *config) error { c.group.instanceID = v; return nil }, nil
		}},
	boolKey("enable.auto.commit", RoleConsumer, true, "commit what poll returned every auto.commit.interval.ms (AutoCommit, DisableAutoCommit)",
		func(on bool) Opt { return func(c *config) error { c.group.autoCommit = on; return nil } }),
	msField("auto.commit.interval.ms", RoleConsumer, 5000, 86400000, "auto commit period (AutoCommit)",
		func(c *config) *time.Duration { return &c.group.autoCommitEvery }),
	msField("session.timeout.ms", RoleConsumer, 45000, 3600000, "how long the coordinator waits for a heartbeat (SessionTimeout)",
		func(c *config) *time.Duration { return &c.group.sessionTimeout }),
	msField("heartbeat.interval.ms", RoleConsumer, 3000, 3600000, "heartbeat period, below session.timeout.ms (HeartbeatInterval)",
		func(c *config) *time.Duration { return &c.group.heartbeatInterval }),
	msField("max.poll.interval.ms", RoleConsumer, 60000, 3600000, "how long the coordinator waits for members to rejoin in a rebalance (RebalanceTimeout)",
		func(c *config) *time.Duration { return &c.group.rebalanceTimeout }),
	{Name: "partition.assignment.strategy", Role: RoleConsumer, Default: BalancerRange + "," + BalancerCooperativeSticky,
		Doc: "comma-separated assignors, most preferred first: range, roundrobin, cooperative-sticky (Balancers)",
		parse: func(v string) (string, Opt, error) {
			var names []string
			for n := range strings.SplitSeq(v, ",") {
				n = strings.TrimSpace(n)
				if balancerByName(n) == nil {
					return "", nil, fmt.Errorf("unknown assignor %q (want %s, %s or %s)", n, BalancerRange, BalancerRoundRobin, BalancerCooperativeSticky)
				}
				if slices.Contains(names, n) {
					return "", nil, fmt.Errorf("assignor %q given twice", n)
				}
				names = append(names, n)
			}
			return strings.Join(names, ","), func(c *config) error { c.group.balancers = names; return nil }, nil
		}},
}

// aliased gives k more names.
func aliased(k ConfKey, aliases ...string) ConfKey {
	k.Aliases = append(k.Aliases, aliases...)
	return k
}

// pemStoreType is the Java client's ssl.truststore.type or ssl.keystore.type: the stores are
// read as PEM only, so PEM is the one value taken and it changes nothing; JKS and PKCS12 get
// an error saying so.
func pemStoreType(name string) ConfKey {
	return ConfKey{Name: name, Default: "PEM",
		Doc: "the Java client's store type: PEM, the only one read (JKS and PKCS12 are refused)",
		parse: func(v string) (string, Opt, error) {
			if !strings.EqualFold(v, "PEM") {
				return "", nil, fmt.Errorf("%s stores are not read: Spool's clients read PEM only; convert the store to PEM and set %s=PEM", v, name)
			}
			return "PEM", func(*config) error { return nil }, nil
		}}
}

// secKey is a security key taking any non-empty string; setting it with security.protocol
// left at plaintext is an error of the combination.
func secKey(name, doc string, field func(*securityConfig) *string) ConfKey {
	return ConfKey{Name: name, Doc: doc,
		parse: func(v string) (string, Opt, error) {
			if v == "" {
				return "", nil, errors.New("empty value")
			}
			return v, secField(name, v, field), nil
		}}
}

func secField(name, v string, field func(*securityConfig) *string) Opt {
	return func(c *config) error {
		*field(&c.sec) = v
		c.sec.keysSet = append(c.sec.keysSet, name)
		return nil
	}
}

// intKey is a key taking a decimal integer in [lo, hi].
func intKey(name string, aliases []string, role ConfRole, def, lo, hi int, doc string, opt func(int) Opt) ConfKey {
	return ConfKey{Name: name, Aliases: aliases, Role: role, Default: strconv.Itoa(def),
		Doc: fmt.Sprintf("%s; %d to %d", doc, lo, hi),
		parse: func(v string) (string, Opt, error) {
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				return "", nil, fmt.Errorf("want an integer from %d to %d", lo, hi)
			}
			return strconv.Itoa(n), opt(n), nil
		}}
}

// msKey is a key taking milliseconds, from lo to hi, for a duration option.
func msKey(name string, aliases []string, role ConfRole, def, lo, hi int, doc string, opt func(time.Duration) Opt) ConfKey {
	return intKey(name, aliases, role, def, lo, hi, doc, func(n int) Opt { return opt(time.Duration(n) * time.Millisecond) })
}

// msField is a key taking milliseconds, from 1 to hi, for a duration field set directly
// (group fields: the group options refuse to be used without a group).
func msField(name string, role ConfRole, def, hi int, doc string, field func(*config) *time.Duration) ConfKey {
	return msKey(name, nil, role, def, 1, hi, doc, func(d time.Duration) Opt {
		return func(c *config) error { *field(c) = d; return nil }
	})
}

// boolKey is a key taking true or false (also 1 or 0).
func boolKey(name string, role ConfRole, def bool, doc string, opt func(bool) Opt) ConfKey {
	return ConfKey{Name: name, Role: role, Default: strconv.FormatBool(def), Doc: doc + "; true or false",
		parse: func(v string) (string, Opt, error) {
			switch v {
			case "true", "1":
				return "true", opt(true), nil
			case "false", "0":
				return "false", opt(false), nil
			}
			return "", nil, errors.New("want true or false")
		}}
}

// confIndex finds a key of the table by name or alias.
var confIndex = func() map[string]int {
	m := map[string]int{}
	for i, k := range confKeys {
		for _, n := range append([]string{k.Name}, k.Aliases...) {
			if _, dup := m[n]; dup {
				panic("spool: configuration key " + n + " defined twice")
			}
			m[n] = i
		}
	}
	return m
}()

// ConfKeys returns the table of configuration keys, in a stable order.
func ConfKeys() []ConfKey { return slices.Clone(confKeys) }

// LookupConfKey returns the key named name (or having it as an alias).
func LookupConfKey(name string) (ConfKey, bool) {
	i, ok := confIndex[name]
	if !ok {
		return ConfKey{}, false
	}
	return confKeys[i], true
}

// Conf is a set of librdkafka-style key/value pairs, each checked when it is set. Its zero
// value is empty and ready to use. A Conf is not safe for concurrent use.
type Conf struct {
	set []confValue // in the order first set; a key set again keeps its place
}

type confValue struct {
	key   *ConfKey
	value string // canonical
	opt   Opt
}

// NewConfFromMap returns a Conf with every pair of m set, in key order; the first bad pair is
// the error.
func NewConfFromMap(m map[string]string) (*Conf, error) {
	c := &Conf{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := c.Set(k, m[k]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Set checks value for key and records it, replacing an earlier value of the key (or of one
// of its aliases). An unknown key is an error wrapping ErrUnknownConfKey; a value the key does
// not take, one wrapping ErrBadConfValue; both name the key.
func (c *Conf) Set(key, value string) error {
	i, ok := confIndex[key]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownConfKey, key)
	}
	k := &confKeys[i]
	canon, opt, err := k.parse(strings.TrimSpace(value))
	if err == nil {
		// Run the option on a scratch configuration, so its own checks speak now.
		scratch := defaultConfig()
		err = opt(&scratch)
	}
	if err != nil {
		return fmt.Errorf("%w %q for %s: %w", ErrBadConfValue, value, key, err)
	}
	v := confValue{key: k, value: canon, opt: opt}
	if j := slices.IndexFunc(c.set, func(s confValue) bool { return s.key == k }); j >= 0 {
		c.set[j] = v
	} else {
		c.set = append(c.set, v)
	}
	return nil
}

// Get returns the canonical value set for key (a name or an alias): "true"/"false" for a
// boolean, a decimal number for an integer, the long name of an enumeration ("all" for acks=-1,
// "earliest" for smallest). ok is false when the key was not set or does not exist.
func (c *Conf) Get(key string) (value string, ok bool) {
	i, known := confIndex[key]
	if !known {
		return "", false
	}
	for _, s := range c.set {
		if s.key == &confKeys[i] {
			return s.value, true
		}
	}
	return "", false
}

// Clone returns an independent copy of c.
func (c *Conf) Clone() *Conf { return &Conf{set: slices.Clone(c.set)} }

// Partitioner returns the partitioner c's partitioner and sticky.partitioning.linger.ms keys
// describe (their defaults when unset), for a caller that wraps it: libspool places records
// with an explicit partition there and asks it for the others.
func (c *Conf) Partitioner() (Partitioner, error) {
	name, ok := c.Get("partitioner")
	if !ok {
		name = PartitionerMurmur2Random
	}
	p, err := PartitionerByName(name)
	if err != nil {
		return nil, err
	}
	if v, ok := c.Get("sticky.partitioning.linger.ms"); ok {
		ms, err := strconv.Atoi(v) // checked by Set
		if err != nil {
			return nil, fmt.Errorf("sticky.partitioning.linger.ms: %w", err)
		}
		p = applyStickyLinger(p, time.Duration(ms)*time.Millisecond)
	}
	return p, nil
}

// Opts returns the options c stands for, to pass to NewClient (after which more options may
// follow and override them).
func (c *Conf) Opts() []Opt {
	out := make([]Opt, 0, len(c.set)+1)
	for _, s := range c.set {
		out = append(out, s.opt)
	}
	return append(out, checkRetryBackoff)
}

// checkRetryBackoff checks retry.backoff.ms against retry.backoff.max.ms, which are set one
// by one.
func checkRetryBackoff(c *config) error {
	if c.retryBackoffMax < c.retryBackoff {
		return fmt.Errorf("retry.backoff.ms %v above retry.backoff.max.ms %v", c.retryBackoff, c.retryBackoffMax)
	}
	return nil
}

// Check applies the options of c together, as NewClient would, and returns the first error,
// without starting a client. A group's subscription is not required here: it is given later,
// by the caller's subscribe.
func (c *Conf) Check() error {
	cfg := defaultConfig()
	for _, o := range c.Opts() {
		if err := o(&cfg); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
	}
	if cfg.group.id != "" && len(cfg.group.topics) == 0 && len(cfg.group.patterns) == 0 {
		cfg.group.topics = []string{"subscription-given-later"}
	}
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}
