// Package metrics owns the broker's one OpenTelemetry meter and its Prometheus export.
//
// The server records per-request instruments through the methods of *Metrics (the dispatcher
// and the produce and fetch paths); storage, replication and the cluster view are read by
// observable instruments whose callbacks the server registers with snapshot functions
// (Partitions, Cluster, Storage), so nothing on a hot path keeps metric state of its own.
//
// Metrics off is a nil *Metrics: every method is a no-op on nil, so callers need no checks
// except to skip work that only feeds a metric (reading the clock for a latency).
//
// # Cost
//
// Attribute sets for each API key and version are built once in New, topic attribute sets
// once per topic, so recording a request allocates nothing. The HTTP handlers (Handler) serve
// /metrics, /healthz and /readyz on the listener the server opens for spool.metrics.listener.
//
// Names follow OpenTelemetry's semantic conventions where one exists (rpc.server.call.duration
// with rpc.method, messaging.destination.name, messaging.destination.partition.id) and are
// spool.* otherwise; the Prometheus exporter turns dots into underscores and adds unit and
// _total suffixes (rpc_server_call_duration_seconds, spool_topic_bytes_in_total: a name that already says bytes gets no unit suffix).
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Attribute keys.
const (
	attrMethod    = attribute.Key("rpc.method")
	attrVersion   = attribute.Key("kafka.api.version")
	attrError     = attribute.Key("error.type")
	attrTopic     = attribute.Key("messaging.destination.name")
	attrPartition = attribute.Key("messaging.destination.partition.id")
	attrPhase     = attribute.Key("spool.request.phase")
	attrListener  = attribute.Key("spool.listener")
	attrMechanism = attribute.Key("spool.mechanism")
)

// Request phases: the split of a request's time, as Kafka splits TotalTimeMs.
const (
	PhaseQueue  = "queue"  // frame read → handler started (Kafka's RequestQueueTimeMs: here the header and body decode)
	PhaseLocal  = "local"  // the handler's synchronous part (LocalTimeMs)
	PhaseRemote = "remote" // waiting for fsync, replication or a long poll's data (RemoteTimeMs: purgatory)
	PhaseSend   = "send"   // reply ready → written: behind earlier replies of the connection, then the write (ResponseQueueTimeMs + ResponseSendTimeMs)
)

var phases = [...]string{PhaseQueue, PhaseLocal, PhaseRemote, PhaseSend}

// latencyBuckets are the request latency histogram's bounds in seconds: 100µs to 10s.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Metrics is the broker's meter and its instruments. A nil *Metrics records nothing.
type Metrics struct {
	provider *sdkmetric.MeterProvider
	registry *prometheus.Registry
	meter    metric.Meter

	duration  metric.Float64Histogram
	phase     metric.Float64Histogram
	errors    metric.Int64Counter
	bytesIn   metric.Int64Counter
	bytesOut  metric.Int64Counter
	recordsIn metric.Int64Counter
	conns     metric.Int64UpDownCounter
	authFails metric.Int64Counter
	// electionTime and zkLatency are recorded through the process-wide events (events.go).
	electionTime metric.Float64Histogram
	zkLatency    metric.Float64Histogram
	fsyncTime    metric.Float64Histogram

	// apis[key][version-min] is the request attribute set of that API and version, as the
	// one-element slice Record takes (a slice made per call would be allocated per call).
	apis   [][][]metric.RecordOption
	minVer []int16
	// phaseAttrs[key][i] is the attribute set of API key and phases[i].
	phaseAttrs [][len(phases)][]metric.RecordOption
	// errs and topics cache attribute sets: error code → option, topic → option.
	errs   sync.Map
	topics sync.Map
}

