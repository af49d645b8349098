//go:build unix

package watch

import (
	"os"
	"syscall"
)

func inode(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Ino)
	}
	return 0
}
