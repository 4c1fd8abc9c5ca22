package server

// The web console's JSON API under /console/api/ (the page itself is internal/console): the
// overview document, the message browser, the security listing and the actions. Every call
// goes through the broker's own paths (the partition manager's consumer read, createTopic,
// deleteTopic, alterResource, the group coordinator's Commit, the authorizer's snapshot), as
// the Kafka APIs do, and is decided by the same rules:
//
//   - Sign-in: with SASL listeners the console asks for HTTP Basic credentials and checks them
//     against the broker's SASL users: PLAIN users of the listeners' JAAS configs (compared in
//     constant time) and SCRAM credentials (the password salted with the stored salt and
//     iterations must give the stored key). The principal is then User:<name>; wrong or
//     missing credentials are 401 (wrong ones after connection.failed.authentication.delay.ms,
//     as a failed SASL exchange). Without SASL listeners the principal is User:ANONYMOUS.
//   - Authorization: with an authorizer, each read and action is checked as that principal from
//     the HTTP client's address, as the matching Kafka API checks it (denials are logged like
//     the APIs'): Describe on a topic to list it, Read on a topic to browse it, Create on the
//     cluster or the topic, Delete and AlterConfigs on the topic, Read on the group and on each
//     topic to reset offsets, Describe on the group to list it, Describe on the cluster to list
//     ACLs and users. A refusal is 403 with the missing right named.
//   - Actions (POST, DELETE) are off without SASL users unless spool.console.write=true (403
//     with that hint). They need the X-Spool-Console header, which a cross-site form cannot
//     send and a cross-origin script cannot send without a CORS preflight the broker never
//     allows, and an Origin, when the browser sends one, equal to the page's own (CSRF: Basic
//     credentials are sent by the browser on its own).
//   - Bad input is 400 with the reason, an unknown topic, partition or group 404, a partition
//     or group that another broker serves 409; nothing panics (each handler also recovers, as
//     net/http would, but answering 500).
//
// The message browser reads like a read_committed consumer by default (up to the last stable
// offset, aborted transactions' records and control batches left out) or read_uncommitted (up
// to the high watermark). A page is bounded: at most consoleMaxRecords records, consoleMaxBytes
// bytes of keys, values and headers returned, and consoleScanBytes bytes of log scanned (so a
// filter that matches nothing costs a bounded read); Next says where to go on. Batches are read
// from the segment files into one buffer per request and decoded with the shared codec
// (wire/batch, decompression bounded by the partition's limit); at most
// consoleConcurrentReads pages are read at once, so the memory the browser uses is bounded.

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/console"
	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/scram"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Bounds of one message browser page.
const (
	consoleDefaultRecords = 50
	consoleMaxRecords     = 500
	consoleMaxBytes       = 4 << 20  // keys, values and headers returned
	consoleScanBytes      = 32 << 20 // log bytes read looking for matches
	consoleReadBytes      = 1 << 20  // one partition read
	consoleMaxBatch       = 64 << 20 // a larger batch is refused rather than buffered
	consoleMaxBody        = 1 << 20  // an action's JSON body
	// consoleConcurrentReads is how many message browser pages a broker reads at once.
	consoleConcurrentReads = 2
)

// consoleHeader is the header every console action must carry (see the file comment).
const consoleHeader = "X-Spool-Console"

// consoleAPIInfo names the console in authorization denials' log lines.
var consoleAPIInfo = &wire.API{Key: -1, Name: "Console"}

// consoleUser is who a console request acts as.
type consoleUser struct {
	principal     string
	host          string
	authenticated bool // signed in with SASL credentials
}

// consoleError is an answer other than 200: an HTTP status and a message for the page.
type consoleError struct {
	status int
	msg    string
}

func (e *consoleError) Error() string { return e.msg }

func cerr(status int, format string, args ...any) error {
	return &consoleError{status: status, msg: fmt.Sprintf(format, args...)}
}