// New makes the meter, its instruments and a Prometheus registry they are exported to.
func New() (*Metrics, error) {
	m := &Metrics{registry: prometheus.NewRegistry()}
	exp, err := otelprom.New(otelprom.WithRegisterer(m.registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	m.provider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	m.meter = m.provider.Meter("github.com/spoolmq/spool/broker")
	b := &builder{meter: m.meter}
	counter := b.counter
	var errs []error
	m.duration, err = m.meter.Float64Histogram("rpc.server.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Kafka requests by API (rpc.method) and version: time from the request read to its response written."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	errs = append(errs, err)
	m.phase, err = m.meter.Float64Histogram("spool.request.phase.duration", metric.WithUnit("s"),
		metric.WithDescription("Kafka requests' time by API (rpc.method) and phase (spool.request.phase): queue (decode), local (the handler), remote (waiting for fsync, replicas or data), send (behind earlier replies, then the write); they add up to rpc.server.call.duration."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	errs = append(errs, err)
	m.electionTime, err = m.meter.Float64Histogram("spool.controller.leader_election.duration", metric.WithUnit("s"),
		metric.WithDescription("Leader elections this broker ran as the controller: decision to partition state written to ZooKeeper (cluster mode)."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	errs = append(errs, err)
	m.zkLatency, err = m.meter.Float64Histogram("spool.zookeeper.request.duration", metric.WithUnit("s"),
		metric.WithDescription("ZooKeeper requests: sent to answered (cluster mode)."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	errs = append(errs, err)
	m.fsyncTime, err = m.meter.Float64Histogram("spool.storage.fsync.duration", metric.WithUnit("s"),
		metric.WithDescription("fsync rounds of the partition logs, each log's flush (Kafka's LogFlushRateAndTimeMs)."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	errs = append(errs, err)
	m.errors = counter("spool.request.errors", "{error}", "Error codes in responses, by API and Kafka error name (error.type).")
	m.bytesIn = counter("spool.topic.bytes.in", "By", "Record batch bytes appended by producers, by topic.")
	m.bytesOut = counter("spool.topic.bytes.out", "By", "Record batch bytes sent to fetchers (consumers and followers), by topic.")
	m.authFails = counter("spool.authentication.failures", "{failure}", "Failed authentications, by listener (spool.listener) and mechanism (spool.mechanism): a SASL mechanism's name, or SSL for a TLS handshake that failed (no or a bad client certificate under ssl.client.auth=required, a bad protocol version, garbage).")
	m.recordsIn = counter("spool.topic.records.in", "{record}", "Records appended by producers, by topic.")
	m.conns, err = m.meter.Int64UpDownCounter("spool.connections.active", metric.WithUnit("{connection}"),
		metric.WithDescription("Open client connections."))
	errs = append(errs, err)
	if err := errors.Join(append(errs, b.errs...)...); err != nil {
		return nil, fmt.Errorf("creating instruments: %w", err)
	}
	m.precomputeAPIs()
	addSink(m)
	return m, nil
}

func (m *Metrics) precomputeAPIs() {
	maxKey := int16(0)
	for _, a := range wire.APIs {
		maxKey = max(maxKey, a.Key)
	}
	m.apis = make([][][]metric.RecordOption, maxKey+1)
	m.minVer = make([]int16, maxKey+1)
	m.phaseAttrs = make([][len(phases)][]metric.RecordOption, maxKey+1)
	for _, a := range wire.APIs {
		m.minVer[a.Key] = a.MinVersion
		for i, ph := range phases {
			m.phaseAttrs[a.Key][i] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrMethod.String(a.Name), attrPhase.String(ph)))}
		}
		for v := a.MinVersion; v <= a.MaxVersion; v++ {
			set := attribute.NewSet(attrMethod.String(a.Name), attrVersion.Int(int(v)))
			m.apis[a.Key] = append(m.apis[a.Key], []metric.RecordOption{metric.WithAttributeSet(set)})
		}
	}
}

// apiAttrs is the attribute set of a request, or nil for a key or version outside the window.
func (m *Metrics) apiAttrs(key, version int16) []metric.RecordOption {
	if key < 0 || int(key) >= len(m.apis) {
		return nil
	}
	i := int(version - m.minVer[key])
	if i < 0 || i >= len(m.apis[key]) {
		return nil
	}
	return m.apis[key][i]
}

// RequestTimes are the instants of one request's life, in order.
type RequestTimes struct {
	Read     time.Time // the frame was read
	Handled  time.Time // the handler started
	Returned time.Time // the handler's synchronous part returned
	Ready    time.Time // the reply was complete (Returned unless it waited)
	Written  time.Time // the reply was written (or dropped: acks=0)
}

// Request records one request of API key at version: its total time and its phases.
func (m *Metrics) Request(key, version int16, t RequestTimes) {
	if m == nil {
		return
	}
	a := m.apiAttrs(key, version)
	if a == nil {
		return
	}
	if t.Handled.IsZero() { // answered before a handler ran (an unsupported ApiVersions)
		t.Handled, t.Returned, t.Ready = t.Read, t.Read, t.Read
	}
	if t.Ready.Before(t.Returned) { // completed on another goroutine before the handler returned
		t.Ready = t.Returned
	}
	ctx := context.Background()
	m.duration.Record(ctx, t.Written.Sub(t.Read).Seconds(), a...)
	ph := &m.phaseAttrs[key]
	m.phase.Record(ctx, t.Handled.Sub(t.Read).Seconds(), ph[0]...)
	m.phase.Record(ctx, t.Returned.Sub(t.Handled).Seconds(), ph[1]...)
	m.phase.Record(ctx, t.Ready.Sub(t.Returned).Seconds(), ph[2]...)
	m.phase.Record(ctx, t.Written.Sub(t.Ready).Seconds(), ph[3]...)
}

type errKey struct{ key, code int16 }

// Error counts one error code (non-zero) in a response of API key.
func (m *Metrics) Error(key, code int16) {
	if m == nil || code == 0 {
		return
	}
	k := errKey{key, code}
	opt, ok := m.errs.Load(k)
	if !ok {
		name := strconv.Itoa(int(code))
		var we *wire.Error
		if errors.As(wire.ErrorForCode(code), &we) {
			name = we.Name
		}
		method := strconv.Itoa(int(key))
		if a := wire.LookupAPI(key); a != nil {
			method = a.Name
		}
		opt, _ = m.errs.LoadOrStore(k, []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attrMethod.String(method), attrError.String(name)))})
	}
	m.errors.Add(context.Background(), 1, opt.([]metric.AddOption)...)
}

func (m *Metrics) topic(name string) []metric.AddOption {
	opt, ok := m.topics.Load(name)
	if !ok {
		opt, _ = m.topics.LoadOrStore(name, []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attrTopic.String(name)))})
	}
	return opt.([]metric.AddOption)
}

// ForgetTopic drops a deleted topic's cached attribute set.
func (m *Metrics) ForgetTopic(name string) {
	if m != nil {
		m.topics.Delete(name)
	}
}

// Produced records a batch of records and bytes appended to topic by a producer.
func (m *Metrics) Produced(topic string, bytes, records int64) {
	if m == nil {
		return
	}
	a := m.topic(topic)
	m.bytesIn.Add(context.Background(), bytes, a...)
	m.recordsIn.Add(context.Background(), records, a...)
}

// Fetched records bytes of topic sent in a fetch response.
func (m *Metrics) Fetched(topic string, bytes int64) {
	if m == nil || bytes == 0 {
		return
	}
	m.bytesOut.Add(context.Background(), bytes, m.topic(topic)...)
}

// Fsync records one log flush's fsync time.
func (m *Metrics) Fsync(took time.Duration) {
	if m != nil {
		m.fsyncTime.Record(context.Background(), took.Seconds())
	}
}

// AuthenticationFailed counts one failed authentication on listener with mechanism (a SASL
// mechanism, or "SSL" for a failed TLS handshake). Called once per refused connection, never on
// the request path.
func (m *Metrics) AuthenticationFailed(listener, mechanism string) {
	if m != nil {
		m.authFails.Add(context.Background(), 1, metric.WithAttributeSet(attribute.NewSet(attrListener.String(listener), attrMechanism.String(mechanism))))
	}
}

// Connection records a connection opened (+1) or closed (-1).
func (m *Metrics) Connection(delta int64) {
	if m != nil {
		m.conns.Add(context.Background(), delta)
	}
}

// Shutdown stops the meter provider.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	removeSink(m)
	return m.provider.Shutdown(ctx)
}

// Handler serves /metrics (Prometheus text), /healthz (the process is alive) and /readyz
// (ready answers nil: 200, else 503 with the reason).
func (m *Metrics) Handler(ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// ResponseErrors counts every non-zero ErrorCode field in resp, a generated response of API
// key, nested ones included (Kafka's per-response error counts). Types are inspected once;
// afterwards only the fields on a path to an error code are visited.
func (m *Metrics) ResponseErrors(key int16, resp any) {
	if m == nil || resp == nil {
		return
	}
	m.walkErrors(key, reflect.ValueOf(resp))
}

func (m *Metrics) walkErrors(key int16, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			m.walkErrors(key, v.Elem())
		}
	case reflect.Slice:
		if !planFor(v.Type().Elem()).has {
			return
		}
		for i := range v.Len() {
			m.walkErrors(key, v.Index(i))
		}
	case reflect.Struct:
		p := planFor(v.Type())
		for _, i := range p.codes {
			m.Error(key, int16(v.Field(i).Int()))
		}
		for _, i := range p.nested {
			m.walkErrors(key, v.Field(i))
		}
	}
}

