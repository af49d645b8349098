package wire

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// The software CRC-32C gives the standard library's sums, for every
// length and split.
func TestCRCSlicingMatchesStdlib(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	for n := 0; n <= 300; n++ {
		p := buf[r.IntN(len(buf)-n):len(buf)][:n]
		want := crc32.Checksum(p, tab)
		if got := crcSlicing8(0, p); got != want {
			t.Fatalf("len %d: %08x, want %08x", n, got, want)
		}
		k := r.IntN(n + 1)
		if got := crcSlicing8(crcSlicing8(0, p[:k]), p[k:]); got != want {
			t.Fatalf("len %d split %d: %08x, want %08x", n, k, got, want)
		}
		if got := Checksum(p); got != want {
			t.Fatalf("Checksum len %d: %08x, want %08x", n, got, want)
		}
	}
}

func FuzzCRC(f *testing.F) {
	f.Add([]byte("{\"v\":1}"), 3)
	tab := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, p []byte, k int) {
		want := crc32.Checksum(p, tab)
		if got := crcSlicing8(0, p); got != want {
			t.Fatalf("%08x, want %08x", got, want)
		}
		if k >= 0 && k <= len(p) {
			if got := UpdateChecksum(UpdateChecksum(0, p[:k]), p[k:]); got != want {
				t.Fatalf("split: %08x, want %08x", got, want)
			}
		}
	})
}
