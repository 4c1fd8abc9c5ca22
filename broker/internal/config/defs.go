// Package config holds the broker's configuration: Kafka's property names and defaults, read
// from an optional properties file and overridden by flags, plus the topic-level overrides
// (retention.ms, cleanup.policy, ...) and how they fall back to broker defaults.
package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Type is a configuration value's type, numbered as DescribeConfigs' ConfigType.
type Type int8

// The configuration types.
const (
	Boolean  Type = 1
	String   Type = 2
	Int      Type = 3
	Short    Type = 4
	Long     Type = 5
	Double   Type = 6
	List     Type = 7
	Class    Type = 8
	Password Type = 9
)

// Def defines one property.
type Def struct {
	Name    string
	Type    Type
	Default string // "" with Nullable means no value
	Doc     string
	// Check validates a parsed value beyond its type.
	Check func(v string) error
	// Nullable properties may be unset.
	Nullable bool
	// NoEffect, when set, says why the property is accepted but changes nothing in Spool.
	NoEffect string
}

// Parse validates v against the definition.
func (d *Def) Parse(v string) error {
	v = strings.TrimSpace(v)
	if v == "" && d.Nullable {
		return nil
	}
	var err error
	switch d.Type {
	case Boolean:
		if v != "true" && v != "false" {
			err = fmt.Errorf("want true or false")
		}
	case Short:
		if _, e := strconv.ParseInt(v, 10, 16); e != nil {
			err = fmt.Errorf("want an integer from -32768 to 32767")
		}
	case Int:
		if _, e := strconv.ParseInt(v, 10, 32); e != nil {
			err = fmt.Errorf("want an integer from -2147483648 to 2147483647")
		}
	case Long:
		if _, e := strconv.ParseInt(v, 10, 64); e != nil {
			err = fmt.Errorf("want a 64-bit integer")
		}
	case Double:
		if _, e := strconv.ParseFloat(v, 64); e != nil {
			err = fmt.Errorf("want a number")
		}
	}
	if err == nil && d.Check != nil {
		err = d.Check(v)
	}
	if err != nil {
		return fmt.Errorf("invalid value %q for %s: %w", v, d.Name, err)
	}
	return nil
}

func atLeast(n int64) func(string) error {
	return func(v string) error {
		x, _ := strconv.ParseInt(v, 10, 64)
		if x < n {
			return fmt.Errorf("must be at least %d", n)
		}
		return nil
	}
}

func between(lo, hi int64) func(string) error {
	return func(v string) error {
		x, _ := strconv.ParseInt(v, 10, 64)
		if x < lo || x > hi {
			return fmt.Errorf("must be from %d to %d", lo, hi)
		}
		return nil
	}
}

// gzipLevel is Kafka's compression.gzip.level: 1 to 9, or -1 for gzip's default.
func gzipLevel(v string) error {
	if v == "-1" {
		return nil
	}
	return between(1, 9)(v)
}

// ratio is a fraction from 0 to 1.
func ratio(v string) error {
	if x, _ := strconv.ParseFloat(v, 64); x < 0 || x > 1 {
		return fmt.Errorf("must be from 0 to 1")
	}
	return nil
}

// messageFormatVersion accepts Kafka's version strings (0.8.0, 2.8-IV1, 3.0-IV1, ...); the
// value has no effect in Spool, which always writes the v2 record format.
func messageFormatVersion(v string) error {
	parts := strings.SplitN(v, "-IV", 2)
	nums := strings.Split(parts[0], ".")
	ok := len(nums) >= 2 && len(nums) <= 3
	for _, n := range append(nums, parts[1:]...) {
		if _, err := strconv.ParseUint(n, 10, 16); err != nil {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("want a Kafka version such as 3.0-IV1")
	}
	return nil
}

// throttledReplicas is Kafka's [partition]:[broker],... list, or * for all replicas.
func throttledReplicas(v string) error {
	if v == "" || v == "*" {
		return nil
	}
	for _, pr := range strings.Split(v, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(pr), ":")
		_, errP := strconv.ParseUint(p, 10, 31)
		_, errB := strconv.ParseUint(b, 10, 31)
		if !ok || errP != nil || errB != nil {
			return fmt.Errorf("want * or PARTITION:BROKER,... (e.g. 0:101,1:102)")
		}
	}
	return nil
}

