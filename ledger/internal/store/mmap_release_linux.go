//go:build linux

package store

import (
	"os"
	"syscall"
	"unsafe"
)

// releaseMapped tells the kernel that the mapped pages wholly inside data
// will not be needed soon: they leave the process's resident memory (a
// later read maps them in again from the page cache). A read of a whole
// large file in order (fill) keeps its footprint small this way.
func releaseMapped(data []byte) {
	page := uintptr(os.Getpagesize())
	if len(data) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(&data[0]))
	first := (start + page - 1) &^ (page - 1)
	last := (start + uintptr(len(data))) &^ (page - 1)
	if last <= first {
		return
	}
	_ = syscall.Madvise(data[first-start:last-start], syscall.MADV_DONTNEED)
}
