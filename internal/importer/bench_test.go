package importer_test

import (
	"bufio"
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/importer"
	"github.com/bl-backlog/bl/ledger"
)

// BenchmarkImportBeads2000 imports the first 2,000 issues of beads' own
// 2,393-issue file (tombstones and ephemeral ones kept, so 2,000 cards)
// into a new backlog as bl import does: scan, check the whole plan,
// plan and write it batch by batch, compact once.
func BenchmarkImportBeads2000(b *testing.B) {
	var src bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(fixture(b, "beads/issues-2393.jsonl.gz")))
	sc.Buffer(nil, 64<<20)
	for n := 0; n < 2000 && sc.Scan(); {
		if !bytes.Contains(sc.Bytes(), []byte(`"status":"tombstone"`)) {
			src.Write(sc.Bytes())
			src.WriteByte('\n')
			n++
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		if _, err := ledger.Init(dir); err != nil {
			b.Fatal(err)
		}
		bl, err := ledger.Open(dir, ledger.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s, rep, err := importer.ScanBeads("issues.jsonl", bytes.NewReader(src.Bytes()), int64(src.Len()), importer.ReadOptions{IncludeEphemeral: true})
		if err != nil || len(s.Items) != 2000 {
			b.Fatalf("%v", err)
		}
		p, err := importer.PlannerFor(bl, s.Items, importer.Options{Source: "beads"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := importer.Import(context.Background(), bl, ledger.Mutation{Actor: "bench"}, s, p, rep, time.Minute, false, nil); err != nil {
			b.Fatal(err)
		}
		if err := bl.CompactDue(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		bl.Close()
		b.StartTimer()
	}
}