// noRemoteStorage refuses remote.storage.enable=true, as Kafka does on a broker without
// remote.log.storage.system.enable: Spool has no tiered storage.
func noRemoteStorage(v string) error {
	if v == "true" {
		return fmt.Errorf("Spool has no tiered storage; every segment stays on the broker's disk")
	}
	return nil
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		for _, ok := range values {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(values, ", "))
	}
}

func cleanupPolicy(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "delete" && p != "compact" {
			return fmt.Errorf("must be a list of delete and compact")
		}
	}
	return nil
}

func hostPort(v string) error {
	i := strings.LastIndexByte(v, ':')
	if i < 0 {
		return fmt.Errorf("want HOST:PORT")
	}
	if _, err := strconv.ParseUint(v[i+1:], 10, 16); err != nil {
		return fmt.Errorf("bad port in %q", v)
	}
	return nil
}

// httpURL checks an http or https URL with a host.
func httpURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("want http://HOST:PORT or https://HOST:PORT, got %q", v)
	}
	return nil
}

// Broker property names used by code.
const (
	Listeners                    = "listeners"
	AdvertisedListeners          = "advertised.listeners"
	LogDirs                      = "log.dirs"
	NodeID                       = "node.id"
	ZooKeeperConnect             = "zookeeper.connect"
	NumPartitions                = "num.partitions"
	DefaultReplicationFactor     = "default.replication.factor"
	AutoCreateTopics             = "auto.create.topics.enable"
	LogSegmentBytes              = "log.segment.bytes"
	LogRollMs                    = "log.roll.ms"
	LogRetentionMs               = "log.retention.ms"
	LogRetentionBytes            = "log.retention.bytes"
	LogRetentionCheckIntervalMs  = "log.retention.check.interval.ms"
	LogCleanupPolicy             = "log.cleanup.policy"
	LogIndexIntervalBytes        = "log.index.interval.bytes"
	LogIndexSizeMaxBytes         = "log.index.size.max.bytes"
	LogCleanerDeleteRetentionMs  = "log.cleaner.delete.retention.ms"
	LogCleanerMinCompactionLag   = "log.cleaner.min.compaction.lag.ms"
	LogFlushIntervalMessages     = "log.flush.interval.messages"
	LogFlushIntervalMs           = "log.flush.interval.ms"
	LogMessageTimestampType      = "log.message.timestamp.type"
	MessageMaxBytes              = "message.max.bytes"
	SocketRequestMaxBytes        = "socket.request.max.bytes"
	ConnectionsMaxIdleMs         = "connections.max.idle.ms"
	MaxConnections               = "max.connections"
	MaxConnectionsPerIP          = "max.connections.per.ip"
	MaxConnectionsPerIPOverrides = "max.connections.per.ip.overrides"
	QueuedMaxRequestBytes        = "queued.max.request.bytes"
	MinInsyncReplicas            = "min.insync.replicas"
	Fsync                        = "spool.fsync"
	FetchSendfile                = "spool.fetch.sendfile"
	FetchSessionCacheSlots       = "max.incremental.fetch.session.cache.slots"
	OffsetsTopicNumPartitions    = "offsets.topic.num.partitions"
	TxnStateLogNumPartitions     = "transaction.state.log.num.partitions"
	TxnMaxTimeoutMs              = "transaction.max.timeout.ms"
	TxnAbortIntervalMs           = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
	TxnStateLogReplication       = "transaction.state.log.replication.factor"
	TxnStateLogMinISR            = "transaction.state.log.min.isr"
	GroupInitialRebalanceDelay   = "group.initial.rebalance.delay.ms"
	OffsetsRetentionMinutes      = "offsets.retention.minutes"
	PprofListener                = "spool.pprof.listener"
	MetricsListener              = "spool.metrics.listener"
	ConsoleWrite                 = "spool.console.write"
	OTLPEndpoint                 = "spool.otlp.endpoint"
	MemoryLimitBytes             = "spool.memory.limit.bytes"
	LogSummaryIntervalMs         = "spool.log.summary.interval.ms"

	// Cluster mode.
	ZooKeeperSessionTimeoutMs     = "zookeeper.session.timeout.ms"
	ZooKeeperConnectionTimeoutMs  = "zookeeper.connection.timeout.ms"
	BrokerSessionTimeoutMs        = "broker.session.timeout.ms"
	BrokerHeartbeatIntervalMs     = "broker.heartbeat.interval.ms"
	BrokerRack                    = "broker.rack"
	ReplicaLagTimeMaxMs           = "replica.lag.time.max.ms"
	ReplicaFetchWaitMaxMs         = "replica.fetch.wait.max.ms"
	ReplicaFetchMaxBytes          = "replica.fetch.max.bytes"
	ReplicaFetchResponseMaxBytes  = "replica.fetch.response.max.bytes"
	ReplicaFetchBackoffMs         = "replica.fetch.backoff.ms"
	OffsetsTopicReplicationFactor = "offsets.topic.replication.factor"
	UncleanLeaderElection         = "unclean.leader.election.enable"
	ControlledShutdownEnable      = "controlled.shutdown.enable"
	AutoLeaderRebalanceEnable     = "auto.leader.rebalance.enable"
	LeaderImbalanceCheckInterval  = "leader.imbalance.check.interval.seconds"
	LeaderImbalancePerBroker      = "leader.imbalance.per.broker.percentage"

	// Authorization.
	AuthorizerClassName       = "authorizer.class.name"
	SuperUsers                = "super.users"
	AllowEveryoneIfNoACLFound = "allow.everyone.if.no.acl.found"
)