// consoleAPI serves /console/api/.
func (s *Server) consoleAPI() http.Handler {
	mux := http.NewServeMux()
	get := func(pattern string, fn func(r *http.Request, u consoleUser) (any, error)) {
		mux.HandleFunc("GET "+pattern, s.consoleHandler(false, fn))
	}
	act := func(pattern string, fn func(r *http.Request, u consoleUser) (any, error)) {
		mux.HandleFunc(pattern, s.consoleHandler(true, fn))
	}
	get("/console/api/state", s.consoleStateFor)
	get("/console/api/security", s.consoleSecurity)
	// At most consoleConcurrentReads pages are read at once, so the browser's buffers stay
	// bounded however many requests arrive; the others wait for a place.
	reads := make(chan struct{}, consoleConcurrentReads)
	get("/console/api/topics/{topic}/partitions/{partition}/records", func(r *http.Request, u consoleUser) (any, error) {
		select {
		case reads <- struct{}{}:
		case <-r.Context().Done():
			return nil, cerr(http.StatusServiceUnavailable, "gave up waiting for a place to read: %v", r.Context().Err())
		}
		defer func() { <-reads }()
		return s.consoleRecords(r, u)
	})
	act("POST /console/api/topics", s.consoleCreateTopic)
	act("DELETE /console/api/topics/{topic}", s.consoleDeleteTopic)
	act("POST /console/api/topics/{topic}/configs", s.consoleAlterConfigs)
	act("POST /console/api/groups/{group}/offsets", s.consoleResetOffsets)
	mux.HandleFunc("/console/api/", func(w http.ResponseWriter, r *http.Request) {
		console.SecureHeaders(w)
		console.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no such console API: " + r.Method + " " + r.URL.Path})
	})
	return mux
}

// consoleHandler wraps one API call: headers, sign-in, the CSRF and write checks for actions,
// and the JSON answer.
func (s *Server) consoleHandler(action bool, fn func(r *http.Request, u consoleUser) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		console.SecureHeaders(w)
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("console API panicked", "method", r.Method, "path", r.URL.Path, "panic", p)
				console.WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
			}
		}()
		u, err := s.consoleSignIn(r)
		if err == nil && action {
			err = s.consoleActionAllowed(r)
		}
		var v any
		if err == nil {
			v, err = fn(r, u)
		}
		if err != nil {
			var ce *consoleError
			if !errors.As(err, &ce) {
				ce = &consoleError{status: httpStatus(err), msg: err.Error()}
			}
			if ce.status == http.StatusUnauthorized {
				// The page signs in with a form of its own; other clients (curl) get Basic's challenge.
				scheme := "Basic"
				if r.Header.Get(consoleHeader) != "" {
					scheme = "SpoolBasic"
				}
				w.Header().Set("WWW-Authenticate", scheme+` realm="Spool console", charset="UTF-8"`)
			}
			console.WriteJSON(w, ce.status, map[string]string{"error": ce.msg})
			return
		}
		console.WriteJSON(w, http.StatusOK, v)
	}
}

// httpStatus maps a protocol error from the server's own paths to an HTTP status.
func httpStatus(err error) int {
	var we *wire.Error
	if !errors.As(err, &we) {
		return http.StatusInternalServerError
	}
	switch we {
	case wire.ErrTopicAuthorizationFailed, wire.ErrGroupAuthorizationFailed, wire.ErrClusterAuthorizationFailed:
		return http.StatusForbidden
	case wire.ErrUnknownTopicOrPartition, wire.ErrUnknownTopicId, wire.ErrGroupIdNotFound:
		return http.StatusNotFound
	case wire.ErrTopicAlreadyExists, wire.ErrNotController, wire.ErrNotLeaderOrFollower, wire.ErrNotCoordinator,
		wire.ErrNonEmptyGroup, wire.ErrRebalanceInProgress, wire.ErrUnknownMemberId:
		return http.StatusConflict
	case wire.ErrInvalidConfig, wire.ErrInvalidPartitions, wire.ErrInvalidReplicationFactor, wire.ErrInvalidTopicException,
		wire.ErrInvalidRequest, wire.ErrInvalidReplicaAssignment, wire.ErrPolicyViolation, wire.ErrInvalidGroupId:
		return http.StatusBadRequest
	case wire.ErrRequestTimedOut, wire.ErrCoordinatorNotAvailable, wire.ErrCoordinatorLoadInProgress:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// consoleSecured: the broker has SASL listeners, so the console signs people in.
func (s *Server) consoleSecured() bool {
	for _, l := range s.conf.Listeners() {
		if l.SASL() {
			return true
		}
	}
	return false
}

// consoleSignIn finds who the request acts as (see the file comment).
func (s *Server) consoleSignIn(r *http.Request) (consoleUser, error) {
	host := ""
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		host = h
	}
	u := consoleUser{principal: security.Anonymous, host: host}
	if !s.consoleSecured() {
		return u, nil
	}
	name, pass, ok := r.BasicAuth()
	if !ok {
		return u, cerr(http.StatusUnauthorized, "sign in with a SASL user of this broker (HTTP Basic)")
	}
	if !s.consolePassword(name, pass) {
		// As a failed SASL exchange: answered after connection.failed.authentication.delay.ms,
		// which slows password guessing (no lock is held while waiting).
		if d := time.Duration(s.conf.Int64("connection.failed.authentication.delay.ms")) * time.Millisecond; d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
			}
		}
		return u, cerr(http.StatusUnauthorized, "sign-in failed: unknown user or wrong password")
	}
	u.principal, u.authenticated = "User:"+name, true
	return u, nil
}

