package server

import (
	"syscall"
	"unsafe"
)

// peekByte reads one byte of fd without consuming it, without blocking.
func peekByte(fd uintptr, b *[1]byte) (int, error) {
	n, _, e := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}
