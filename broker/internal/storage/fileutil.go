package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

// This file holds the package's few system-level helpers: crash-safe metadata writes, directory
// fsync, memory maps for the indexes, and the data-dir lock. Unix only (Linux in production).

// syncDir fsyncs a directory so that file creations, renames and deletions in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening directory %s to fsync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// writeFileAtomic replaces path with data: temporary file, fsync, rename, fsync of the
// directory. After a crash the file holds the old or the new content, never a mix.
func writeFileAtomic(path string, data []byte) error {
	if err := replaceFile(path, data); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// replaceFile is writeFileAtomic without the directory's fsync: after a crash the file holds
// the old content or the new, whole; which one is known only once the directory is fsynced
// (the caller arranges it, see dirsync.go).
func replaceFile(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("closing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("renaming %s into place: %w", tmp, err)
	}
	return nil
}

// fdatasync forces f's data (and the size, which data integrity needs) to disk.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return f.Sync()
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), serr)
	}
	return nil
}

// mmapFile maps size bytes of f, read-write when writable, shared with the page cache.
func mmapFile(f *os.File, size int, writable bool) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	prot := syscall.PROT_READ
	if writable {
		prot |= syscall.PROT_WRITE
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var b []byte
	var merr error
	if err := rc.Control(func(fd uintptr) {
		b, merr = syscall.Mmap(int(fd), 0, size, prot, syscall.MAP_SHARED)
	}); err != nil {
		return nil, err
	}
	if merr != nil {
		return nil, fmt.Errorf("mmap %s (%d bytes): %w", f.Name(), size, merr)
	}
	return b, nil
}

func munmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := syscall.Munmap(b); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}

// msync flushes a shared writable mapping to its file.
func msync(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, _, errno := syscall.Syscall(syscall.SYS_MSYNC, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), syscall.MS_SYNC)
	if errno != 0 {
		return fmt.Errorf("msync: %w", errno)
	}
	return nil
}

// lockDir takes an exclusive advisory lock on dir/.lock, so that two brokers never share a data
// directory. The lock lasts until the returned file is closed (or the process dies).
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		f.Close()
		return nil, err
	}
	if lerr != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s (is another broker using this data directory?): %w", path, lerr)
	}
	return f, nil
}

// removeIfExists removes path, ignoring its absence.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}
