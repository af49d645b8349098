package main

import (
	"io"
	"testing"
)

// BenchmarkRunVersion is the in-process cost of a bl call that does no IO:
// building the command line parser, parsing, and running version.
func BenchmarkRunVersion(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if code := run([]string{"version"}, io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}
