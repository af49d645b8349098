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
// into a new backlog as bl import does: read, plan, check the whole
// plan, write it in batches.
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
		items, rep, err := importer.ReadBeads("issues.jsonl", bytes.NewReader(src.Bytes()), importer.ReadOptions{IncludeEphemeral: true})
		if err != nil || len(items) != 2000 {
			b.Fatalf("%d items, %v", len(items), err)
		}
		acts, err := importer.Plan(items, nil, importer.Options{Source: "beads"}, rep)
		if err != nil {
			b.Fatal(err)
		}
		if err := importer.Write(context.Background(), bl, ledger.Mutation{Actor: "bench"}, acts, time.Minute, false); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		bl.Close()
		b.StartTimer()
	}
}
