//go:build unix

package fsutil

import "syscall"

const openNonBlock = syscall.O_NONBLOCK