// consolePassword checks a password against the PLAIN users of every SASL listener and the
// SCRAM credentials of both mechanisms; the PLAIN comparison runs even for an unknown user.
func (s *Server) consolePassword(name, pass string) bool {
	ok := false
	for _, l := range s.conf.Listeners() {
		if !l.SASL() {
			continue
		}
		want, known := s.conf.SASL(l.Name).PlainUsers[name]
		if subtle.ConstantTimeCompare([]byte(want), []byte(pass)) == 1 && known {
			ok = true
		}
	}
	if ok || s.scram == nil {
		return ok
	}
	for _, m := range []scram.Mechanism{scram.SHA256, scram.SHA512} {
		c, found := s.scramCredential(name, m)
		if !found || c.Iterations < scram.MinIterations || c.Iterations > scram.MaxIterations {
			continue
		}
		stored, _ := m.Keys(m.SaltPassword(pass, c.Salt, c.Iterations))
		if subtle.ConstantTimeCompare(stored, c.StoredKey) == 1 {
			return true
		}
	}
	return false
}

// consoleActionAllowed is the CSRF check and the write switch of every action.
func (s *Server) consoleActionAllowed(r *http.Request) error {
	if r.Header.Get(consoleHeader) == "" {
		return cerr(http.StatusForbidden, "console actions need the %s header (a cross-site request cannot send it)", consoleHeader)
	}
	if o := r.Header.Get("Origin"); o != "" {
		ou, err := url.Parse(o)
		if err != nil || ou.Host != r.Host {
			return cerr(http.StatusForbidden, "cross-origin console action refused (Origin %q, host %q)", o, r.Host)
		}
	}
	if reason := s.consoleWriteOff(); reason != "" {
		return cerr(http.StatusForbidden, "%s", reason)
	}
	return nil
}

// consoleWriteOff is why actions are off, or "" when they are on.
func (s *Server) consoleWriteOff() string {
	if s.consoleSecured() || s.conf.Bool(config.ConsoleWrite) {
		return ""
	}
	return "console actions are off: this broker has no SASL users to sign in with; set " + config.ConsoleWrite + "=true to allow actions without authentication"
}

// consoleAllowed is the authorizer's decision for u (always true without an authorizer).
func (s *Server) consoleAllowed(u consoleUser, op security.Operation, typ security.ResourceType, name string) bool {
	return s.allowed(&request{principal: u.principal, host: u.host, api: consoleAPIInfo}, op, typ, name)
}

// consolePermits is consoleAllowed without a denial's log line, for filtering lists.
func (s *Server) consolePermits(u consoleUser, op security.Operation, typ security.ResourceType, name string) bool {
	return s.permits(&request{principal: u.principal, host: u.host, api: consoleAPIInfo}, op, typ, name)
}

func (s *Server) consoleNeed(u consoleUser, op security.Operation, typ security.ResourceType, name, what string) error {
	if s.consoleAllowed(u, op, typ, name) {
		return nil
	}
	return cerr(http.StatusForbidden, "%s refused: %s needs %s on %s %s", what, u.principal, op, typ, name)
}

