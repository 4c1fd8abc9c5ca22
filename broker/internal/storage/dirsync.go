package storage

import (
	"sync"
)

// Directory durability, deferred (issue 28). Creating a log's files, renaming a metadata file
// into place and creating a partition directory are made durable by fsyncing the directory
// that holds them. Nothing needs them durable before the log acknowledges data: an empty log
// lost in a crash is created again by whoever assigned it, and a metadata file renamed into
// place was fsynced itself first, so a crash leaves the old version or the new one, whole.
// So a log does not fsync its directory when it changes; it marks it (Log.dirDirty), and its
// next flush fsyncs the directory, and its parent's entry for it (dirSyncer), before the
// durable offset moves. A broker taking ten thousand new replicas thus creates them without
// an fsync each, and their first flushes share the parent's fsync.
//
// Lock order: a dirSyncer's mu is a leaf; syncDirs runs under the log's flushSem.

// dirSyncer is group commit for one directory's fsync: a change to the directory takes a
// generation (changed), and syncAfter(gen) returns once an fsync that started after that
// change has completed, running one unless one is running or already ran.
type dirSyncer struct {
	dir string

	mu      sync.Mutex
	gen     uint64        // changes taken
	synced  uint64        // every change up to this one is durable
	running chan struct{} // closed when the running fsync ends; nil when none runs
	fsyncs  int64         // fsyncs run (tests)
}

// changed records a change made to the directory (after it was made) and returns its
// generation for syncAfter.
func (d *dirSyncer) changed() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	return d.gen
}

// syncAfter makes the change of generation gen durable: it returns at once when an fsync that
// covered it completed, waits for the running one and checks again, or runs one itself.
func (d *dirSyncer) syncAfter(gen uint64) error {
	d.mu.Lock()
	for d.synced < gen && d.running != nil {
		ch := d.running
		d.mu.Unlock()
		<-ch
		d.mu.Lock()
	}
	if d.synced >= gen {
		d.mu.Unlock()
		return nil
	}
	target := d.gen // every change taken so far was made before this fsync starts
	ch := make(chan struct{})
	d.running = ch
	d.mu.Unlock()
	err := syncDir(d.dir)
	d.mu.Lock()
	d.fsyncs++
	if err == nil {
		d.synced = max(d.synced, target)
	}
	d.running = nil
	close(ch)
	d.mu.Unlock()
	return err
}

// syncDirs makes the log's directory changes durable: its own directory if it changed, and
// its entry in the Manager's data directory if that is new. The caller holds flushSem; a
// change made meanwhile (an epoch checkpoint renamed under appendMu) marks the directory
// again after the rename, so it is either covered here or by the next flush.
func (l *Log) syncDirs() error {
	if l.dirDirty.Swap(false) {
		if err := syncDir(l.dir); err != nil {
			l.dirDirty.Store(true)
			return err
		}
	}
	if gen := l.parentGen.Load(); gen != 0 {
		if err := l.parent.syncAfter(gen); err != nil {
			return err
		}
		l.parentGen.CompareAndSwap(gen, 0)
	}
	return nil
}