// errorPlan says where a type's error codes are: for a struct, the indexes of its ErrorCode
// field and of the fields that may hold more.
type errorPlan struct {
	has    bool // a value of the type may contain an ErrorCode field
	codes  []int
	nested []int
}

// errorPlans memoizes planFor by type.
var errorPlans sync.Map

func planFor(t reflect.Type) *errorPlan {
	if p, ok := errorPlans.Load(t); ok {
		return p.(*errorPlan)
	}
	errorPlans.Store(t, &errorPlan{}) // a recursive type sees "none" while it is being inspected
	p := &errorPlan{}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		p.has = planFor(t.Elem()).has
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			switch {
			case !f.IsExported():
			case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
				p.codes = append(p.codes, i)
			case planFor(f.Type).has:
				p.nested = append(p.nested, i)
			}
		}
		p.has = len(p.codes)+len(p.nested) > 0
	}
	errorPlans.Store(t, p)
	return p
}

// builder makes instruments of one meter and keeps their errors, so that a registration reads
// as a list of names, units and descriptions and fails once, at the end (see err).
type builder struct {
	meter metric.Meter
	errs  []error
}

// gauge is an int64 observable gauge; unit "" gives none (0/1 gauges: Prometheus would add
// _ratio for "1").
func (b *builder) gauge(name, unit, desc string) metric.Int64ObservableGauge {
	opts := []metric.Int64ObservableGaugeOption{metric.WithDescription(desc)}
	if unit != "" {
		opts = append(opts, metric.WithUnit(unit))
	}
	g, err := b.meter.Int64ObservableGauge(name, opts...)
	b.errs = append(b.errs, err)
	return g
}

// observedCounter is an int64 observable counter, read at each collection.
func (b *builder) observedCounter(name, unit, desc string) metric.Int64ObservableCounter {
	c, err := b.meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.errs = append(b.errs, err)
	return c
}

// counter is an int64 counter added to on the hot path.
func (b *builder) counter(name, unit, desc string) metric.Int64Counter {
	c, err := b.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.errs = append(b.errs, err)
	return c
}

// err is nil when every instrument was made, else the failures, naming what was being made.
func (b *builder) err(what string) error {
	if err := errors.Join(b.errs...); err != nil {
		return fmt.Errorf("creating %s: %w", what, err)
	}
	return nil
}
