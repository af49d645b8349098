package importer_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bl-backlog/bl/internal/importer"
)

// TestScanBeadsSameAsRead: a beads file scanned as a stream gives, item by
// item, the items and the report of reading it whole, for both real files.
func TestScanBeadsSameAsRead(t *testing.T) {
	for _, name := range []string{"beads/issues-704.jsonl.gz", "beads/issues-2393.jsonl.gz"} {
		data := fixture(t, name)
		opts := importer.ReadOptions{IncludeEphemeral: true}
		items, rep, err := importer.ReadBeads(name, bytes.NewReader(data), opts)
		if err != nil {
			t.Fatal(err)
		}
		s, srep, err := importer.ScanBeads(name, bytes.NewReader(data), int64(len(data)), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Items) != len(items) || !reflect.DeepEqual(srep.Kept.Lines(), rep.Kept.Lines()) || !reflect.DeepEqual(srep.LeftOut.Lines(), rep.LeftOut.Lines()) {
			t.Fatalf("%s: %d items scanned, %d read; reports\n%v\n%v", name, len(s.Items), len(items), srep, rep)
		}
		for i := range items {
			it, err := s.Item(i)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(it, items[i]) || !reflect.DeepEqual(s.Items[i], items[i].Ref()) {
				t.Fatalf("%s: item %d differs:\n%+v\n%+v", name, i, it, items[i])
			}
		}
	}
}

// TestScanBeadsFileChanged: a file changed between the scan and the read
// of an item is named, not imported half old, half new.
func TestScanBeadsFileChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "issues.jsonl")
	in := "{\"id\":\"a1\",\"title\":\"one\"}\n{\"id\":\"a2\",\"title\":\"two\"}\n"
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, _, err := importer.ScanBeads(path, f, int64(len(in)), importer.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace([]byte(in), []byte("two"), []byte("TWO"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Item(0); err != nil {
		t.Fatalf("an unchanged line: %v", err)
	}
	var ie *importer.Error
	if _, err := s.Item(1); !errors.As(err, &ie) || ie.Line != 2 {
		t.Fatalf("a changed line: %v", err)
	}
}