// queuedMaxRequestBytes allows -1 (unbounded, as Kafka) or a positive budget.
func queuedMaxRequestBytes(v string) error {
	n, _ := strconv.ParseInt(v, 10, 64)
	if n == 0 || n < -1 {
		return fmt.Errorf("want -1 (unbounded) or a positive number of bytes")
	}
	return nil
}

// BrokerDefs are every broker property, with Kafka's defaults unless the doc says why not.
var BrokerDefs = []Def{
	{Name: Listeners, Type: String, Default: "127.0.0.1:9092", Check: listenerList,
		Doc: "Address the broker listens on, HOST:PORT (one PLAINTEXT listener), or Kafka's NAME://HOST:PORT list: PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners, or names mapped by listener.security.protocol.map; those named in controller.listener.names are left out; an empty host means every interface."},
	{Name: AdvertisedListeners, Type: String, Nullable: true, Check: listenerList,
		Doc: "Address given to clients in metadata (HOST:PORT or Kafka's list, as listeners); defaults to the listen address."},
	{Name: LogDirs, Type: String, Default: "./data", Doc: "Directory holding the partition logs and broker metadata."},
	{Name: NodeID, Type: Int, Default: "0", Check: atLeast(0), Doc: "This broker's id."},
	{Name: ZooKeeperConnect, Type: String, Nullable: true,
		Doc: "ZooKeeper connect string for cluster mode; empty runs a single node with embedded metadata."},
	{Name: NumPartitions, Type: Int, Default: "1", Check: atLeast(1), Doc: "Partitions of auto-created topics and of CreateTopics with -1."},
	{Name: DefaultReplicationFactor, Type: Int, Default: "1", Check: atLeast(1), Doc: "Replication factor of auto-created topics."},
	{Name: AutoCreateTopics, Type: Boolean, Default: "true", Doc: "Create a topic when a client asks for metadata of, or produces to, an unknown one."},
	{Name: LogSegmentBytes, Type: Int, Default: "1073741824", Check: atLeast(14), Doc: "Maximum size of one segment file."},
	{Name: LogRollMs, Type: Long, Default: "604800000", Check: atLeast(1), Doc: "Maximum age of the active segment before a new one is rolled (Kafka's log.roll.hours=168)."},
	{Name: LogRetentionMs, Type: Long, Default: "604800000", Check: atLeast(-1), Doc: "How long to keep a segment after its last record, -1 for ever."},
	{Name: LogRetentionBytes, Type: Long, Default: "-1", Check: atLeast(-1), Doc: "Maximum partition size before old segments are deleted, -1 for no limit."},
	{Name: LogRetentionCheckIntervalMs, Type: Long, Default: "300000", Check: atLeast(1), Doc: "How often retention is checked."},
	{Name: LogCleanupPolicy, Type: List, Default: "delete", Check: cleanupPolicy, Doc: "delete, compact, or both."},
	{Name: LogIndexIntervalBytes, Type: Int, Default: "4096", Check: atLeast(0), Doc: "Bytes of log between two offset index entries."},
	{Name: LogIndexSizeMaxBytes, Type: Int, Default: "10485760", Check: atLeast(4), Doc: "Maximum size of one offset index file."},
	{Name: LogCleanerDeleteRetentionMs, Type: Long, Default: "86400000", Check: atLeast(0), Doc: "How long tombstones are kept in compacted topics."},
	{Name: LogCleanerMinCompactionLag, Type: Long, Default: "0", Check: atLeast(0), Doc: "Minimum age of a record before compaction may remove it."},
	{Name: LogFlushIntervalMessages, Type: Long, Default: "9223372036854775807", Check: atLeast(1), Doc: "With spool.fsync=interval: fsync after this many messages."},
	{Name: LogFlushIntervalMs, Type: Long, Default: "1000", Check: atLeast(1),
		Doc: "With spool.fsync=interval: fsync at least this often (Kafka leaves this unset; we flush every second so interval mode bounds its loss window)."},
	{Name: LogMessageTimestampType, Type: String, Default: "CreateTime", Check: oneOf("CreateTime", "LogAppendTime"), Doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches on append."},
	{Name: MessageMaxBytes, Type: Int, Default: "1048588", Check: atLeast(0), Doc: "Largest record batch the broker accepts."},
	{Name: SocketRequestMaxBytes, Type: Int, Default: "104857600", Check: atLeast(1), Doc: "Largest request; larger frames close the connection before anything is allocated."},
	{Name: ConnectionsMaxIdleMs, Type: Long, Default: "600000", Check: atLeast(1), Doc: "Idle connections are closed after this long."},
	{Name: MaxConnections, Type: Int, Default: "2147483647", Check: atLeast(0),
		Doc: "Connections the broker keeps open; one more is closed on accept (the inter-broker listener in cluster mode is exempt). listener.name.<listener>.max.connections caps one listener, the inter-broker one included."},
	{Name: MaxConnectionsPerIP, Type: Int, Default: "2147483647", Check: atLeast(0),
		Doc: "Connections one client address may keep open; one more is closed on accept."},
	{Name: MaxConnectionsPerIPOverrides, Type: String, Default: "",
		Doc: "Per-address exceptions to max.connections.per.ip, Kafka's host:count,host2:count (hostnames resolved at startup)."},
	{Name: QueuedMaxRequestBytes, Type: Long, Default: "268435456", Check: queuedMaxRequestBytes,
		Doc: "Memory that requests larger than the 64 KiB read buffer may hold while being read and handled; a reader waits for it (up to connections.max.idle.ms) rather than allocate a frame's declared size up front. -1: unbounded (Kafka's default; ours is 256 MiB so that half-sent requests cannot exhaust memory). At least socket.request.max.bytes."},
	{Name: MinInsyncReplicas, Type: Int, Default: "1", Check: atLeast(1), Doc: "Replicas that must hold a write for acks=all to succeed."},
	{Name: Fsync, Type: String, Default: "always", Check: oneOf("always", "interval", "never"),
		Doc: "always: fsync before acknowledging (group commit, the default: nothing acknowledged is lost); interval: by log.flush.interval.*; never: leave it to the OS (Kafka's default behaviour)."},
	{Name: FetchSendfile, Type: Boolean, Default: "true", Doc: "Serve fetches with sendfile (zero copy); false uses pooled read+write, faster on loopback."},
	{Name: FetchSessionCacheSlots, Type: Int, Default: "1000", Check: atLeast(0),
		Doc: "Incremental fetch sessions (KIP-227) the broker keeps; 0 answers every fetch without a session."},
	{Name: PprofListener, Type: String, Nullable: true, Check: hostPort,
		Doc: "HOST:PORT for Go's pprof profiles over HTTP (/debug/pprof/); empty: off."},
	{Name: MetricsListener, Type: String, Nullable: true, Check: hostPort,
		Doc: "HOST:PORT of the operations HTTP listener: /metrics (Prometheus), /healthz, /readyz and the web console (/console/); empty: off (--metrics-listen)."},
	{Name: ConsoleWrite, Type: Boolean, Default: "false",
		Doc: "Lets the web console act (create, delete and configure topics, reset group offsets) on a broker without SASL users; with SASL users the console signs people in with them and the ACLs decide, whatever this says. false: a console without authentication is read-only."},
	{Name: OTLPEndpoint, Type: String, Nullable: true, Check: httpURL,
		Doc: "http(s)://HOST:PORT of an OTLP/HTTP trace receiver (an OpenTelemetry collector): the broker exports a span per request to its /v1/traces; empty: off, at no cost (--otlp-endpoint)."},
	{Name: MemoryLimitBytes, Type: Long, Default: "67108864", Check: atLeast(0),
		Doc: "Soft limit for the Go heap (GOMEMLIMIT); the collector works harder near it, which keeps RSS bounded under load. 0: no limit. The GOMEMLIMIT environment variable wins."},
	{Name: LogSummaryIntervalMs, Type: Long, Default: "30000", Check: atLeast(0),
		Doc: "Repeated info lines are logged once per interval: an authorization denial once per principal, operation and resource, a produce to a missing topic once per topic, each with the repeats left out; client connections (debug one by one) as one summary line. 0: every denial and refusal logged, no summary."},
	{Name: OffsetsTopicNumPartitions, Type: Int, Default: "50", Check: atLeast(1), Doc: "Partitions of __consumer_offsets."},
	{Name: TxnStateLogNumPartitions, Type: Int, Default: "50", Check: atLeast(1), Doc: "Partitions of __transaction_state (compacted), created on the first transactional request."},
	{Name: TxnMaxTimeoutMs, Type: Int, Default: "900000", Check: atLeast(1), Doc: "The longest transaction.timeout.ms a producer may ask for (else INVALID_TRANSACTION_TIMEOUT)."},
	{Name: TxnAbortIntervalMs, Type: Int, Default: "10000", Check: atLeast(1), Doc: "How often the transaction coordinator aborts transactions past their timeout (fencing their producers)."},
	{Name: TxnStateLogReplication, Type: Short, Default: "3", Check: atLeast(1), Doc: "Replication factor of __transaction_state, capped by the live brokers at its creation."},
	{Name: TxnStateLogMinISR, Type: Int, Default: "2", Check: atLeast(1), Doc: "min.insync.replicas of __transaction_state (capped by its replication factor): a transaction's decision is written to at least this many replicas."},
	{Name: GroupInitialRebalanceDelay, Type: Int, Default: "3000", Check: atLeast(0), Doc: "Delay before the first rebalance of a new group."},
	{Name: OffsetsRetentionMinutes, Type: Int, Default: "10080", Check: atLeast(1), Doc: "How long committed offsets of an empty group are kept."},

	// Cluster mode (zookeeper.connect set).
	{Name: ZooKeeperSessionTimeoutMs, Type: Int, Default: "18000", Check: atLeast(1), Doc: "ZooKeeper session timeout; failure detection does not wait for it (see broker.session.timeout.ms)."},
	{Name: ZooKeeperConnectionTimeoutMs, Type: Int, Default: "18000", Check: atLeast(1), Doc: "How long startup waits for a ZooKeeper session."},
	{Name: BrokerSessionTimeoutMs, Type: Int, Default: "3000", Check: atLeast(1),
		Doc: "A broker that answers no liveness probe of the controller for this long is taken for dead and its leaderships move (KRaft's name; Spool's default is lower than Kafka's 9000 because a killed broker is detected at once by its closed connection, and this bounds only a paused one)."},
	{Name: BrokerHeartbeatIntervalMs, Type: Int, Default: "100", Check: atLeast(1), Doc: "Interval of the controller's liveness probes of each broker."},
	{Name: BrokerRack, Type: String, Nullable: true, Doc: "This broker's rack; replicas of a partition are spread over racks."},
	{Name: ReplicaLagTimeMaxMs, Type: Long, Default: "30000", Check: atLeast(1), Doc: "A follower that has not caught up with its leader for this long leaves the ISR."},
	{Name: ReplicaFetchWaitMaxMs, Type: Int, Default: "500", Check: atLeast(0), Doc: "Longest wait of a follower's fetch for new data."},
	{Name: ReplicaFetchMaxBytes, Type: Int, Default: "1048576", Check: atLeast(0), Doc: "Bytes a follower fetches per partition per request."},
	{Name: ReplicaFetchResponseMaxBytes, Type: Int, Default: "10485760", Check: atLeast(0), Doc: "Bytes a follower fetches per request."},
	{Name: ReplicaFetchBackoffMs, Type: Int, Default: "100", Check: atLeast(0), Doc: "Pause of a follower's fetcher after an error (Kafka: 1000)."},
	{Name: OffsetsTopicReplicationFactor, Type: Short, Default: "3", Check: atLeast(1), Doc: "Replication factor of __consumer_offsets, capped by the live brokers at its creation."},
	{Name: UncleanLeaderElection, Type: Boolean, Default: "false", Doc: "Elect a leader outside the ISR when no ISR member is alive (may lose acknowledged data)."},
	{Name: ControlledShutdownEnable, Type: Boolean, Default: "true", Doc: "On SIGTERM, move this broker's leaderships away before stopping."},
	{Name: AutoLeaderRebalanceEnable, Type: Boolean, Default: "true", Doc: "The controller puts preferred leaders back in the lead when a broker's share of misplaced leaderships passes leader.imbalance.per.broker.percentage."},
	{Name: LeaderImbalanceCheckInterval, Type: Long, Default: "300", Check: atLeast(1), Doc: "Seconds between the controller's leader imbalance checks."},
	{Name: LeaderImbalancePerBroker, Type: Int, Default: "10", Check: atLeast(0), Doc: "Percentage of a broker's preferred leaderships held elsewhere above which they are moved back."},

	// Authorization (authorizer.class.name is among Kafka's properties, kafka.go).
	{Name: SuperUsers, Type: String, Nullable: true, Doc: "Principals allowed everything whatever the ACLs, separated by ';' (User:admin;User:broker)."},
	{Name: AllowEveryoneIfNoACLFound, Type: Boolean, Default: "false", Doc: "With the authorizer on, allow every principal on a resource no ACL applies to."},
}

// TopicDef is a topic-level property and the broker property that supplies its default.
type TopicDef struct {
	Name   string
	Broker string // the broker property whose value is the default; "" for a topic-only config
	// Default is a topic-only config's default (Broker "").
	Default string
	Type    Type
	Check   func(v string) error
	Doc     string
}

// TopicDefs are every topic-level config of Kafka 3.9, sorted by name. Each is accepted by
// CreateTopics and IncrementalAlterConfigs and reported by DescribeConfigs; a Doc that starts
// with "No effect in Spool" says why the value is only stored.
var TopicDefs = []TopicDef{
	{Name: "cleanup.policy", Broker: LogCleanupPolicy, Type: List, Check: cleanupPolicy, Doc: "delete, compact, or both."},
	{Name: "compression.gzip.level", Broker: "compression.gzip.level", Type: Int, Check: gzipLevel,
		Doc: "gzip level the leader recompresses at when compression.type is gzip: 1 (fastest) to 9 (smallest), or -1 for deflate's default (6)."},
	{Name: "compression.lz4.level", Broker: "compression.lz4.level", Type: Int, Check: between(1, 17),
		Doc: "LZ4 level the leader recompresses at when compression.type is lz4: 9 (the default) is LZ4's fast mode, as in Kafka; 1 to 8 and 10 to 17 its high-compression mode, deeper as the level grows."},
	{Name: "compression.type", Broker: "compression.type", Type: String, Check: oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
		Doc: "producer keeps each batch as the producer compressed it; uncompressed, gzip, snappy, lz4 or zstd makes the leader recompress (or decompress) every batch produced with another codec, as Kafka does."},
	{Name: "compression.zstd.level", Broker: "compression.zstd.level", Type: Int, Check: between(-131072, 22),
		Doc: "zstd level the leader recompresses at when compression.type is zstd: -131072 to 22, 3 by default; Spool's encoder runs levels below 3 as its fastest, 3-5 default, 6-9 better, 10-22 best."},
	{Name: "delete.retention.ms", Broker: LogCleanerDeleteRetentionMs, Type: Long, Check: atLeast(0), Doc: "Tombstone retention for compacted topics."},
	{Name: "file.delete.delay.ms", Broker: "log.segment.delete.delay.ms", Type: Long, Check: atLeast(0),
		Doc: "No effect in Spool: segments past retention are deleted at once."},
	{Name: "flush.messages", Broker: LogFlushIntervalMessages, Type: Long, Check: atLeast(1), Doc: "fsync interval in messages (spool.fsync=interval)."},
	{Name: "flush.ms", Broker: LogFlushIntervalMs, Type: Long, Check: atLeast(1), Doc: "fsync interval in ms (spool.fsync=interval)."},
	{Name: "follower.replication.throttled.replicas", Type: List, Check: throttledReplicas,
		Doc: "No effect in Spool: replication is not throttled."},
	{Name: "index.interval.bytes", Broker: LogIndexIntervalBytes, Type: Int, Check: atLeast(0), Doc: "Bytes between index entries."},
	{Name: "leader.replication.throttled.replicas", Type: List, Check: throttledReplicas,
		Doc: "No effect in Spool: replication is not throttled."},
	{Name: "local.retention.bytes", Broker: "log.local.retention.bytes", Type: Long, Check: atLeast(-2),
		Doc: "No effect in Spool: it has no tiered storage, so retention.bytes is the only size limit."},
	{Name: "local.retention.ms", Broker: "log.local.retention.ms", Type: Long, Check: atLeast(-2),
		Doc: "No effect in Spool: it has no tiered storage, so retention.ms is the only time limit."},
	{Name: "max.compaction.lag.ms", Broker: "log.cleaner.max.compaction.lag.ms", Type: Long, Check: atLeast(1),
		Doc: "A segment not yet compacted whose newest record is this old is compacted whatever min.cleanable.dirty.ratio says."},
	{Name: "max.message.bytes", Broker: MessageMaxBytes, Type: Int, Check: atLeast(0), Doc: "Largest record batch."},
	{Name: "message.downconversion.enable", Broker: "log.message.downconversion.enable", Type: Boolean,
		Doc: "No effect in Spool: it serves only the v2 record format and never down-converts."},
	{Name: "message.format.version", Broker: "log.message.format.version", Type: String, Check: messageFormatVersion,
		Doc: "No effect in Spool: it always stores the v2 record format (Kafka ignores it too from 3.0-IV1)."},
	{Name: "message.timestamp.after.max.ms", Broker: "log.message.timestamp.after.max.ms", Type: Long, Check: atLeast(0),
		Doc: "With CreateTime, a produced record whose timestamp is more than this ahead of the broker's clock is refused with INVALID_TIMESTAMP."},
	{Name: "message.timestamp.before.max.ms", Broker: "log.message.timestamp.before.max.ms", Type: Long, Check: atLeast(0),
		Doc: "With CreateTime, a produced record whose timestamp is more than this behind the broker's clock is refused with INVALID_TIMESTAMP."},
	{Name: "message.timestamp.difference.max.ms", Broker: "log.message.timestamp.difference.max.ms", Type: Long, Check: atLeast(0),
		Doc: "Deprecated by Kafka: the bound in both directions where message.timestamp.before.max.ms or after.max.ms is left at its default."},
	{Name: "message.timestamp.type", Broker: LogMessageTimestampType, Type: String, Check: oneOf("CreateTime", "LogAppendTime"), Doc: "CreateTime or LogAppendTime."},
	{Name: "min.cleanable.dirty.ratio", Broker: "log.cleaner.min.cleanable.ratio", Type: Double, Check: ratio,
		Doc: "Share of not yet compacted bytes at which the background cleaner compacts a compacted topic."},
	{Name: "min.compaction.lag.ms", Broker: LogCleanerMinCompactionLag, Type: Long, Check: atLeast(0), Doc: "Minimum age before compaction."},
	{Name: "min.insync.replicas", Broker: MinInsyncReplicas, Type: Int, Check: atLeast(1), Doc: "Replicas needed for acks=all."},
	{Name: "preallocate", Broker: "log.preallocate", Type: Boolean,
		Doc: "No effect in Spool: segment files grow as they are written."},
	{Name: "remote.log.copy.disable", Type: Boolean, Default: "false",
		Doc: "No effect in Spool: it has no tiered storage."},
	{Name: "remote.log.delete.on.disable", Type: Boolean, Default: "false",
		Doc: "No effect in Spool: it has no tiered storage."},
	{Name: "remote.storage.enable", Type: Boolean, Default: "false", Check: noRemoteStorage,
		Doc: "Spool has no tiered storage: only false is accepted, as on a Kafka broker without remote.log.storage.system.enable."},
	{Name: "retention.bytes", Broker: LogRetentionBytes, Type: Long, Check: atLeast(-1), Doc: "Partition size limit, -1 for none."},
	{Name: "retention.ms", Broker: LogRetentionMs, Type: Long, Check: atLeast(-1), Doc: "How long to keep data, -1 for ever."},
	{Name: "segment.bytes", Broker: LogSegmentBytes, Type: Int, Check: atLeast(14), Doc: "Segment file size."},
	{Name: "segment.index.bytes", Broker: LogIndexSizeMaxBytes, Type: Int, Check: atLeast(4), Doc: "Offset index size."},
	{Name: "segment.jitter.ms", Broker: "log.roll.jitter.ms", Type: Long, Check: atLeast(0),
		Doc: "Each segment rolls up to this much (random, drawn per segment) before segment.ms, so that partitions do not roll together."},
	{Name: "segment.ms", Broker: LogRollMs, Type: Long, Check: atLeast(1), Doc: "Maximum segment age before a roll."},
	{Name: "unclean.leader.election.enable", Broker: UncleanLeaderElection, Type: Boolean,
		Doc: "Allow a leader outside the ISR when no ISR member is alive (may lose acknowledged data); cluster mode only."},
}

// LookupBroker finds a broker property definition: Spool's own, else Kafka's.
func LookupBroker(name string) *Def {
	for i := range BrokerDefs {
		if BrokerDefs[i].Name == name {
			return &BrokerDefs[i]
		}
	}
	for i := range kafkaDefs {
		if kafkaDefs[i].Name == name {
			return &kafkaDefs[i]
		}
	}
	return nil
}

// AllBrokerDefs are BrokerDefs followed by the Kafka properties they do not define.
func AllBrokerDefs() []Def {
	out := append([]Def(nil), BrokerDefs...)
	for _, d := range kafkaDefs {
		if !slices.ContainsFunc(BrokerDefs, func(b Def) bool { return b.Name == d.Name }) {
			out = append(out, d)
		}
	}
	return out
}

// LookupTopic finds a topic property definition.
func LookupTopic(name string) *TopicDef {
	for i := range TopicDefs {
		if TopicDefs[i].Name == name {
			return &TopicDefs[i]
		}
	}
	return nil
}

// ValidateTopic checks one topic-level override.
func ValidateTopic(name, value string) error {
	d := LookupTopic(name)
	if d == nil {
		return fmt.Errorf("unknown topic config %q", name)
	}
	def := Def{Name: name, Type: d.Type, Check: d.Check}
	return def.Parse(value)
}
