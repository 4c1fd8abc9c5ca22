package main

/*
#include "spool_impl.h"
*/
import "C"

import (
	"errors"
	"sync"

	spool "github.com/spoolmq/spool/sdk-go"
)

// conf is the Go side of a spool_conf_t: the SDK's key table, behind a lock because every
// handle may be used from several threads.
type conf struct {
	mu sync.Mutex
	c  spool.Conf
}

func (c *conf) snapshot() *spool.Conf {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.Clone()
}

//export spoolgo_conf_new
func spoolgo_conf_new() C.uintptr_t { return newHandle(&conf{}) }

//export spoolgo_conf_dup
func spoolgo_conf_dup(h C.uintptr_t) C.uintptr_t {
	c := value[conf](h)
	if c == nil {
		return newHandle(&conf{})
	}
	return newHandle(&conf{c: *c.snapshot()})
}

//export spoolgo_conf_set
func spoolgo_conf_set(h C.uintptr_t, key, val *C.char, errstr *C.char, size C.size_t) C.int {
	c := value[conf](h)
	if c == nil {
		setErrstr(errstr, size, "spool_conf_set: not a configuration")
		return C.SPOOL_CONF_INVALID
	}
	c.mu.Lock()
	err := c.c.Set(C.GoString(key), C.GoString(val))
	c.mu.Unlock()
	switch {
	case err == nil:
		return C.SPOOL_CONF_OK
	case errors.Is(err, spool.ErrUnknownConfKey):
		setErrstr(errstr, size, err.Error())
		return C.SPOOL_CONF_UNKNOWN
	}
	setErrstr(errstr, size, err.Error())
	return C.SPOOL_CONF_INVALID
}

//export spoolgo_conf_get
func spoolgo_conf_get(h C.uintptr_t, key *C.char, dest *C.char, size *C.size_t) C.int {
	c := value[conf](h)
	if c == nil {
		return C.SPOOL_CONF_INVALID
	}
	c.mu.Lock()
	v, ok := c.c.Get(C.GoString(key))
	c.mu.Unlock()
	if !ok {
		return C.SPOOL_CONF_UNKNOWN
	}
	if dest != nil && *size > 0 {
		setErrstr(dest, *size, v)
	}
	*size = C.size_t(len(v) + 1)
	return C.SPOOL_CONF_OK
}

// libDefaults are libspool's own defaults for keys whose SDK default suits a Go program
// better than a C one; checkedConf applies them to keys the caller did not set. They bound
// what a C program's handles hold, so that its peak memory stays at or below librdkafka's
// (see README.md, "Performance against librdkafka"): each record a producer queues costs 32
// bytes besides its own encoded in its batch (the SDK's trackedRec; the Go heap holds up to
// twice its live data between collections), and a consumer holds what it fetched ahead,
// max.partition.fetch.bytes per partition several times over.
//
// A producer's throughput with acks=all is what it has in flight per fsync of the broker, so
// its queue is split into batches of a tenth of it (batch.num.messages), which travel several
// at a time (up to max.in.flight per connection), rather than a few full-sized batches that
// leave nothing to send while they wait for their acknowledgement. Measured on our 2-core VMs
// with 100 B records to 6 partitions: 40000 queued in batches of 4000 produce 1.1 times as
// fast as librdkafka's 100000 in batches of 10000, at 0.6 times its peak RSS (100000 here:
// 1.1 times as fast at 1.4 times its RSS); 1 KiB records are bounded by batch.size first.
var libDefaults = [][2]string{
	{"queue.buffering.max.messages", "40000"},
	{"batch.num.messages", "4000"},
	{"max.partition.fetch.bytes", "131072"},
}

// checkedConf returns a copy of the configuration behind h after checking its keys
// together, or writes why not to errstr.
func checkedConf(h C.uintptr_t, what string, errstr *C.char, size C.size_t) *spool.Conf {
	c := value[conf](h)
	if c == nil {
		setErrstr(errstr, size, what+": not a configuration")
		return nil
	}
	sc := c.snapshot()
	for _, kv := range libDefaults {
		if _, set := sc.Get(kv[0]); !set {
			if err := sc.Set(kv[0], kv[1]); err != nil {
				panic("libspool: bad default " + kv[0] + ": " + err.Error())
			}
		}
	}
	if err := sc.Check(); err != nil {
		setErrstr(errstr, size, what+": "+err.Error())
		return nil
	}
	// The C ABI has no spool_init_transactions yet: a transactional producer made here could
	// never send a record, so the key is refused at creation rather than on every record.
	if id, set := sc.Get("transactional.id"); set && id != "" {
		setErrstr(errstr, size, what+": transactional.id: transactions are not available through libspool yet (the Go SDK has them)")
		return nil
	}
	return sc
}
