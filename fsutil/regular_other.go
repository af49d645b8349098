//go:build !unix

package fsutil

const openNonBlock = 0