// consoleStateFor is the overview document, with the topics and groups u may describe.
func (s *Server) consoleStateFor(_ *http.Request, u consoleUser) (any, error) {
	st := s.consoleState()
	if s.authz == nil {
		return st, nil
	}
	st.Topics = slices.DeleteFunc(st.Topics, func(t console.Topic) bool {
		return !s.consolePermits(u, security.OpDescribe, security.ResourceTopic, t.Name)
	})
	st.Groups = slices.DeleteFunc(st.Groups, func(g console.Group) bool {
		return !s.consolePermits(u, security.OpDescribe, security.ResourceGroup, g.ID)
	})
	for i := range st.Groups {
		st.Groups[i].Offsets = slices.DeleteFunc(st.Groups[i].Offsets, func(o console.GroupOffset) bool {
			return !s.consolePermits(u, security.OpDescribe, security.ResourceTopic, o.Topic)
		})
	}
	return st, nil
}

// consoleSecurity is who is signed in, whether actions are on, and the ACLs and users u may
// list (Describe on the cluster, as DescribeAcls and DescribeUserScramCredentials need).
func (s *Server) consoleSecurity(_ *http.Request, u consoleUser) (any, error) {
	out := console.Security{Principal: u.principal, Authenticated: u.authenticated, Authorizer: s.authz != nil,
		Write: s.consoleWriteOff() == "", WriteReason: s.consoleWriteOff(), ACLs: []console.ACL{}, Users: []console.User{}}
	describe := s.consoleAllowed(u, security.OpDescribe, security.ResourceCluster, security.ClusterName)
	switch {
	case s.authz == nil:
		out.ACLsError = "no authorizer is configured (authorizer.class.name): every request is allowed"
	case !describe:
		out.ACLsError = "listing ACLs needs Describe on the cluster"
	default:
		for _, b := range s.authz.ACLs() {
			out.ACLs = append(out.ACLs, console.ACL{ResourceType: b.Pattern.Type.String(), ResourceName: b.Pattern.Name,
				PatternType: b.Pattern.PatternType.String(), Principal: b.Entry.Principal, Host: b.Entry.Host,
				Operation: b.Entry.Operation.String(), Permission: b.Entry.Permission.String()})
		}
	}
	if !describe {
		out.UsersError = "listing users needs Describe on the cluster"
		return out, nil
	}
	users := map[string][]string{}
	for _, l := range s.conf.Listeners() {
		if !l.SASL() {
			continue
		}
		for name := range s.conf.SASL(l.Name).PlainUsers {
			if !slices.Contains(users[name], "PLAIN") {
				users[name] = append(users[name], "PLAIN")
			}
		}
	}
	if s.scram != nil {
		if creds := s.scram.creds.Load(); creds != nil {
			for name, ms := range *creds {
				for m, c := range ms {
					users[name] = append(users[name], fmt.Sprintf("%s (%d iterations)", m, c.Iterations))
				}
			}
		}
	}
	for name, ms := range users {
		slices.Sort(ms)
		out.Users = append(out.Users, console.User{Name: name, Mechanisms: ms})
	}
	slices.SortFunc(out.Users, func(a, b console.User) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// recordQuery is a parsed message browser request.
type recordQuery struct {
	from      string // beginning, end, offset or timestamp
	offset    int64
	timestamp int64
	count     int
	key       []byte // exact key, when hasKey
	hasKey    bool
	value     []byte // a substring of the value
	iso       partition.Isolation
}

func parseRecordQuery(q url.Values) (recordQuery, error) {
	rq := recordQuery{from: q.Get("from"), count: consoleDefaultRecords, iso: partition.ReadCommitted}
	intParam := func(name string, min int64) (int64, error) {
		v, err := strconv.ParseInt(q.Get(name), 10, 64)
		if err != nil || v < min {
			return 0, cerr(http.StatusBadRequest, "%s must be an integer of at least %d, not %q", name, min, q.Get(name))
		}
		return v, nil
	}
	var err error
	switch rq.from {
	case "", "beginning":
		rq.from = "beginning"
	case "end":
	case "offset":
		rq.offset, err = intParam("offset", 0)
	case "timestamp":
		rq.timestamp, err = intParam("timestamp", 0)
	default:
		return rq, cerr(http.StatusBadRequest, "from must be beginning, end, offset or timestamp, not %q", rq.from)
	}
	if err != nil {
		return rq, err
	}
	if q.Has("count") {
		n, err := intParam("count", 1)
		if err != nil {
			return rq, err
		}
		rq.count = int(min(n, consoleMaxRecords))
	}
	if q.Has("key") {
		rq.key, rq.hasKey = []byte(q.Get("key")), true
	}
	rq.value = []byte(q.Get("value"))
	switch q.Get("isolation") {
	case "", "read_committed":
	case "read_uncommitted":
		rq.iso = partition.ReadUncommitted
	default:
		return rq, cerr(http.StatusBadRequest, "isolation must be read_committed or read_uncommitted, not %q", q.Get("isolation"))
	}
	return rq, nil
}

// consoleRecords is the message browser (see the file comment).
func (s *Server) consoleRecords(r *http.Request, u consoleUser) (any, error) {
	topic := r.PathValue("topic")
	index, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil || index < 0 {
		return nil, cerr(http.StatusBadRequest, "partition must be a partition number, not %q", r.PathValue("partition"))
	}
	rq, err := parseRecordQuery(r.URL.Query())
	if err != nil {
		return nil, err
	}
	if err := s.consoleNeed(u, security.OpRead, security.ResourceTopic, topic, "browsing"); err != nil {
		return nil, err
	}
	part, err := s.leaderPart(topic, int32(index))
	if err != nil {
		return nil, err
	}
	return readConsoleRecords(part, rq)
}

// readConsoleRecords reads one bounded page of records of part.
func readConsoleRecords(part *partition.Partition, rq recordQuery) (*console.Records, error) {
	o := part.Offsets()
	limit := o.HighWatermark
	out := &console.Records{Topic: part.Topic, Partition: part.Index, Isolation: "read_uncommitted", Records: []console.Record{},
		LogStart: o.LogStart, HighWatermark: o.HighWatermark, LastStable: o.LastStable}
	if rq.iso == partition.ReadCommitted {
		limit, out.Isolation = o.LastStable, "read_committed"
	}
	start := o.LogStart
	switch rq.from {
	case "end":
		start = max(o.LogStart, limit-int64(rq.count))
	case "offset":
		start = min(max(rq.offset, o.LogStart), limit)
	case "timestamp":
		off, _, ok, err := part.OffsetForTimestamp(rq.timestamp)
		if err != nil {
			return nil, fmt.Errorf("finding timestamp %d in %s-%d: %w", rq.timestamp, part.Topic, part.Index, err)
		}
		start = limit
		if ok {
			start = max(off, o.LogStart)
		}
	}
	out.Start, out.Next = start, start
	var aborted []partition.AbortedTxn
	if rq.iso == partition.ReadCommitted && start < limit {
		aborted = part.AbortedTransactions(start, limit)
	}
	var (
		buf      []byte
		it       batch.Iterator
		returned int
		off      = start
	)
	maxBatch := int(part.MaxUncompressedBatchBytes())
scan:
	for off < limit && out.Scanned < consoleScanBytes {
		res, ro, err := part.Read(off, consoleReadBytes, rq.iso, partition.Consumer)
		if err != nil {
			return nil, err
		}
		limit = min(limit, readLimit(ro, rq.iso))
		if res.Size == 0 {
			res.Release()
			break
		}
		if res.Size > consoleMaxBatch {
			res.Release()
			return nil, fmt.Errorf("a batch of %s-%d at offset %d is %d bytes, more than the console reads (%d)", part.Topic, part.Index, off, res.Size, consoleMaxBatch)
		}
		buf = slices.Grow(buf[:0], int(res.Size))[:res.Size]
		pos := int64(0)
		for _, ch := range res.Chunks {
			if _, err := ch.File.ReadAt(buf[pos:pos+ch.Len], ch.Pos); err != nil {
				res.Release()
				return nil, fmt.Errorf("reading %s-%d at offset %d: %w", part.Topic, part.Index, off, err)
			}
			pos += ch.Len
		}
		res.Release()
		out.Scanned += res.Size
		sc := batch.NewScanner(buf)
		for sc.Next() {
			raw := batch.Raw(sc.Batch())
			if raw.BaseOffset() >= limit {
				break scan
			}
			next := raw.LastOffset() + 1
			attrs := raw.Attributes()
			if attrs.Control() || (attrs.Transactional() && abortedBatch(aborted, raw.ProducerID(), raw.BaseOffset())) {
				off = next
				continue
			}
			if err := it.Reset(sc.Batch(), maxBatch); err != nil {
				return nil, fmt.Errorf("decoding the batch of %s-%d at offset %d: %w", part.Topic, part.Index, raw.BaseOffset(), err)
			}
			for it.Next() {
				rec := it.Record()
				if rec.Offset < off || rec.Offset >= limit {
					continue
				}
				if !matches(rec, rq) {
					continue
				}
				cr := console.Record{Offset: rec.Offset, Timestamp: rec.Timestamp, Key: cloneNil(rec.Key), Value: cloneNil(rec.Value),
					Headers: make([]console.RecordHeader, 0, rec.NumHeaders)}
				size := len(rec.Key) + len(rec.Value)
				for h := rec.Headers(); h.Next(); {
					hd := h.Header()
					cr.Headers = append(cr.Headers, console.RecordHeader{Key: string(hd.Key), Value: cloneNil(hd.Value)})
					size += len(hd.Key) + len(hd.Value)
				}
				out.Records = append(out.Records, cr)
				returned += size
				if len(out.Records) >= rq.count || returned >= consoleMaxBytes {
					out.Next = rec.Offset + 1
					out.Truncated = out.Next < limit
					return out, nil
				}
			}
			if err := it.Err(); err != nil {
				return nil, fmt.Errorf("decoding the batch of %s-%d at offset %d: %w", part.Topic, part.Index, raw.BaseOffset(), err)
			}
			off = next
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("scanning %s-%d at offset %d: %w", part.Topic, part.Index, off, err)
		}
	}
	out.Next = min(off, limit)
	out.Truncated = out.Next < limit
	return out, nil
}

// readLimit is how far a consumer with iso may read by o.
func readLimit(o partition.Offsets, iso partition.Isolation) int64 {
	if iso == partition.ReadCommitted {
		return o.LastStable
	}
	return o.HighWatermark
}

// abortedBatch: the transactional batch of producer pid at base belongs to an aborted
// transaction (from its first offset up to its abort marker).
func abortedBatch(aborted []partition.AbortedTxn, pid, base int64) bool {
	for _, a := range aborted {
		if a.ProducerID == pid && a.FirstOffset <= base && base < a.LastOffset {
			return true
		}
	}
	return false
}

// matches applies the browser's filters: the exact key, and a text the value contains.
func matches(rec batch.Record, rq recordQuery) bool {
	if rq.hasKey && (rec.Key == nil || !bytes.Equal(rec.Key, rq.key)) {
		return false
	}
	return len(rq.value) == 0 || bytes.Contains(rec.Value, rq.value)
}

func cloneNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// decodeBody reads an action's JSON body into v, refusing unknown fields and bodies over
// consoleMaxBody.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, consoleMaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return cerr(http.StatusBadRequest, "the request body is not the JSON expected: %v", err)
	}
	return nil
}

