//go:build !linux

package gitdir

import "os"

// statOf: outside Linux the index's stat data is not compared; callers
// hash the file.
func statOf(os.FileInfo) (statData, bool) { return statData{}, false }
