// Package console is the broker's built-in web console on the operations listener
// (/console/): the cluster, topics with their partitions, leaders, replicas, ISR and offsets,
// consumer groups with members, assignments and lag, live charts of throughput and request
// latency computed in the browser from the broker's own /metrics; a message browser per
// partition (from an offset, a timestamp or the end, filtered by key or value text, shown as
// text, JSON or hex); actions (topic create, delete and config edit, group offset reset); and
// the ACLs and SASL users.
//
// The page is plain HTML, CSS and JavaScript embedded in the binary (no build step, no CDN:
// the Content-Security-Policy lets it load nothing but its own origin), and renders all data
// as text nodes. This package holds the page and the JSON documents' types; the server
// answers /console/api/ (server/console_api.go) from the metadata image, the partition
// manager, the group coordinator and the authorizer on request, behind the broker's own
// sign-in (HTTP Basic against its SASL users) and ACLs: the console costs nothing while
// nobody looks at it. Without SASL users it is read-only unless spool.console.write=true.
package console

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"time"
)

//go:embed static
var static embed.FS

// State is the document /console/api/state serves.
type State struct {
	Broker  BrokerInfo `json:"broker"`
	Brokers []Broker   `json:"brokers"`
	Topics  []Topic    `json:"topics"`
	Groups  []Group    `json:"groups"`
}

// BrokerInfo describes the broker serving the page.
type BrokerInfo struct {
	NodeID     int32     `json:"nodeId"`
	Controller int32     `json:"controller"`
	Mode       string    `json:"mode"`
	Version    string    `json:"version"`
	Started    time.Time `json:"started"`
	Now        time.Time `json:"now"`
}

// Broker is one live broker of the cluster.
type Broker struct {
	NodeID int32   `json:"nodeId"`
	Host   string  `json:"host"`
	Port   int32   `json:"port"`
	Rack   *string `json:"rack,omitempty"`
}

// Topic is one topic and its partitions; Configs holds the topic's overrides only.
type Topic struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Internal   bool              `json:"internal"`
	Partitions []Partition       `json:"partitions"`
	Configs    map[string]string `json:"configs"`
}

// Partition is one partition as the metadata image says it; the offsets are this broker's
// replica's, absent (Local false) where it has none.
type Partition struct {
	Index          int32   `json:"index"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leaderEpoch"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Offline        []int32 `json:"offline"`
	Local          bool    `json:"local"`
	LogStartOffset int64   `json:"logStartOffset"`
	LogEndOffset   int64   `json:"logEndOffset"`
	HighWatermark  int64   `json:"highWatermark"`
}

// Group is one consumer group coordinated by this broker.
type Group struct {
	ID           string        `json:"id"`
	State        string        `json:"state"`
	ProtocolType string        `json:"protocolType"`
	Protocol     string        `json:"protocol"`
	Generation   int32         `json:"generation"`
	Members      []Member      `json:"members"`
	Offsets      []GroupOffset `json:"offsets"`
	Lag          int64         `json:"lag"` // the sum over Offsets with a known end
}

// Member is one group member with its assignment decoded (consumer groups only).
type Member struct {
	MemberID   string            `json:"memberId"`
	InstanceID *string           `json:"instanceId,omitempty"`
	ClientID   string            `json:"clientId"`
	ClientHost string            `json:"clientHost"`
	Assignment []TopicPartitions `json:"assignment"`
}

// TopicPartitions is a topic and some of its partitions.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// GroupOffset is a group's committed offset of one partition and, where this broker has a
// replica, the partition's high watermark and the lag (HasEnd).
type GroupOffset struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Committed     int64  `json:"committed"`
	HighWatermark int64  `json:"highWatermark"`
	Lag           int64  `json:"lag"`
	HasEnd        bool   `json:"hasEnd"`
}

// Record is one record as the message browser shows it. Key, Value and header values are the
// raw bytes (base64 in JSON, null when null); the page renders them as text, JSON or hex.
type Record struct {
	Offset    int64          `json:"offset"`
	Timestamp int64          `json:"timestamp"`
	Key       []byte         `json:"key"`
	Value     []byte         `json:"value"`
	Headers   []RecordHeader `json:"headers"`
}

// RecordHeader is one record header.
type RecordHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Records is one page of the message browser: the records found from Start, where to go on
// (Next, the offset after the last one scanned), and the partition's offsets as the read saw
// them. Truncated says a bound (records, bytes returned or bytes scanned) ended the page before
// the read limit; Isolation is read_committed or read_uncommitted.
type Records struct {
	Topic         string   `json:"topic"`
	Partition     int32    `json:"partition"`
	Isolation     string   `json:"isolation"`
	Start         int64    `json:"start"`
	Next          int64    `json:"next"`
	LogStart      int64    `json:"logStartOffset"`
	HighWatermark int64    `json:"highWatermark"`
	LastStable    int64    `json:"lastStableOffset"`
	Scanned       int64    `json:"scannedBytes"`
	Truncated     bool     `json:"truncated"`
	Records       []Record `json:"records"`
}

// ACL is one ACL binding with Kafka's names (Topic, LITERAL, Read, ALLOW, ...).
type ACL struct {
	ResourceType string `json:"resourceType"`
	ResourceName string `json:"resourceName"`
	PatternType  string `json:"patternType"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

// User is one SASL user: PLAIN users come from the listeners' JAAS configs, SCRAM users
// from the stored credentials (mechanism and iterations only, never a key).
type User struct {
	Name       string   `json:"name"`
	Mechanisms []string `json:"mechanisms"`
}

// Security is what the console's security section shows and what the page may offer: who is
// signed in, whether actions are on, the ACLs and users (each nil with a reason when the
// principal may not see them).
type Security struct {
	Principal     string `json:"principal"`
	Authenticated bool   `json:"authenticated"`
	Authorizer    bool   `json:"authorizer"`
	Write         bool   `json:"write"`
	WriteReason   string `json:"writeReason,omitempty"`
	ACLs          []ACL  `json:"acls"`
	ACLsError     string `json:"aclsError,omitempty"`
	Users         []User `json:"users"`
	UsersError    string `json:"usersError,omitempty"`
}

// ContentSecurityPolicy keeps every request of the page on the broker's own origin.
const ContentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Files serves the embedded page under /console/; the server serves /console/api/ itself
// (server/console_api.go), behind its sign-in and ACL checks.
func Files() http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	h := http.StripPrefix("/console/", http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SecureHeaders(w)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// SecureHeaders sets the headers every console response carries.
func SecureHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", ContentSecurityPolicy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

// WriteJSON answers v as JSON, never cached.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away: nothing to do
}