// consoleContext bounds an action as the Kafka APIs' request timeouts do.
func consoleContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 30*time.Second)
}

// consoleCreateTopic creates a topic: {"name", "partitions", "replicationFactor", "configs"}
// (partitions and replication factor 0 or absent: the broker's defaults).
func (s *Server) consoleCreateTopic(r *http.Request, u consoleUser) (any, error) {
	var body struct {
		Name              string            `json:"name"`
		Partitions        int32             `json:"partitions"`
		ReplicationFactor int16             `json:"replicationFactor"`
		Configs           map[string]string `json:"configs"`
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.Name == "" {
		return nil, cerr(http.StatusBadRequest, "a topic needs a name")
	}
	if !s.consoleAllowed(u, security.OpCreate, security.ResourceCluster, security.ClusterName) &&
		!s.consoleAllowed(u, security.OpCreate, security.ResourceTopic, body.Name) {
		return nil, cerr(http.StatusForbidden, "creating topic %s refused: %s needs Create on the cluster or the topic", body.Name, u.principal)
	}
	partitions, rf := body.Partitions, body.ReplicationFactor
	if partitions <= 0 {
		partitions = s.cfg.numPartitions
	}
	if rf <= 0 {
		rf = s.cfg.replication
	}
	if body.Configs == nil {
		body.Configs = map[string]string{}
	}
	ctx, cancel := consoleContext(r)
	defer cancel()
	t, err := s.createTopic(ctx, body.Name, partitions, rf, body.Configs, false)
	if err != nil {
		return nil, err
	}
	s.log.Info("topic created through the console", "topic", t.Name, "principal", u.principal, "host", u.host)
	return map[string]any{"name": t.Name, "partitions": len(t.Partitions), "replicationFactor": rf}, nil
}

// consoleDeleteTopic deletes a topic (Delete on it); internal topics are refused.
func (s *Server) consoleDeleteTopic(r *http.Request, u consoleUser) (any, error) {
	name := r.PathValue("topic")
	if err := s.consoleNeed(u, security.OpDelete, security.ResourceTopic, name, "deleting topic "+name); err != nil {
		return nil, err
	}
	if t, ok := s.md.Topic(name); ok && t.Internal {
		return nil, cerr(http.StatusBadRequest, "%s is an internal topic: the console does not delete it", name)
	}
	ctx, cancel := consoleContext(r)
	defer cancel()
	if _, err := s.deleteTopic(ctx, name); err != nil {
		return nil, err
	}
	s.log.Info("topic deleted through the console", "topic", name, "principal", u.principal, "host", u.host)
	return map[string]string{"deleted": name}, nil
}

// consoleAlterConfigs changes a topic's overrides as IncrementalAlterConfigs does: {"set":
// {name: value}, "delete": [name]} (delete: back to the broker default), all or nothing.
func (s *Server) consoleAlterConfigs(r *http.Request, u consoleUser) (any, error) {
	name := r.PathValue("topic")
	var body struct {
		Set    map[string]string `json:"set"`
		Delete []string          `json:"delete"`
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if err := s.consoleNeed(u, security.OpAlterConfigs, security.ResourceTopic, name, "changing the configs of "+name); err != nil {
		return nil, err
	}
	if len(body.Set)+len(body.Delete) == 0 {
		return nil, cerr(http.StatusBadRequest, "nothing to change: give set or delete")
	}
	res := wire.IncrementalAlterConfigsRequestAlterConfigsResource{ResourceType: resourceTopic, ResourceName: name}
	for k, v := range body.Set {
		res.Configs = append(res.Configs, wire.IncrementalAlterConfigsRequestAlterableConfig{Name: k, ConfigOperation: opSet, Value: &v})
	}
	for _, k := range body.Delete {
		res.Configs = append(res.Configs, wire.IncrementalAlterConfigsRequestAlterableConfig{Name: k, ConfigOperation: opDelete})
	}
	ctx, cancel := consoleContext(r)
	defer cancel()
	if err := s.alterResource(ctx, res, false); err != nil {
		return nil, err
	}
	t, _ := s.md.Topic(name)
	return map[string]any{"topic": name, "configs": t.Configs}, nil
}

// consoleOffset is one partition of a reset: the offset before and after.
type consoleOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Previous  int64  `json:"previous"` // -1: none committed
	Offset    int64  `json:"offset"`
	Error     string `json:"error,omitempty"`
}

// consoleResetOffsets resets a group's committed offsets as kafka-consumer-groups.sh
// --reset-offsets --execute does: {"to": "earliest"|"latest"|"timestamp"|"offset",
// "timestamp": ms, "offset": n, "topics": [names]} for every partition of the topics given,
// else for every partition the group has an offset for. Refused unless the group is Empty (or
// unknown); an offset is clamped into [log start, high watermark], a timestamp after the last
// record gives the high watermark, as the tool does.
func (s *Server) consoleResetOffsets(r *http.Request, u consoleUser) (any, error) {
	gid := r.PathValue("group")
	var body struct {
		To        string   `json:"to"`
		Timestamp int64    `json:"timestamp"`
		Offset    int64    `json:"offset"`
		Topics    []string `json:"topics"`
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	switch body.To {
	case "earliest", "latest", "timestamp", "offset":
	default:
		return nil, cerr(http.StatusBadRequest, "to must be earliest, latest, timestamp or offset, not %q", body.To)
	}
	if err := s.consoleNeed(u, security.OpRead, security.ResourceGroup, gid, "resetting the offsets of group "+gid); err != nil {
		return nil, err
	}
	ctx, cancel := consoleContext(r)
	defer cancel()
	if err := s.ensureOffsetsTopic(ctx); err != nil {
		return nil, err
	}
	d := s.groups.Describe(gid)
	if d.Err != 0 {
		return nil, cerr(http.StatusConflict, "group %s is not coordinated by this broker (%s): open its coordinator's console", gid, wire.ErrorForCode(d.Err))
	}
	if d.State != group.Empty.String() && d.State != group.Dead.String() {
		return nil, cerr(http.StatusConflict, "group %s is %s with %d members: stop its consumers first (offsets are reset only in an Empty group, as kafka-consumer-groups.sh requires)",
			gid, d.State, len(d.Members))
	}
	previous := map[topicPartition]int64{}
	fetched, code := s.groups.FetchOffsets(gid, nil, true)
	if code != 0 {
		return nil, cerr(http.StatusConflict, "reading the offsets of group %s: %s", gid, wire.ErrorForCode(code))
	}
	for _, f := range fetched {
		previous[topicPartition{f.Topic, f.Partition}] = f.Offset
	}
	var targets []topicPartition
	if len(body.Topics) > 0 {
		for _, name := range body.Topics {
			t, ok := s.md.Topic(name)
			if !ok {
				return nil, cerr(http.StatusNotFound, "no topic %s", name)
			}
			for _, p := range t.Partitions {
				targets = append(targets, topicPartition{name, p.Index})
			}
		}
	} else {
		for tp := range previous {
			targets = append(targets, tp)
		}
	}
	if len(targets) == 0 {
		return nil, cerr(http.StatusBadRequest, "group %s has no committed offsets: name the topics to reset", gid)
	}
	slices.SortFunc(targets, func(a, b topicPartition) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	out := make([]consoleOffset, 0, len(targets))
	commits := make([]group.Commit, 0, len(targets))
	for _, tp := range targets {
		if err := s.consoleNeed(u, security.OpRead, security.ResourceTopic, tp.topic, "resetting offsets of topic "+tp.topic); err != nil {
			return nil, err
		}
		prev, ok := previous[tp]
		if !ok {
			prev = -1
		}
		off, err := s.consoleResetTarget(tp, body.To, body.Timestamp, body.Offset)
		if err != nil {
			return nil, err
		}
		out = append(out, consoleOffset{Topic: tp.topic, Partition: tp.partition, Previous: prev, Offset: off})
		commits = append(commits, group.Commit{Topic: tp.topic, Partition: tp.partition, Offset: off, LeaderEpoch: -1})
	}
	done := make(chan []int16, 1)
	s.groups.Commit(group.CommitRequest{GroupID: gid, Generation: -1, Retention: -1, Commits: commits}, func(codes []int16) { done <- codes })
	var codes []int16
	select {
	case codes = <-done:
	case <-ctx.Done():
		return nil, cerr(http.StatusServiceUnavailable, "committing the offsets of group %s: %v", gid, ctx.Err())
	}
	failed := 0
	for i, c := range codes {
		if c != 0 {
			out[i].Error = wire.ErrorForCode(c).Error()
			failed++
		}
	}
	if failed > 0 {
		// The group gained a member meanwhile (UNKNOWN_MEMBER_ID) or the coordinator moved.
		return nil, cerr(http.StatusConflict, "the coordinator refused %d of %d offsets of group %s: %s", failed, len(out), gid, firstError(out))
	}
	s.log.Info("group offsets reset through the console", "group", gid, "to", body.To, "partitions", len(out), "principal", u.principal, "host", u.host)
	return map[string]any{"group": gid, "offsets": out}, nil
}

func firstError(os []consoleOffset) string {
	for _, o := range os {
		if o.Error != "" {
			return fmt.Sprintf("%s-%d: %s", o.Topic, o.Partition, o.Error)
		}
	}
	return ""
}

// consoleResetTarget is the offset a reset gives tp (see consoleResetOffsets).
func (s *Server) consoleResetTarget(tp topicPartition, to string, ts, offset int64) (int64, error) {
	part, err := s.leaderPart(tp.topic, tp.partition)
	if err != nil {
		return 0, err
	}
	o := part.Offsets()
	switch to {
	case "earliest":
		return o.LogStart, nil
	case "latest":
		return o.HighWatermark, nil
	case "timestamp":
		off, _, ok, err := part.OffsetForTimestamp(ts)
		if err != nil {
			return 0, fmt.Errorf("finding timestamp %d in %s-%d: %w", ts, tp.topic, tp.partition, err)
		}
		if !ok {
			return o.HighWatermark, nil
		}
		return max(off, o.LogStart), nil
	}
	return min(max(offset, o.LogStart), o.HighWatermark), nil
}
